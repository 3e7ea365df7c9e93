"""The off-policy learner (``--algo dqn``, Ape-X style): workers act epsilon-greedy with
the shared Q-network and send n-step transitions; the learner keeps them in a replay
buffer and trains on samples of it with Double-DQN targets from a target network.

``DQNLearner`` is the algorithm's learner side: the ``QLearner`` (online and target nets,
Adam), the replay buffer and the ``ReplaySteps`` that fill it and sample it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from a3c.algos.dqn.acting import env_epsilons
from a3c.algos.dqn.loss import double_dqn_targets, weighted_huber_loss
from a3c.algos.optimizer import clip_and_step, follow, frozen_copy, make_adam, new_version_counter
from a3c.algos.replay_learner import ReplayFigures, ReplaySteps
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import forward
from a3c.lib.replay import ReplayBuffer
from a3c.schedules import epsilon_at, parse_epsilon_schedule

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter

    from a3c.algos.payloads import Transitions
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo
    from a3c.lifecycle.reporter import Reporter


@dataclass
class QStepStats(ReplayFigures):
    """Scalars worth logging about one Q-learning step."""

    loss_td: float
    td_error: float
    """Mean |target - Q(s, a)| of the batch."""
    q_values: float
    """Mean Q(s, a) of the actions taken."""
    grad_norm: float


class QLearner:
    """Owns the online net (shared with the workers), its target copy and Adam.

    The target net follows the online one by a hard copy every ``target_sync`` steps, or by
    Polyak averaging with weight ``tau`` every step when ``tau`` > 0.
    """

    def __init__(self, net: nn.Module, lr: float, adam_eps: float, clip_grad: float, gamma: float,
                 device: torch.device | str, version_counter: torch.Tensor | None = None,
                 double: bool = True, target_sync: int = 500, tau: float = 0.0):
        self.net = net
        self.target_net = frozen_copy(net)
        self.optimizer = make_adam(net, lr, adam_eps)
        self.clip_grad = clip_grad
        self.gamma = gamma
        self.device = device
        self.double = double
        self.target_sync = target_sync
        self.tau = tau
        self.version_counter = new_version_counter() if version_counter is None else version_counter

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def targets(self, batch: TransitionBatch) -> torch.Tensor:
        """The n-step (Double-)DQN targets of ``batch``, without gradient."""
        with torch.no_grad():
            last_states = torch.as_tensor(batch.last_states).to(self.device)
            next_q_target, _ = forward(self.target_net, last_states)
            next_q_online = forward(self.net, last_states)[0] if self.double else next_q_target
            return double_dqn_targets(
                torch.as_tensor(batch.rewards).to(self.device), torch.as_tensor(batch.dones).to(self.device),
                torch.as_tensor(batch.steps).to(self.device), next_q_online, next_q_target, self.gamma,
                self.double)

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
        """One Adam step on the weighted Huber loss; its figures and the TD errors (for the
        priorities). Raises NonFiniteLoss (``a3c.algos.optimizer``) instead of applying NaNs."""
        targets = self.targets(batch)
        states = torch.as_tensor(batch.states).to(self.device)
        actions = torch.as_tensor(batch.actions).to(self.device)
        q_values, _ = forward(self.net, states)
        q_taken = q_values.gather(-1, actions[:, None]).squeeze(-1)
        loss, td_errors = weighted_huber_loss(q_taken, targets, torch.as_tensor(weights).to(self.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        loss_value = float(loss.detach())
        grad_norm = clip_and_step(self.net, self.optimizer, self.clip_grad, loss_value, self.version_counter)
        self._follow_target()
        figures = {"loss_td": loss_value, "td_error": float(td_errors.abs().mean()),
                   "q_values": float(q_taken.detach().mean()), "grad_norm": grad_norm}
        return figures, td_errors.cpu().numpy()

    def _follow_target(self) -> None:
        if self.tau > 0:
            follow(self.target_net, self.net, self.tau)
        elif self.policy_version % self.target_sync == 0:
            self.target_net.load_state_dict(self.net.state_dict())


class DQNLearner:
    """The learner side of ``--algo dqn``; the replay buffer is made when the workers start
    (a trainer that only acts or saves never allocates it)."""

    stats_type = QStepStats

    def __init__(self, config: Config, net: nn.Module, version_counter: torch.Tensor, env_info: EnvInfo):
        self.config = config
        self.env_info = env_info
        self.learner = QLearner(net, config.lr, config.adam_eps, config.clip_grad, config.gamma,
                                torch.device(config.device), version_counter, config.double,
                                config.target_sync, config.tau)
        self.net = net
        self.optimizer = self.learner.optimizer
        self.replay: ReplayBuffer | None = None
        self.steps: ReplaySteps | None = None
        self._logged_received = self._logged_sampled = 0

    @property
    def policy_version(self) -> int:
        return self.learner.policy_version

    def begin(self, writer: SummaryWriter, frame: int, restored: dict | None, reporter: Reporter) -> None:
        """The replay buffer, the checkpoint's when it holds one (a resumed run without one
        says it refills); the envs' epsilons, and the scheduled one where it starts, in TensorBoard."""
        config, info = self.config, self.env_info
        self.replay = ReplayBuffer(config.replay_size, info.observation_shape, info.observation_dtype,
                                   config.priority_alpha, config.prioritized, frame_stack=info.frame_stack)
        if restored is not None and "replay" in restored:
            self.replay.load_state_dict(restored["replay"])
            reporter.info(f"replay buffer restored: {len(self.replay):,} transitions")
        elif restored is not None:
            reporter.info(f"resumed without a replay buffer (--save-replay keeps one): it refills, and "
                          f"learning waits for {config.learning_starts:,} transitions")
        self.steps = ReplaySteps(self.learner, self.replay, config.batch_size, config.replay_ratio,
                                 config.learning_starts, config.priority_beta, config.beta_steps, config.seed,
                                 QStepStats)
        epsilons = env_epsilons(config)
        for name, value in (("mean", epsilons.mean()), ("min", epsilons.min()), ("max", epsilons.max())):
            writer.add_scalar(f"train/epsilon_{name}", float(value), frame)
        self._log_scheduled_epsilon(writer, frame)

    def consume(self, message: Transitions, frame: int, episodes: int = 0) -> list[QStepStats]:
        """The steps of ``message``: uniform samples while fewer than
        ``--prioritized-from-episodes`` episodes have ended, by priority from then on."""
        self.steps.by_priority = episodes >= self.config.prioritized_from_episodes
        return self.steps.consume(message)

    def log_interval(self, writer: SummaryWriter, frame: int) -> None:
        """The replay ratio over the interval since the last call: transitions sampled per
        transition received (once learning has started), which shows a deviation from
        ``--replay-ratio`` that the run's total would average away; the scheduled epsilon."""
        self._log_scheduled_epsilon(writer, frame)
        if self.steps is None:
            return
        received, sampled = self.steps.received, self.steps.sampled
        if received > self._logged_received:
            ratio = (sampled - self._logged_sampled) / (received - self._logged_received)
            writer.add_scalar("train/replay_ratio", ratio, frame)
        self._logged_received, self._logged_sampled = received, sampled

    def _log_scheduled_epsilon(self, writer: SummaryWriter, frame: int) -> None:
        schedule = parse_epsilon_schedule(self.config.epsilon_schedule)
        if schedule is not None:
            writer.add_scalar("train/epsilon", epsilon_at(schedule, frame), frame)

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        """The target net, and the replay buffer with ``--save-replay``."""
        extras: dict[str, Any] = {"target_model": self.learner.target_net.state_dict()}
        if with_replay and self.config.save_replay and self.replay is not None:
            extras["replay"] = self.replay.state_dict()
        return extras

    def load_extras(self, state: dict[str, Any]) -> None:
        if "target_model" in state:
            self.learner.target_net.load_state_dict(state["target_model"])
