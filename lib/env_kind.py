"""What kind of env an id names, worked out in one place and once per id in a process (the
answers are cached): a PettingZoo module or the two-step game, an Atari game, a user's
registered creator, its goal. Read from the registration alone, no env made, so that the
settings can be checked before anything starts; the path from the command line to the
first worker asks many times, and the import probes run once.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

import gymnasium as gym

from a3c.lib.multiagent import TWO_STEP_GAME, reward_threshold
from a3c.lib.observations import EnvError
from a3c.lib.user_envs import is_user_env


def is_atari(env_id: str) -> bool:
    """True when the registered entry point is the Arcade Learning Environment."""
    return env_family(env_id).atari


def _spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec; ``module:EnvId`` imports ``module`` first, as ``gym.make`` does.
    The error keeps gymnasium's reason: its "Did you mean" and the version to use instead."""
    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        return gym.spec(name)
    except (gym.error.Error, ImportError) as exc:
        raise EnvError(f"unknown env id {env_id!r}: {exc}") from exc


def registered_by_user(env_id: str) -> bool:
    """True for a name given to ``register_env``, also as ``module:name`` (the module, which
    registers it, is imported first, as ``gymnasium.make`` does)."""
    if is_multiagent(env_id):
        return False
    _spec(env_id)
    return is_user_env(env_id.rpartition(":")[2])


def check_stackable(env_id: str, frame_stack: int) -> None:
    """Raise EnvError where ``--frame-stack`` cannot apply: Atari frames and several agents'
    observations (``StackedObservations`` refuses images of too many channels itself)."""
    if frame_stack > 1 and (is_atari(env_id) or is_multiagent(env_id)):
        what = "Atari frames, which stack 4 already" if is_atari(env_id) else "several agents"
        raise EnvError(f"--frame-stack is for one agent's own observations; {env_id} has {what}")


@dataclass(frozen=True)
class EnvFamily:
    """What the settings need to know of an env, read from its registration alone: no env
    is made, so a run's settings can be checked before anything starts."""

    env_id: str
    atari: bool
    reward_threshold: float | None
    multiagent: bool = False


@functools.cache
def env_family(env_id: str) -> EnvFamily:
    """The env's family and goal; EnvError for an unknown id."""
    if is_multiagent(env_id):
        return EnvFamily(env_id, False, reward_threshold(env_id), multiagent=True)
    spec = _spec(env_id)
    return EnvFamily(env_id, "ale_py" in str(spec.entry_point), spec.reward_threshold)


@functools.cache
def is_multiagent(env_id: str) -> bool:
    """The built-in two-step game, or an importable module with a PettingZoo ``parallel_env``
    (``mpe2.simple_spread_v3``); never a gymnasium id (``module:Env`` included)."""
    if env_id == TWO_STEP_GAME:
        return True
    if ":" in env_id or "." not in env_id:
        return False
    try:
        module = importlib.import_module(env_id)
    except ImportError:
        return False
    return callable(getattr(module, "parallel_env", None))
