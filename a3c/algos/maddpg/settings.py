"""MADDPG's own settings and its values. Pure: no torch."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from a3c.algos.replay_learner import ReplaySettings
from a3c.options import CORES, Preset, option, process_layout


@dataclass(frozen=True)
class MADDPGSettings(ReplaySettings):
    """The replay (shared with DQN) and the relaxation of the actors' discrete actions."""

    gumbel_temperature: float = option("maddpg: temperature of the Gumbel-softmax through which the "
                                       "critic's gradient reaches each actor", 1.0, above=0.0)


def preset(cores: int) -> dict[str, Any]:
    """The paper's values where they fit (two hidden layers of 64, gamma 0.95, Polyak 0.01,
    gradient clip 0.5) with Adam at 1e-3 on batches of 256, 8 envs, 8 samples per row."""
    return {**dataclasses.asdict(Preset(**process_layout(cores, envs_in_total=8), batch_size=256, reward_steps=1,
                                        gamma=0.95, lr=1e-3, clip_grad=0.5, adam_eps=1e-8)),
            "replay_size": 200_000, "replay_ratio": 8.0, "learning_starts": 1_000, "tau": 0.01}


PRESET = preset(CORES)
