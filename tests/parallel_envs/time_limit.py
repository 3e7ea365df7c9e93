"""Two agents cut by a time limit after their second step, neither finished: every step pays
each 1. Each observes (steps so far, its index)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np


class TimeLimit:
    possible_agents = ("a", "b")
    LIMIT = 2

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.steps = 0

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 10.0, (2,), np.float32)

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents, self.steps = list(self.possible_agents), 0
        return self._observations(), {agent: {} for agent in self.agents}

    def _observations(self) -> dict[str, np.ndarray]:
        return {agent: np.array([self.steps, index], np.float32) for index, agent in enumerate(self.agents)}

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        self.steps += 1
        observations = self._observations()
        rewards = {agent: 1.0 for agent in self.agents}
        terminations = {agent: False for agent in self.agents}
        truncations = {agent: self.steps >= self.LIMIT for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        if self.steps >= self.LIMIT:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        pass


def parallel_env() -> TimeLimit:
    return TimeLimit()
