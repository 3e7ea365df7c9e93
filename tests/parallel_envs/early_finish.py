"""Two agents: "a" finishes after its first step (reward 1), "b" after its third (reward 2
each step). Each observes (steps so far, its index)."""
from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np


class EarlyFinish:
    possible_agents = ("a", "b")
    LAST_STEP: ClassVar[dict[str, int]] = {"a": 1, "b": 3}
    REWARD: ClassVar[dict[str, float]] = {"a": 1.0, "b": 2.0}

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.steps = 0

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 10.0, (2,), np.float32)

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def _observations(self) -> dict[str, np.ndarray]:
        return {agent: np.array([self.steps, index], np.float32) for index, agent in enumerate(self.possible_agents)
                if agent in self.agents}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents, self.steps = list(self.possible_agents), 0
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        assert set(actions) == set(self.agents), "a finished agent was asked to act"
        self.steps += 1
        observations = self._observations()
        rewards = {agent: self.REWARD[agent] for agent in self.agents}
        terminations = {agent: self.steps == self.LAST_STEP[agent] for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        self.agents = [agent for agent in self.agents if not terminations[agent]]
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        pass


def parallel_env() -> EarlyFinish:
    return EarlyFinish()
