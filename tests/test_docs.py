"""The README's and docs' examples against the code: every flag a shown command passes is one
the command has, and every name a Python example uses (a Trainer method, a keyword, a package
export, a callback hook) exists. A rename that leaves an example behind fails here."""
from __future__ import annotations

import ast
import functools
import inspect
import re
import shlex
from pathlib import Path

import pytest

import a3c
import a3c.config
import a3c.play
import a3c.sweep
from a3c.lifecycle.callbacks import Callback
from a3c.lifecycle.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(language: str) -> list[tuple[str, str]]:
    """(page name, text) of every fenced block of ``language`` in the README and docs."""
    return [(page.name, match.group(2)) for page in PAGES
            for match in FENCED.finditer(page.read_text()) if match.group(1) == language]


@functools.cache
def command_flags() -> dict[str, set[str]]:
    """Each command's flags, from its own parser."""
    def flags(parser) -> set[str]:
        return {option for action in parser._actions for option in action.option_strings}

    train, play, sweep = (flags(module.build_parser()) for module in (a3c.config, a3c.play, a3c.sweep))
    return {"run_a3c.py": train, "a3c-train": train, "a3c": train, "play_a3c.py": play, "a3c-play": play,
            "a3c.sweep": sweep, "a3c-sweep": sweep}


@functools.cache
def shown_commands() -> list[tuple[str, str, list[str]]]:
    """(page, command name, its words) for each line of a bash block that runs one of ours."""
    found = []
    for page, text in blocks("bash"):
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            for index, word in enumerate(words):
                name = Path(word).name
                if name in command_flags() and (name.endswith(".py") or name.startswith("a3c")):
                    found.append((page, name, words[index + 1:]))
                    break
    return found


def test_the_pages_show_commands_to_check():
    # a change of fence or wording that hid every example would make the checks below vacuous
    names = {name for _, name, _ in shown_commands()}
    assert {"run_a3c.py", "play_a3c.py", "a3c.sweep"} <= names
    assert len(blocks("python")) >= 4


@pytest.mark.parametrize("page, command, words", shown_commands(),
                         ids=[f"{page}:{' '.join(words)[:40]}" for page, _, words in shown_commands()])
def test_every_flag_a_shown_command_passes_is_one_it_has(page, command, words):
    unknown = [word.split("=")[0] for word in words
               if word.startswith("--") and word.split("=")[0] not in command_flags()[command]]
    assert unknown == [], f"{page}: {command} has no {unknown}"


def names_used(tree: ast.AST) -> dict[str, set[str]]:
    """What a Python example asks of the package: attributes of ``a3c``, of ``Trainer`` and of
    a trainer object, keywords given to ``Trainer(...)`` or ``Trainer.restore(...)``, and the
    hooks its ``a3c.Callback`` subclasses define."""
    used: dict[str, set[str]] = {"a3c": set(), "Trainer": set(), "trainer": set(), "keywords": set(),
                                 "hooks": set()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("a3c", "Trainer", "trainer"):
            used[node.value.id].add(node.attr)
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("Trainer", "a3c.Trainer", "Trainer.restore"):
            used["keywords"] |= {keyword.arg for keyword in node.keywords if keyword.arg}
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base) == "a3c.Callback" for base in node.bases):
            used["hooks"] |= {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
    return used


@pytest.mark.parametrize("page, source", blocks("python"), ids=[page for page, _ in blocks("python")])
def test_every_name_a_python_example_uses_exists(page, source):
    used = names_used(ast.parse(source))
    keywords = set(a3c.config.KEYWORDS) | set(inspect.signature(Trainer).parameters) \
        | set(inspect.signature(Trainer.restore).parameters)
    missing = sorted(
        [f"a3c.{name}" for name in used["a3c"] if name not in a3c.__all__]
        + [f"Trainer.{name}" for name in used["Trainer"] | used["trainer"] if not hasattr(Trainer, name)]
        + [f"keyword {name}" for name in used["keywords"] if name not in keywords]
        + [f"hook {name}" for name in used["hooks"] if not hasattr(Callback, name)])
    assert missing == [], f"{page}: {missing}"


def test_the_checks_see_a_renamed_method_flag_and_hook():
    source = ("with a3c.Trainer(env='x', learning_rate=1) as trainer:\n    trainer.fit()\n"
              "class C(a3c.Callback):\n    def on_episode_finish(self): pass\n")
    used = names_used(ast.parse(source))
    assert used["trainer"] == {"fit"} and used["keywords"] == {"env", "learning_rate"}
    assert used["hooks"] == {"on_episode_finish"} and used["a3c"] == {"Trainer", "Callback"}
    assert "--learning-rate" not in command_flags()["run_a3c.py"] and "--lr" in command_flags()["a3c-train"]
