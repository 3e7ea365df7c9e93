"""Two agents that observe vectors of different sizes."""
from __future__ import annotations

import gymnasium as gym
import numpy as np


class MixedSpaces:
    possible_agents = ("small", "large")

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 1.0, (2 if agent == "small" else 3,), np.float32)

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def close(self) -> None:
        pass


def parallel_env() -> MixedSpaces:
    return MixedSpaces()
