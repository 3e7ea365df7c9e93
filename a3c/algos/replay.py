"""What the off-policy algorithms (DQN, MADDPG) share: the replay buffer's settings and the
loop that fills the buffer with what the workers send and trains on samples of it at a
fixed replay ratio. Pure at import: no torch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from a3c.settings import option

if TYPE_CHECKING:
    from a3c.algos.payloads import Transitions
    from lib.experience import TransitionBatch
    from lib.replay import ReplayBuffer


@dataclass(frozen=True)
class ReplaySettings:
    """The replay buffer, the replay ratio and the target nets' Polyak weight."""

    replay_size: int = option("transitions the replay buffer holds", None, at_least=1, family=True)
    replay_ratio: float = option("transitions sampled per transition received; the learner waits for "
                                 "data above it, the workers for the learner below", None, above=0.0,
                                 family=True)
    learning_starts: int = option("transitions stored before the first step", None, at_least=1, family=True)
    tau: float = option("Polyak weight of the target nets' update every step (dqn: 0 makes hard copies "
                        "every --target-sync steps instead)", None, at_least=0.0, at_most=1.0, family=True)


@dataclass(frozen=True)
class ExplorationSettings(ReplaySettings):
    """The Q-learners' (DQN's, QMIX's) epsilon schedule, beside the replay."""

    epsilon_schedule: str = option("INITIAL,FINAL,FRAMES: every env's epsilon falls linearly from INITIAL "
                                   "to FINAL over FRAMES frames of the run, then holds (RLlib's "
                                   "EpsilonGreedy); empty: DQN's Ape-X epsilons", None, family=True)


@dataclass(kw_only=True)
class ReplayFigures:
    """What ``ReplaySteps`` adds to each step's figures (the algorithm's step stats subclass it)."""

    importance_weight: float
    """Mean importance-sampling weight of the batch (1 with uniform replay)."""
    beta: float
    replay_size: int
    priority_mean: float
    policy_lag: float | None = None


class ReplayLearner(Protocol):
    version_counter: Any

    @property
    def policy_version(self) -> int: ...

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]: ...


class ReplaySteps:
    """Adds every transition received to the replay buffer and trains on samples of it.

    The replay ratio (transitions sampled per transition received) is held by waiting: once
    the learner has sampled ``replay_ratio`` times what it received, it takes no step until
    more arrives; when it falls behind, the workers wait on their bounded queues instead.
    No step is taken before ``learning_starts`` transitions are stored. The
    importance-sampling exponent beta rises linearly to 1 over ``beta_steps`` steps.

    ``learner.step(batch, weights)`` takes one optimizer step and returns its figures and the
    TD errors (for the priorities); each step's figures, with the replay's, make one
    ``stats_type``.
    """

    def __init__(self, learner: ReplayLearner, replay: ReplayBuffer, batch_size: int, replay_ratio: float,
                 learning_starts: int, beta: float, beta_steps: int, seed: int, stats_type: type):
        self.learner = learner
        self.stats_type = stats_type
        self.replay = replay
        self.batch_size = batch_size
        self.replay_ratio = replay_ratio
        self.learning_starts = learning_starts
        self.beta_start = beta
        self.beta_steps = beta_steps
        self.received = 0
        self.sampled = 0
        self.rng = np.random.default_rng(seed)

    def beta(self) -> float:
        progress = min(1.0, self.learner.policy_version / max(1, self.beta_steps))
        return self.beta_start + (1.0 - self.beta_start) * progress

    def consume(self, message: Transitions) -> list[Any]:
        self.replay.add(message.batch)
        if len(self.replay) < self.learning_starts:
            return []
        self.received += len(message.batch)  # counted from the start of learning
        steps = []
        while self.sampled + self.batch_size <= self.replay_ratio * self.received:
            beta = self.beta()
            batch, slots, weights = self.replay.sample(self.batch_size, beta, self.rng)
            figures, td_errors = self.learner.step(batch, weights)
            self.replay.update_priorities(slots, td_errors)
            self.sampled += self.batch_size
            steps.append(self.stats_type(
                **figures, importance_weight=float(weights.mean()), beta=beta,
                replay_size=len(self.replay),
                priority_mean=self.replay.priorities.total / len(self.replay),
                policy_lag=float(self.learner.policy_version - message.batch.policy_versions.mean())
                if message.batch.policy_versions is not None else None))
        return steps
