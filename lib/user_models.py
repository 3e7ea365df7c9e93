"""Models a user registers by name, as RLlib's ``ModelCatalog.register_custom_model``:
``register_model("mine", factory)``, then ``model={"custom_model": "mine"}``. The contract is
SB3's features extractor: ``factory(observation_space, config)`` returns a torch module that
maps a batch of observations to features and says their size as ``features_dim``; each
algorithm puts its own heads on them (``a3c.lib.custom_model``).

``custom_model`` may also be ``module:name``: ``module`` is imported first (it may register
``name``), else its attribute ``name`` is the factory (a function, or a module class taking
the same two arguments). The factories reach every worker pickled by value
(``a3c.lib.registrations``).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from a3c.lib.registrations import Registry

ModelFactory = Callable[[Any, dict], Any]
"""``factory(observation_space, config)``: a torch module with ``features_dim``."""

_FACTORIES = Registry("model")


def register_model(name: str, factory: ModelFactory) -> None:
    """Make ``name`` a ``custom_model`` that ``factory`` builds; registering a name again
    replaces its factory."""
    _FACTORIES.add(name, factory)


class UnknownModel(LookupError):
    """A ``custom_model`` that names no registered model and no module's factory."""


def model_factory(name: str) -> ModelFactory:
    """The factory ``custom_model`` names: registered, or ``module:name`` (see the module's
    docstring); UnknownModel in one line otherwise."""
    if name in _FACTORIES.entries:
        return _FACTORIES.entries[name]
    module_name, _, attribute = name.rpartition(":")
    if not module_name:
        known = ", ".join(sorted(_FACTORIES.entries)) or "none in this process"
        raise UnknownModel(f"custom_model {name!r} is not registered (registered: {known}); call "
                           "a3c.register_model first, or name it as module:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownModel(f"custom_model {name!r}: {type(exc).__name__}: {exc}") from None
    if attribute in _FACTORIES.entries:
        return _FACTORIES.entries[attribute]
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise UnknownModel(f"custom_model {name!r}: {module_name} registers no model {attribute!r} "
                           "and has no factory of that name")
    return factory
