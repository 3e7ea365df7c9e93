"""The algorithms behind ``--algo``: one subpackage each, one line each in ``BUILT_IN``.

    from a3c.algos import get_algorithm, register
    register(MyAlgorithm())          # then Trainer(algo="mine", ...) or --algo mine

A built-in algorithm's own settings join ``Config`` (and so become flags); one registered
at run time uses the settings that exist. Importing this package imports no torch.
"""
from __future__ import annotations

from a3c.algos.a3c import A3C
from a3c.algos.base import Algorithm
from a3c.algos.dqn import DQN
from a3c.algos.maddpg import MADDPG
from a3c.algos.mappo import MAPPO
from a3c.algos.ppo import PPO
from a3c.algos.qmix import QMIX
from a3c.algos.sac import SAC
from a3c.algos.td3 import TD3

BUILT_IN: tuple[Algorithm, ...] = (A3C(), DQN(), PPO(), MADDPG(), QMIX(), MAPPO(), SAC(), TD3())
"""The first is the default."""

_REGISTRY: dict[str, Algorithm] = {algorithm.name: algorithm for algorithm in BUILT_IN}


def register(algorithm: Algorithm) -> None:
    """Make ``algorithm`` an ``--algo`` choice, under its ``name``."""
    _REGISTRY[algorithm.name] = algorithm


def algorithm_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm called ``name``; KeyError if there is none."""
    return _REGISTRY[name]
