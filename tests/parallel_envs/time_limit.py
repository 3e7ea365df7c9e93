"""Two agents cut by a time limit after their second step, neither finished: every step pays
each 1. Each observes (steps so far, its index), as in ``early_finish``."""
from __future__ import annotations

from tests.parallel_envs.early_finish import EarlyFinish


class TimeLimit(EarlyFinish):
    LIMIT = 2

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


def parallel_env() -> TimeLimit:
    return TimeLimit()
