"""TD3's own settings and its values. Pure: no torch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a3c.algos.replay_learner import ReplaySettings
from a3c.algos.sac.settings import preset as sac_preset
from a3c.options import CORES, option


@dataclass(frozen=True)
class TD3Settings(ReplaySettings):
    """The replay (shared with SAC), the exploration noise and the target policy smoothing."""

    exploration_noise: float = option("td3: std of the Gaussian noise added to each action the workers take, "
                                      "in half-widths of the action's bounds", 0.1, at_least=0.0)
    policy_noise: float = option("td3: std of the noise added to the target actor's actions in the "
                                 "critics' targets (target policy smoothing), in half-widths", 0.2, at_least=0.0)
    noise_clip: float = option("td3: the target actions' noise is clipped to this many half-widths", 0.5,
                               at_least=0.0)
    policy_delay: int = option("td3: critic steps per step of the actor and of the target nets", 2, at_least=1)


def preset(cores: int) -> dict[str, Any]:
    """SAC's values (the TD3 authors' own code uses the same nets, Adam at 3e-4, batches of
    256 and Polyak 0.005), learning from 25,000 transitions, as their code and CleanRL's do
    (the workers act uniformly until then: ``TD3.acting_options``)."""
    return {**sac_preset(cores), "learning_starts": 25_000}


PRESET = preset(CORES)
