"""Two agents, each observing RLlib's and PettingZoo's Dict of a one-hot target among 4
actions and an ``action_mask`` allowing the target and a random half of the others. The
target earns 1, another valid action 0; an invalid action raises, so a run that takes one
crashes. Ten steps an episode."""
from __future__ import annotations

import gymnasium as gym
import numpy as np


class MaskedChoice:
    possible_agents = ("a", "b")

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.steps = 0
        self.rng = np.random.default_rng(0)
        self.targets: dict[str, int] = {}
        self.masks: dict[str, np.ndarray] = {}

    def observation_space(self, agent: str) -> gym.spaces.Dict:
        return gym.spaces.Dict({"observation": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
                                "action_mask": gym.spaces.Box(0.0, 1.0, (4,), np.float32)})

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return gym.spaces.Discrete(4)

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        observations = {}
        for agent in self.agents:
            target = int(self.rng.integers(4))
            mask = (self.rng.random(4) < 0.5).astype(np.float32)
            mask[target] = 1.0
            self.targets[agent], self.masks[agent] = target, mask
            observations[agent] = {"observation": np.eye(4, dtype=np.float32)[target], "action_mask": mask.copy()}
        return observations

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents, self.steps = list(self.possible_agents), 0
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        for agent, action in actions.items():
            if not self.masks[agent][int(action)]:
                raise RuntimeError(f"agent {agent} took invalid action {int(action)} under {self.masks[agent].tolist()}")
        rewards = {agent: float(int(actions[agent]) == self.targets[agent]) for agent in self.agents}
        self.steps += 1
        over = self.steps >= 10
        observations = self._observations()
        terminations = {agent: over for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        if over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        pass


def parallel_env() -> MaskedChoice:
    return MaskedChoice()
