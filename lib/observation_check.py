"""An env's observations against its observation space, before any worker steps it: a
shape, a dtype or a Dict key that does not match would crash every worker as it writes the
observation into its vector env's arrays, and a NaN or an infinity would reach the loss.
One line names the first mismatch, where it was seen (the reset, or step N) and the part of
the observation (a Dict's key, a Tuple's index)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from a3c.lib.observations import (
    STRUCTURED,
    current_mask,
    first_valid,
    mask_of,
    random_valid_action,
    valid_sample,
)

if TYPE_CHECKING:
    from a3c.lib.envs import EnvInfo

CHECKED_STEPS = 5
"""Steps of random actions checked after the reset."""


def non_finite(value: Any) -> bool:
    """A float array (or number) holding NaN or an infinity."""
    array = np.asarray(value)
    return array.dtype.kind == "f" and not bool(np.all(np.isfinite(array)))


def observation_problem(space: gym.Space, observation: Any, part: str = "") -> str | None:
    """What is wrong with ``observation`` for ``space`` (None: nothing), naming ``part``."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(observation, dict):
            return f"{part or 'the observation'} is a {type(observation).__name__}, its space a Dict"
        for key, subspace in space.spaces.items():
            if key not in observation:
                return f"{part}[{key!r}] is missing"
            problem = observation_problem(subspace, observation[key], f"{part}[{key!r}]")
            if problem:
                return problem
        extra = sorted(set(observation) - set(space.spaces))
        return f"{part} has keys its space lacks: {extra}" if extra else None
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(observation, tuple) or len(observation) != len(space.spaces):
            return f"{part or 'the observation'} is not a tuple of {len(space.spaces)}"
        for index, (subspace, item) in enumerate(zip(space.spaces, observation)):
            problem = observation_problem(subspace, item, f"{part}[{index}]")
            if problem:
                return problem
        return None
    array = np.asarray(observation)
    name = part or "the observation"
    if space.shape is not None and array.shape != space.shape:
        return f"{name} has shape {array.shape} and its space {space.shape}"
    if space.dtype is not None and not np.can_cast(array.dtype, space.dtype, casting="same_kind"):
        return f"{name} is {array.dtype} and its space {space.dtype}"
    if non_finite(array):
        return f"{name} holds NaN or infinite values"
    return None


def check_observations(env: gym.Env, seed: int, steps: int = CHECKED_STEPS) -> str | None:
    """The first problem of the reset's and ``steps`` random steps' observations, with where
    it was seen; None where all match the env's space. The random actions keep to an action
    mask where the env has one. The env is left open."""
    space = env.observation_space
    env.action_space.seed(seed)
    observation, _ = env.reset(seed=seed)
    problem = observation_problem(space, observation)
    if problem:
        return f"after reset: {problem}"
    for step in range(1, steps + 1):
        observation, _, terminated, truncated, _ = env.step(random_valid_action(env, observation))
        problem = observation_problem(space, observation)
        if problem:
            return f"after step {step}: {problem}"
        if terminated or truncated:
            observation, _ = env.reset()
    return None


def check_agent_observations(parallel_env: Any, seed: int, steps: int = CHECKED_STEPS) -> str | None:
    """``check_observations`` for a PettingZoo parallel env: each agent's observation
    against its own space (``observation_space(agent)``) over the reset and ``steps`` steps
    of random actions, the problem naming the agent."""
    def first_problem(observations: dict, where: str) -> str | None:
        for agent, observation in observations.items():
            problem = observation_problem(parallel_env.observation_space(agent), observation,
                                          f"agent {agent}'s observation")
            if problem:
                return f"after {where}: {problem}"
        return None

    observations, _ = parallel_env.reset(seed=seed)
    problem = first_problem(observations, "reset")
    for step in range(1, steps + 1):
        if problem:
            return problem
        acting = parallel_env.agents  # PettingZoo's agents still in the episode
        if not acting:
            observations, _ = parallel_env.reset()
            acting = parallel_env.agents
        actions = {agent: valid_sample(parallel_env.action_space(agent), mask_of(observations.get(agent)))
                   for agent in acting}
        observations, *_ = parallel_env.step(actions)
        problem = first_problem(observations, f"step {step}")
    return problem


def check_observation_size(env_info: EnvInfo, frame_stack: int, observation: Any) -> None:
    """ValueError, naming the shape the net takes, for an array observation of another size
    (a Dict's or Tuple's own is checked by its flattening, a multi-agent env's joint one by
    its agents' nets): torch's own error names only matrix shapes. ValueError too for a
    float observation holding NaN or an infinity, which would give an action silently."""
    parts = observation.values() if isinstance(observation, Mapping) else (
        observation if isinstance(observation, tuple) else [observation])
    if any(non_finite(part) for part in parts):
        raise ValueError(f"the observation holds NaN or infinite values; {env_info.env_id}'s policy acts only on "
                         "finite ones")
    raw_space = env_info.raw_observation_space
    flat_already = isinstance(raw_space, STRUCTURED) and isinstance(observation, np.ndarray)
    if env_info.agents or (raw_space is not None and not isinstance(raw_space, gym.spaces.Box) and not flat_already):
        return
    if np.size(observation) != np.prod(env_info.observation_shape):
        stacked = (f": its last {frame_stack} stacked, as a3c.lib.envs.make_env(..., frame_stack={frame_stack}) "
                   "gives them" if frame_stack > 1 else "")
        raise ValueError(f"{env_info.env_id}'s net takes observations of shape {env_info.observation_shape}"
                         f"{stacked}; got shape {np.shape(observation)}")


class ValidActions(gym.Env):
    """``env`` as gymnasium's env checker steps it where its observations carry an action mask
    (or it has ``action_masks()``): an action the last observation does not allow becomes the
    first one it does (``first_valid``), so that an env that raises on an invalid action is
    checked rather than refused. The checker draws from the action space alone, even before a
    reset whose mask it cannot know; a substitution that depends on the observation only
    keeps a seeded reset and step deterministic."""

    def __init__(self, env: gym.Env):
        self.env = env
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self.metadata, self.render_mode, self.spec = env.metadata, env.render_mode, env.spec
        self._mask: Any | None = None

    @property
    def _np_random(self) -> np.random.Generator | None:
        """The env's own generator, where the checker looks for it."""
        return self.env.unwrapped._np_random

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._mask = current_mask(self.env, observation)
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self._mask is not None:
            action = first_valid(self.action_space, self._mask, action)
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._mask = current_mask(self.env, observation)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        self.env.close()
