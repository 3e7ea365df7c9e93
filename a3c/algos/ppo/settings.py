"""PPO's own settings and its presets per env family. Pure: no torch."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a3c.algos.actor_critic import ActorCriticPreset, ActorCriticSettings
from a3c.options import CORES, CPU_BF16, option, process_layout


@dataclass(frozen=True)
class PPOSettings(ActorCriticSettings):
    """The rollout, the passes over it, the clip and the advantage estimate."""

    rollout_length: int = option("steps each env adds to a rollout before the learner's passes over it",
                                 None, at_least=1, family=True)
    epochs: int = option("passes over each rollout", None, at_least=1, family=True)
    minibatches: int = option("optimizer steps each pass is split into", None, at_least=1, family=True)
    clip_range: float = option("how far the probability ratio against the acting policy may move "
                               "before the surrogate stops rewarding it (and the value, with "
                               "--value-clip)", None, above=0.0, family=True)
    gae_lambda: float = option("lambda of the GAE advantages and of V-trace's traces", None,
                               at_least=0.0, at_most=1.0, family=True)
    value_clip: bool = option("clip the value loss around the values the targets were computed "
                              "with", None, family=True)
    vtrace: bool = option("value targets corrected for the policy lag with V-trace (off: GAE "
                          "returns)", True)
    sync_rollouts: bool = option("workers wait while the learner trains on a rollout, at most a "
                                 "vector step or two ahead (synchronous PPO); off: they act through "
                                 "the passes as far as the next rollout (APPO)", None, family=True)


@dataclass(frozen=True)
class PPOPreset(ActorCriticPreset):
    """Every family setting of PPO. ``batch_size`` is derived: a rollout's rows over the
    minibatches (``family_defaults``); ``reward_steps`` is 1, GAE does the rest."""

    rollout_length: int = 32
    epochs: int = 4
    minibatches: int = 4
    clip_range: float = 0.2
    gae_lambda: float = 0.95
    value_clip: bool = False
    sync_rollouts: bool = False


def atari_preset(cores: int, bf16: bool) -> PPOPreset:
    """The Atari values of the PPO paper and its common ports (clip 0.1, 4 epochs, entropy
    0.01, value weight 0.5, clip 0.5, lambda 0.95) on the shared-layer Nature CNN, but twice
    their learning rate, 5e-4, decaying over 10M frames, and the value loss unclipped; 32
    envs, rollouts of 64 steps each (2,048 rows) in 8 minibatches; under bfloat16 autocast
    where ``bf16`` (docs/ppo.md has each change measured on Pong)."""
    return PPOPreset(**process_layout(cores, envs_in_total=32), batch_size=256, reward_steps=1, gamma=0.99,
                     lr=5e-4, clip_grad=0.5, adam_eps=1e-5, entropy_beta=0.01, value_weight=0.5,
                     heads="shared", rollout_length=64, epochs=4, minibatches=8, clip_range=0.1,
                     value_clip=False, lr_decay_frames=10_000_000, bf16=bf16)


def vector_preset(cores: int) -> PPOPreset:
    """CartPole-like envs: 32 envs, rollouts of 16 steps (512 rows), 4 passes of 4
    minibatches, lr 2e-3, lambda 0.8, gamma 0.98 (the RL zoo's CartPole PPO has the last two;
    docs/ppo.md has the choices measured)."""
    return PPOPreset(**process_layout(cores, envs_in_total=32), batch_size=256, reward_steps=1, gamma=0.98,
                     lr=2e-3, clip_grad=0.5, adam_eps=1e-5, entropy_beta=0.0, value_weight=0.5,
                     rollout_length=16, epochs=4, minibatches=4, gae_lambda=0.8)


def box_preset(cores: int) -> PPOPreset:
    """Box actions (MuJoCo, Pendulum): the PPO paper's MuJoCo values (2,048 rows a rollout,
    10 passes of 32 minibatches of 64, clip 0.2, lambda 0.95, no entropy bonus) at lr 3e-4
    falling to a tenth over 1M frames, on 8 envs of 256 steps, with the MuJoCo baselines'
    running observation statistics and return-scaled rewards; synchronous rollouts, since a
    worker a whole rollout ahead made every update one update stale (docs/spaces.md)."""
    return PPOPreset(**process_layout(cores, envs_in_total=8), batch_size=64, reward_steps=1, gamma=0.99,
                     lr=3e-4, clip_grad=0.5, adam_eps=1e-5, entropy_beta=0.0, value_weight=0.5,
                     rollout_length=256, epochs=10, minibatches=32, gae_lambda=0.95, clip_range=0.2,
                     lr_decay_frames=1_000_000, normalize_observations=True, scale_rewards=True,
                     sync_rollouts=True)


def mujoco_preset(cores: int) -> PPOPreset:
    """MuJoCo's locomotion tasks (HalfCheetah, Hopper, ...): ``box_preset`` on the RL zoo's
    MuJoCo net, 256-unit hidden layers and a log-std starting at -2 (a deviation of 0.14, where
    1 buries a locomotion policy's first steps in noise). Pendulum keeps ``box_preset``: from
    -2 it explores too little (docs/spaces.md)."""
    return dataclasses.replace(box_preset(cores), mlp_hidden=256, log_std_init=-2.0)


BOX_PRESETS = {"box": box_preset, "mujoco": mujoco_preset}
"""The presets for Box actions, by ``--preset`` name."""


def rollout_rows(values: Mapping[str, Any]) -> int:
    """Rows of one rollout: every env's ``rollout_length`` steps."""
    return values["rollout_length"] * values["processes"] * values["envs_per_process"]


def family_values(atari: bool, given: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's values, with ``batch_size`` a rollout's rows over the minibatches of the
    settings as given."""
    if atari:
        preset = atari_preset(CORES, CPU_BF16 and not given.get("cuda"))
    else:
        preset = BOX_PRESETS.get(given.get("preset"), vector_preset)(CORES)
    values = dataclasses.asdict(preset)
    merged = {**values, **{name: value for name, value in given.items() if value is not None}}
    values["batch_size"] = max(1, rollout_rows(merged) // merged["minibatches"])
    return values
