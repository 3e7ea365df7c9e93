"""A task only a policy with memory solves: name the cue shown at the first step.

Each episode shows one of ``cues`` cues (a one-hot) at its first step, then ``delay`` steps
of zeros, the last of which raises an "answer now" flag; the action taken at that step
earns +1 if it names the cue, -1 if not, and ends the episode. A policy that sees only the
current observation names the right cue half the time (with two cues) and scores 0 on
average; one that remembers scores 1. Registered as ``CueMemory-v0`` when ``a3c.lib.envs`` is
imported (``--env CueMemory-v0``; ``--env-config '{"delay": 20}'`` for a longer gap).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

ENV_ID = "CueMemory-v0"


class CueMemory(gym.Env):
    """The cue at step 0, blanks, then the answer step; observation: the cue's one-hot (zeros
    after the first step) and the answer flag."""

    def __init__(self, cues: int = 2, delay: int = 8):
        if cues < 2 or delay < 1:
            raise ValueError(f"CueMemory needs cues >= 2 and delay >= 1, got {cues} and {delay}")
        self.cues, self.delay = cues, delay
        self.observation_space = gym.spaces.Box(0.0, 1.0, (cues + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(cues)
        self._cue, self._t = 0, 0

    def _observation(self) -> np.ndarray:
        observation = np.zeros(self.cues + 1, np.float32)
        if self._t == 0:
            observation[self._cue] = 1.0
        if self._t == self.delay:
            observation[-1] = 1.0
        return observation

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._cue, self._t = int(self.np_random.integers(self.cues)), 0
        return self._observation(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._t == self.delay:
            return self._observation(), (1.0 if int(action) == self._cue else -1.0), True, False, {}
        self._t += 1
        return self._observation(), 0.0, False, False, {}


def register() -> None:
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=CueMemory, max_episode_steps=1000, reward_threshold=0.9)
