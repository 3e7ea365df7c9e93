"""A method descriptor the public API uses: one name, a form on the class and one on an instance."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class class_or_instance_method:
    """A method with two forms: called on the class (``Trainer.restore(path)``: a new
    trainer, the form this project had first) or on an instance (``trainer.restore(path)``:
    in place, as RLlib's)."""

    def __init__(self, on_class: Callable[..., Any], on_instance: Callable[..., Any]):
        self.on_class, self.on_instance = on_class, on_instance
        self.__doc__ = f"On the class: {on_class.__doc__}\n\nOn a trainer: {on_instance.__doc__}"

    def __get__(self, instance: Any, owner: type) -> Callable[..., Any]:
        return functools.partial(self.on_class, owner) if instance is None else functools.partial(self.on_instance, instance)
