"""Envs a user registers by name with a creator, as RLlib has it:
``register_env("my_env", lambda config: MyEnv(config))``. The creator gets the run's
``env_config`` as an ``EnvContext``: the dict itself, plus which worker and which of its
envs is being made, so that the same env class runs with other settings in every worker.

A registered name is a gymnasium id as well (``gymnasium.make`` finds it), so everything
that makes envs by id makes these. The creators reach every worker pickled by value
(``a3c.lib.registrations``).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from a3c.lib.registrations import Registry


class EnvContext(dict):
    """The run's ``env_config`` as the creator sees it: a dict, with the worker's index and
    the env's index among that worker's envs (``worker_index``, ``vector_index``)."""

    def __init__(self, env_config: Mapping[str, Any] | None = None, worker_index: int = 0, vector_index: int = 0):
        super().__init__(env_config or {})
        self.worker_index = worker_index
        self.vector_index = vector_index


class _Created:
    """The gymnasium entry point of a registered name: calls its creator with the context."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, env_config: EnvContext | None = None, **unexpected: Any) -> gym.Env:
        if unexpected:
            raise TypeError(f"{self.name} is made by its creator from env_config alone, not from "
                            f"{sorted(unexpected)}")
        env = _CREATORS.entries[self.name](env_config if env_config is not None else EnvContext())
        if not isinstance(env, gym.Env):
            raise TypeError(f"the creator registered as {self.name!r} returned {type(env).__name__}, "
                            "not a gymnasium.Env")
        return env


def register_env(name: str, creator: Callable[[EnvContext], gym.Env]) -> None:
    """Make ``name`` an env id whose envs ``creator(env_config)`` returns; registering a name
    again replaces its creator."""
    _CREATORS.add(name, creator)


def _as_gymnasium_id(name: str) -> None:
    gym.envs.registration.registry.pop(name, None)
    gym.register(id=name, entry_point=_Created(name))


_CREATORS = Registry("env", on_add=_as_gymnasium_id)


def is_user_env(env_id: str) -> bool:
    """True for a name given to ``register_env``."""
    return env_id in _CREATORS.entries


def search_working_folder() -> None:
    """Put the working folder last on the module search path, as ``python run_a3c.py`` and
    ``python -m`` put it first, so that ``--env mymodule:name`` (and ``--callbacks
    mymodule:Class``) find the user's module from an installed command too; spawned workers
    inherit the path."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
