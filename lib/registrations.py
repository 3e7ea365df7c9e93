"""What a user registers by name in the learner's process (envs with ``register_env``, models
with ``register_model``) and every worker must find too. Workers are spawned processes or Ray
actors that never ran the user's script, so the pool ships every registration to them pickled
by value (cloudpickle, which gymnasium depends on): a lambda, or a class defined in
``__main__``, works there as well.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import cloudpickle

_REGISTRIES: dict[str, Registry] = {}
KIND_MODULES = {"env": "a3c.lib.user_envs", "model": "a3c.lib.user_models"}
"""The module that keeps each kind's registry (a worker imports it to install what was shipped)."""


class Registry:
    """Callables of one ``kind`` by the names a user gave them; ``on_add(name)`` runs after each."""

    def __init__(self, kind: str, on_add: Callable[[str], None] | None = None):
        self.kind = kind
        self.entries: dict[str, Callable[..., Any]] = {}
        self._on_add = on_add
        _REGISTRIES[kind] = self

    def add(self, name: str, value: Callable[..., Any]) -> None:
        """Register ``value`` as ``name``, replacing what had that name."""
        if not callable(value):
            raise TypeError(f"register_{self.kind}({name!r}, ...) needs a callable, got {type(value).__name__}")
        self.entries[name] = value
        if self._on_add is not None:
            self._on_add(name)


def shipped_registrations() -> bytes | None:
    """Every registration of every kind, pickled by value; None when there is none."""
    packed = {kind: dict(registry.entries) for kind, registry in _REGISTRIES.items() if registry.entries}
    return cloudpickle.dumps(packed) if packed else None


def install_registrations(shipped: bytes | None) -> None:
    """In a worker: register again what ``shipped_registrations`` packed in the learner."""
    if shipped is None:
        return
    for kind, entries in cloudpickle.loads(shipped).items():
        importlib.import_module(KIND_MODULES[kind])
        for name, value in entries.items():
            _REGISTRIES[kind].add(name, value)
