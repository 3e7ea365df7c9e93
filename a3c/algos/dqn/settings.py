"""DQN's own settings and its values per env family. Pure: no torch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a3c.algos.replay_learner import ExplorationSettings
from a3c.options import CORES, Preset, option, process_layout


@dataclass(frozen=True)
class DQNSettings(ExplorationSettings):
    """The replay buffer, the target net, the Q-network's head and the actors' exploration."""

    target_sync: int = option("dqn: optimizer steps between hard copies of the net to the target "
                              "net", None, at_least=1, family=True)
    dueling: bool = option("dqn: a dueling head, V(s) + A(s, a) - mean A", True)
    double: bool = option("dqn: Double-DQN targets (the online net chooses, the target net "
                          "evaluates)", True)
    prioritized: bool = option("dqn: prioritized replay by TD error (else uniform)", True)
    prioritized_from_episodes: int = option("dqn: sample uniformly until this many episodes have ended, then "
                                            "by priority (the priorities are kept from the start; the "
                                            "Double-DQN notes' agent switches at 30)", 0, at_least=0)
    priority_alpha: float = option("dqn: priority exponent alpha", 0.6, at_least=0.0)
    priority_beta: float = option("dqn: importance-sampling exponent beta at the start, annealed "
                                  "to 1", 0.4, at_least=0.0, at_most=1.0)
    beta_steps: int = option("dqn: optimizer steps over which beta rises to 1", None, at_least=1,
                             family=True)
    epsilon_base: float = option("dqn: the most exploring env's epsilon; env i of N explores with "
                                 "base ** (1 + alpha * i / (N - 1)) (Ape-X's 0.4 for Atari; lower for "
                                 "vector envs, where the mean-100 counts every env's episodes)", None,
                                 above=0.0, at_most=1.0, family=True)
    save_replay: bool = option("dqn: keep the replay buffer in checkpoints (as large as the buffer "
                               "itself); without it a resumed run refills it first", False)
    epsilon_alpha: float = option("dqn: how fast the envs' epsilons fall from the first to the "
                                  "last", 7.0, at_least=0.0)


def vector_preset(cores: int) -> Preset:
    """Q-learning on vector observations: batch 64, 3-step returns, Adam at lr 1e-3, clip 10,
    32 envs; from two small sweeps on CartPole (docs/dqn.md)."""
    return Preset(**process_layout(cores, envs_in_total=32), batch_size=64, reward_steps=3, gamma=0.99,
                  lr=1e-3, clip_grad=10.0, adam_eps=1e-8)


def atari_preset(cores: int) -> Preset:
    """Q-learning on Atari frames: batch 32, 3-step returns, Adam at lr 1e-4 eps 1.5e-4
    (Rainbow's), clip 10, 32 envs."""
    return Preset(**process_layout(cores, envs_in_total=32), batch_size=32, reward_steps=3, gamma=0.99,
                  lr=1e-4, clip_grad=10.0, adam_eps=1.5e-4)


VECTOR_REPLAY: dict[str, Any] = {"replay_size": 100_000, "replay_ratio": 4.0, "learning_starts": 1_000,
                                 "target_sync": 250, "tau": 0.0, "beta_steps": 20_000, "epsilon_base": 0.05,
                                 "epsilon_schedule": ""}
"""The replay and exploration on vector observations: from the CartPole sweeps (docs/dqn.md)."""
ATARI_REPLAY: dict[str, Any] = {"replay_size": 1_000_000, "replay_ratio": 2.0, "learning_starts": 20_000,
                                "target_sync": 2_000, "tau": 0.0, "beta_steps": 100_000, "epsilon_base": 0.4,
                                "epsilon_schedule": ""}
"""On Atari: a million transitions (about 7 GB, frames stored once), Ape-X's epsilons, the
target copied every 2,000 steps; two samples a transition, as the learner's steps on a CPU
are few (docs/dqn.md, "Pong")."""

ATARI_PRESET = atari_preset(CORES)
VECTOR_PRESET = vector_preset(CORES)
