"""A3C on torch.multiprocessing: ``Trainer`` is one run (train / save / restore / act),
``Callback`` hooks into it, a ``ConsoleReporter`` prints what it does, ``register_env``
makes a user's env creator an env id; the rest is its
config (``config``), algorithms (``algos``), transports (``transport``) and life cycle
(``lifecycle``).

The names load on first use: spawned workers import this package too, and should not pay
for the learner's imports (tensorboardX, the optimizer).
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"Trainer": "a3c.lifecycle.trainer", "RunEnded": "a3c.lifecycle.trainer",
            "Callback": "a3c.lifecycle.callbacks", "ConfigError": "a3c.config",
            "Reporter": "a3c.lifecycle.reporter", "ConsoleReporter": "a3c.lifecycle.reporter",
            "register_env": "lib.user_envs", "EnvContext": "lib.user_envs",
            "pretty_print": "a3c.lifecycle.reporter"}
__all__ = ["Callback", "ConfigError", "ConsoleReporter", "EnvContext", "Reporter", "RunEnded", "Trainer",
           "pretty_print", "register_env"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'a3c' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
