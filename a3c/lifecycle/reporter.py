"""What a run tells a person, in one place. The CLI gives the trainer a ``ConsoleReporter``
(the start line, progress lines, restarts, rollbacks on the console); the Python API's
default ``Reporter`` keeps the information to itself and still writes warnings (a worker's
traceback, a restart) to stderr, since those need a person whichever way the run started."""
from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class Reporter:
    """Quiet: ``info`` says nothing, ``warning`` goes to stderr."""

    def info(self, text: str) -> None:
        """A line of the run's story: its start, progress, an ending under way."""

    def warning(self, text: str) -> None:
        """Something went wrong and the run copes: a worker's crash, a restart, a rollback."""
        print(text, file=sys.stderr, flush=True)


class ConsoleReporter(Reporter):
    """``info`` on stdout as well: what ``run_a3c.py`` prints."""

    def info(self, text: str) -> None:
        print(text, flush=True)


def pretty_print(result: Mapping[str, Any], indent: int = 0) -> str:
    """A ``train()`` result as YAML-like text, RLlib's way: keys sorted, a nested dict
    indented under its key, floats to six significant digits, None as null."""
    lines = []
    for key in sorted(result):
        value = result[key]
        if isinstance(value, Mapping) and value:
            lines.append(f"{' ' * indent}{key}:")
            lines.append(pretty_print(value, indent + 2))
        else:
            lines.append(f"{' ' * indent}{key}: {_shown(value)}")
    return "\n".join(lines)


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, Mapping):
        return "{}"
    return str(value)
