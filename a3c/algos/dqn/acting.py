"""DQN's acting side: every env explores epsilon-greedy with an Ape-X epsilon of its own, or
with the epsilon of ``--epsilon-schedule`` at the run's frames."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import torch

from a3c.algos.dqn.exploration import actor_epsilons, epsilon_greedy
from a3c.lib.envs import run_frames_per_step
from a3c.schedules import EpsilonSchedule, epsilon_at, parse_epsilon_schedule

if TYPE_CHECKING:
    from a3c.config import Config


def env_epsilons(config: Config) -> np.ndarray:
    """The Ape-X epsilon of every env of every worker, worker 0's envs first."""
    return actor_epsilons(config.processes * config.envs_per_process, config.epsilon_base,
                          config.epsilon_alpha)


def epsilon_greedy_chooser(config: Config, worker_id: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """How worker ``worker_id`` chooses actions from Q-values: its envs take their share of
    all envs' epsilons (in a multi-agent env, every agent of an env its env's), or all take
    the scheduled epsilon."""
    schedule = parse_epsilon_schedule(config.epsilon_schedule)
    if schedule is not None:
        return ScheduledEpsilonGreedy(schedule, run_frames_per_step(config) // config.envs_per_process)
    envs = config.envs_per_process
    mine = torch.as_tensor(env_epsilons(config)[worker_id * envs:(worker_id + 1) * envs],
                           dtype=torch.float32)
    return partial(_per_env_epsilon_greedy, epsilons=mine.to(config.device))


class ScheduledEpsilonGreedy:
    """Epsilon-greedy at the scheduled epsilon of the run's frames, which a worker estimates
    as the rows it has acted on times ``frames_per_row`` (its share: all workers step at about
    one rate; a row is an env's step, or an agent's in a multi-agent env; a restarted worker
    counts from its own start)."""

    def __init__(self, schedule: EpsilonSchedule, frames_per_row: float):
        self.schedule = schedule
        self.frames_per_row = frames_per_row
        self.rows = 0

    def __call__(self, q_values: torch.Tensor) -> torch.Tensor:
        epsilon = epsilon_at(self.schedule, self.rows * self.frames_per_row)
        self.rows += len(q_values)
        return epsilon_greedy(q_values, torch.full((len(q_values),), epsilon, device=q_values.device))


def _per_env_epsilon_greedy(q_values: torch.Tensor, epsilons: torch.Tensor) -> torch.Tensor:
    """Epsilon-greedy where the rows are the envs, or each env's agents in turn."""
    return epsilon_greedy(q_values, epsilons.repeat_interleave(len(q_values) // len(epsilons)))
