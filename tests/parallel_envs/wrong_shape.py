"""EarlyFinish, but agent "b" observes three numbers from its second step where its space
says two."""
from __future__ import annotations

import numpy as np

from tests.parallel_envs.early_finish import EarlyFinish


class WrongShape(EarlyFinish):
    def _observations(self) -> dict[str, np.ndarray]:
        observations = super()._observations()
        if self.steps >= 2 and "b" in observations:
            observations["b"] = np.zeros(3, np.float32)
        return observations


def parallel_env() -> WrongShape:
    return WrongShape()
