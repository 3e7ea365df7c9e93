"""SAC's own settings and its values. Pure: no torch."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from a3c.algos.replay_learner import ReplaySettings
from a3c.options import CORES, Preset, option, process_layout


@dataclass(frozen=True)
class SACSettings(ReplaySettings):
    """The replay (shared with DQN and MADDPG) and the entropy temperature."""

    temperature: float | None = option("sac: a fixed entropy temperature (alpha); unset: learned, from 1, "
                                       "towards --target-entropy", None, above=0.0)
    target_entropy: float | None = option("sac: the policy entropy a learned temperature aims at; unset: "
                                          "minus the action's dimensions", None)


def preset(cores: int) -> dict[str, Any]:
    """The SAC paper's values (two hidden layers of 256, Adam at 3e-4 on batches of 256, gamma
    0.99, targets following at Polyak 0.005, no gradient clip) and one optimizer step per
    transition received, as its one gradient step per env step; one env a worker, learning
    from 5,000 transitions (CleanRL's). Eight envs a worker, or the critics' gradients clipped
    at 10, each learned HalfCheetah slower per step (docs/spaces.md, "SAC")."""
    layout = {**process_layout(cores, envs_in_total=1), "envs_per_process": 1}
    return {**dataclasses.asdict(Preset(**layout, batch_size=256, reward_steps=1, gamma=0.99, lr=3e-4,
                                        clip_grad=math.inf, adam_eps=1e-8)),
            "replay_size": 1_000_000, "replay_ratio": 256.0, "learning_starts": 5_000, "tau": 0.005}


PRESET = preset(CORES)
