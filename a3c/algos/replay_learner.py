"""What the off-policy algorithms (DQN, MADDPG, QMIX, SAC) share: the replay buffer's
settings, the memory it needs, the loop that fills the buffer with what the workers send and
trains on samples of it at a fixed replay ratio, and the learner side around a uniform one.
Pure at import: no torch."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from a3c.algos.base import trained_on
from a3c.options import ConfigError, option

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter

    from a3c.algos.payloads import Transitions
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo
    from a3c.lib.experience import TransitionBatch
    from a3c.lib.replay import ReplayBuffer
    from a3c.lifecycle.reporter import Reporter


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


def check_replay_fits(config: Config, needed: int) -> None:
    """ConfigError when a replay buffer of ``needed`` bytes would not fit in the memory free now."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a system that says: do not guess
        return
    if needed > available:
        raise ConfigError(f"--replay-size {config.replay_size:,} needs {needed / 2**30:.1f} GiB of "
                          f"memory and {available / 2**30:.1f} GiB are free")


@dataclass(kw_only=True)
class ReplayFigures:
    """What ``ReplaySteps`` adds to each step's figures (the algorithm's step stats subclass it)."""

    importance_weight: float
    """Mean importance-sampling weight of the batch (1 with uniform replay)."""
    beta: float
    replay_size: int
    priority_mean: float
    policy_lag: float | None = None


@dataclass(kw_only=True)
class ActorCriticFigures(ReplayFigures):
    """One step of an actor trained through critics (MADDPG's, SAC's, TD3's); MADDPG's
    losses are sums over its agents."""

    loss_critic: float
    loss_actor: float
    q_values: float
    td_error: float
    grad_norm: float
    """Of the actor's gradient (the actors'), before the clip."""
    grad_norm_critic: float


class ReplayLearner(Protocol):
    """An algorithm's update: its nets (``target_net`` the one its targets come from), Adam,
    and one step on a sampled batch."""

    net: Any
    target_net: Any
    optimizer: Any
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
        self.by_priority = True
        """False: the buffer is sampled uniformly for now (its owner's switch, DQN's
        ``--prioritized-from-episodes``)."""

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
            batch, slots, weights = self.replay.sample(self.batch_size, beta, self.rng, self.by_priority)
            figures, td_errors = self.learner.step(batch, weights)
            self.replay.update_priorities(slots, td_errors)
            self.sampled += self.batch_size
            steps.append(trained_on(self.stats_type(
                **figures, importance_weight=float(weights.mean()), beta=beta,
                replay_size=len(self.replay),
                priority_mean=self.replay.priorities.total / len(self.replay),
                policy_lag=float(self.learner.policy_version - message.batch.policy_versions.mean())
                if message.batch.policy_versions is not None else None), batch))
        return steps


class UniformReplayLearner:
    """The learner side of an algorithm whose ``update`` trains on uniform samples of a replay
    buffer (``replay_buffer``) made when the workers start; a resumed run refills it. The
    update's ``target_net`` goes into checkpoints."""

    stats_type: type

    def __init__(self, config: Config, update: ReplayLearner, env_info: EnvInfo):
        self.config = config
        self.env_info = env_info
        self.update = update
        self.net = update.net
        self.optimizer = update.optimizer
        self.steps: ReplaySteps | None = None

    @property
    def policy_version(self) -> int:
        return self.update.policy_version

    def replay_buffer(self) -> ReplayBuffer:
        """One agent's rows with its own actions (SAC's, TD3's Box actions)."""
        from a3c.lib.replay import ReplayBuffer

        info = self.env_info
        return ReplayBuffer(self.config.replay_size, info.observation_shape, info.observation_dtype,
                            prioritized=False, action_shape=info.action_shape, action_dtype=info.action_dtype)

    def begin(self, writer: SummaryWriter, frame: int, restored: dict | None, reporter: Reporter) -> None:
        config = self.config
        if restored is not None:
            reporter.info(f"the replay buffer refills: learning waits for {config.learning_starts:,} transitions")
        self.steps = ReplaySteps(self.update, self.replay_buffer(), config.batch_size, config.replay_ratio,
                                 config.learning_starts, beta=1.0, beta_steps=1, seed=config.seed,
                                 stats_type=self.stats_type)

    def consume(self, message: Transitions, frame: int, episodes: int = 0) -> list[Any]:
        return self.steps.consume(message)

    def log_interval(self, writer: SummaryWriter, frame: int) -> None:
        """Nothing beyond each step's figures."""

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        return {"target_model": self.update.target_net.state_dict()}

    def load_extras(self, state: dict[str, Any]) -> None:
        if "target_model" in state:
            self.update.target_net.load_state_dict(state["target_model"])
