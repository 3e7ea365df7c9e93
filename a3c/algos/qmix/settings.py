"""QMIX's settings and values. Pure: no torch."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from a3c.algos.replay_learner import ExplorationSettings
from a3c.options import CORES, Preset, option, process_layout


@dataclass(frozen=True)
class QMIXSettings(ExplorationSettings):
    """The replay, the epsilon schedule (shared with DQN) and the mixer's width."""

    mixing_embed: int = option("qmix: units of the mixing network's hidden layer", 32, at_least=1)


def preset(cores: int) -> dict[str, Any]:
    """The QMIX paper's shape on small games: agent nets of two layers of 64, a mixer of 32,
    Adam at 5e-4 on batches of 32 one-step joint rows, gamma 0.99, targets following at
    Polyak 0.01, epsilon from 1 to 0.05 over 20k frames; 8 envs, 4 samples per row."""
    return {**dataclasses.asdict(Preset(**process_layout(cores, envs_in_total=8), batch_size=32, reward_steps=1,
                                        gamma=0.99, lr=5e-4, clip_grad=10.0, adam_eps=1e-8)),
            "replay_size": 50_000, "replay_ratio": 4.0, "learning_starts": 500, "tau": 0.01,
            "epsilon_schedule": "1.0,0.05,20000"}


PRESET = preset(CORES)
