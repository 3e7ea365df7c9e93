"""A3C on torch.multiprocessing: ``Trainer`` is one run (train / save / restore / act),
``Callback`` hooks into it, a ``ConsoleReporter`` prints what it does, ``register_env``
makes a user's env creator an env id and ``register_model`` a user's net a ``custom_model``; the rest is its
config (``config``), algorithms (``algos``), transports (``transport``) and life cycle
(``lifecycle``).

The names load on first use: spawned workers import this package too, and should not pay
for the learner's imports (tensorboardX, the optimizer).

``a3c.lib`` holds the parts every algorithm shares. The repository keeps them in ``lib/`` at
its top; installed, they are the folder ``a3c/lib`` (setup.cfg's ``package_dir``), so that no
module named ``lib`` lands at the top of site-packages. Run from a checkout (the repository
or a copy of it, installed or not), ``a3c.lib`` is the ``lib/`` beside this package.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

_EXPORTS = {"Trainer": "a3c.lifecycle.trainer", "RunEnded": "a3c.lifecycle.trainer",
            "LearningNotAchieved": "a3c.lifecycle.results",
            "Callback": "a3c.lifecycle.callbacks", "ConfigError": "a3c.config",
            "Reporter": "a3c.lifecycle.reporter", "ConsoleReporter": "a3c.lifecycle.reporter",
            "register_env": "a3c.lib.user_envs", "EnvContext": "a3c.lib.user_envs",
            "register_model": "a3c.lib.user_models", "WorkerCallError": "a3c.transport.worker_calls",
            "pretty_print": "a3c.lifecycle.reporter"}
__all__ = ["Callback", "ConfigError", "ConsoleReporter", "EnvContext", "LearningNotAchieved", "Reporter",
           "RunEnded", "Trainer", "WorkerCallError", "pretty_print", "register_env", "register_model"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'a3c' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def _checkout_lib() -> None:
    """Make ``a3c.lib`` the checkout's ``lib/`` where this package has no ``lib`` of its own."""
    here = Path(__file__).resolve().parent
    beside = here.parent / "lib"
    if (here / "lib").is_dir() or not (beside / "__init__.py").is_file():
        return
    spec = importlib.util.spec_from_file_location(f"{__name__}.lib", beside / "__init__.py",
                                                  submodule_search_locations=[str(beside)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    globals()["lib"] = module


_checkout_lib()
