"""PPO's learner: gather a rollout from the workers' one-step rows, put each env's rows back
in order, estimate advantages and value targets once, then run the passes of minibatch steps.

The workers keep acting while the passes run, so each row was chosen by weights some steps
older than the learner's: the ratio of the surrogate is taken against the log-probability
each row was acted with (as APPO does), and the value targets are V-trace's, whose
truncated importance weights correct for that lag (``--no-vtrace``: GAE returns).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from a3c.algos.base import trained_on
from a3c.algos.optimizer import clip_and_step, decayed, make_adam, set_lr
from a3c.algos.ppo.loss import PPOLossSettings, ppo_loss
from a3c.lib.advantages import continues, gae, next_values, sequence_order, vtrace
from a3c.lib.distributions import policy_distribution
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import evaluate, forward
from a3c.lib.normalize import observe
from a3c.lib.recurrent import is_recurrent, sequences, streams_of, unroll, with_streams

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter

    from a3c.algos.payloads import Transitions
    from a3c.config import Config
    from a3c.lifecycle.reporter import Reporter


@dataclass
class PPOStepStats:
    """Scalars worth logging about one minibatch step."""

    loss_total: float
    loss_policy: float
    loss_value: float
    loss_entropy: float
    policy_entropy: float
    approx_kl: float
    clip_fraction: float
    grad_norm: float
    explained_variance: float
    """Of the rollout's value targets by the values they were computed with (1: perfect, 0: none)."""
    vtrace_rho: float | None
    """Mean truncated importance weight of the rollout's rows (V-trace on)."""
    policy_lag: float | None
    """Mean optimizer steps between the weights that acted and the learner's at the start
    of the passes (each pass adds ``minibatches`` more)."""


@dataclass
class Rollout:
    """A rollout in sequence order, as tensors, with what the passes train towards."""

    states: torch.Tensor
    actions: torch.Tensor
    behaviour_log_probs: torch.Tensor
    advantages: torch.Tensor
    old_values: torch.Tensor
    targets: torch.Tensor
    explained_variance: float
    vtrace_rho: float | None
    policy_lag: float | None
    recurrent: RecurrentRows | None = None
    batch: TransitionBatch | None = None
    """The rows, in the same order, for ``on_learn_on_batch``'s ``train_batch``."""

    def __len__(self) -> int:
        return len(self.actions)


@dataclass
class RecurrentRows:
    """What a recurrent net reruns a rollout's rows with: the rows lie in runs of
    ``lengths`` (``a3c.lib.recurrent.sequences``), each from its first row's stored state."""

    stored_states: torch.Tensor
    starts: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])

    def rows(self, runs: np.ndarray) -> np.ndarray:
        """The rows of ``runs``, run after run."""
        return np.concatenate([np.arange(self.offsets[run], self.offsets[run] + self.lengths[run]) for run in runs])

    def unroll(self, net: nn.Module, states: torch.Tensor, runs: np.ndarray,
               bf16: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy head, values) of the rows of ``runs``, in ``rows(runs)`` order."""
        rows = self.rows(runs)
        index = torch.as_tensor(rows, device=states.device)
        return unroll(net, states[index], self.stored_states[index], self.starts[rows], self.lengths[runs], bf16)


def in_sequence_order(parts: list[tuple[int, TransitionBatch]]) -> tuple[TransitionBatch, np.ndarray]:
    """The parts' rows with each (worker, env)'s rows together in the order they came (its
    stream, ``a3c.lib.recurrent.with_streams``), and whether each row's episode goes on in the next row."""
    batch = TransitionBatch.concatenate([part for _, part in parts])
    workers = np.concatenate([np.full(len(part), worker) for worker, part in parts])
    order = sequence_order(workers, batch.env_ids)
    ordered = with_streams(batch[order], workers[order])
    return ordered, continues(ordered.ends, workers[order], ordered.env_ids)


class PPOLearner:
    """Owns the optimizer; ``consume`` holds rows until a rollout is full (``--rollout-length``
    steps of every env, and of each agent of a multi-agent env), then trains on it."""

    stats_type = PPOStepStats

    def __init__(self, config: Config, net: nn.Module, version_counter: torch.Tensor, agents: int = 1):
        self.net = net
        self.distribution = policy_distribution(net)
        self.config = config
        self.optimizer = make_adam(net, config.lr, config.adam_eps)
        self.version_counter = version_counter
        self.device = torch.device(config.device)
        self.rows = config.rollout_length * config.processes * config.envs_per_process * agents
        self.loss_settings = PPOLossSettings(config.clip_range, config.value_clip, config.entropy_beta,
                                             config.value_weight)
        self.generator = np.random.default_rng(config.seed)
        self._parts: list[tuple[int, TransitionBatch]] = []
        self._held = 0

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def begin(self, writer: SummaryWriter, frame: int, restored: dict | None, reporter: Reporter) -> None:
        """Nothing to make: the workers feed the rollout directly."""

    def consume(self, message: Transitions, frame: int, episodes: int = 0) -> list[PPOStepStats]:
        """Holds the rows; a full rollout is trained on at the learning rate and entropy bonus
        ``frame`` sets (``--lr-decay-frames``, ``--entropy-decay-frames``)."""
        self._parts.append((message.worker_id, message.batch))
        self._held += len(message.batch)
        if self._held < self.rows:
            return []
        parts, self._parts, self._held = self._parts, [], 0
        set_lr(self.optimizer, decayed(self.config.lr, frame, self.config.lr_decay_frames))
        beta = decayed(self.config.entropy_beta, frame, self.config.entropy_decay_frames)
        self.loss_settings = replace(self.loss_settings, entropy_beta=beta)
        return self.train(self.prepare(parts))

    def prepare(self, parts: list[tuple[int, TransitionBatch]]) -> Rollout:
        """Advantages and value targets of a rollout, under the weights as they are now."""
        batch, continuing = in_sequence_order(parts)
        recurrent = None
        if is_recurrent(self.net):  # each stream's rows already lie together: the runs cut them in order
            _, lengths = sequences(streams_of(batch), self.config.seq_len)
            recurrent = RecurrentRows(torch.as_tensor(batch.extras["recurrent_states"]).to(self.device),
                                      batch.starts, lengths)
        states = torch.as_tensor(batch.states).to(self.device)
        # The rollout joins the normalizer's statistics before the passes: their ratios are then of the
        # policy the workers act with next, the statistics' shift included, and the clip bounds it all.
        observe(self.net, states)
        actions = torch.as_tensor(batch.actions).to(self.device)
        if recurrent is None:
            head, values = evaluate(self.net, states, self.config.bf16)
        else:
            with torch.no_grad():
                head, values = recurrent.unroll(self.net, states, np.arange(len(recurrent.lengths)), self.config.bf16)
        log_probs = self.distribution.log_prob(head, actions).cpu().numpy()
        values = values.cpu().numpy()
        following = next_values(values, batch.last_values, batch.dones, continuing)
        advantages = gae(batch.rewards, values, following, continuing, self.config.gamma, self.config.gae_lambda)
        rho = None
        if self.config.vtrace:
            ratios = np.exp(log_probs - batch.log_probs)
            targets = vtrace(batch.rewards, values, following, continuing, ratios, self.config.gamma,
                             self.config.gae_lambda)
            rho = float(np.minimum(1.0, ratios).mean())
        else:
            targets = advantages + values
        lag = None if batch.policy_versions is None else float(self.policy_version - batch.policy_versions.mean())
        return Rollout(states, actions, torch.as_tensor(batch.log_probs).to(self.device),
                       torch.as_tensor(advantages).to(self.device), torch.as_tensor(values).to(self.device),
                       torch.as_tensor(targets).to(self.device), explained_variance(values, targets), rho, lag,
                       recurrent, batch)

    def train(self, rollout: Rollout) -> list[PPOStepStats]:
        """``epochs`` passes, each over every row once, in ``minibatches`` random parts (of
        whole runs, for a recurrent net)."""
        steps = []
        units = len(rollout) if rollout.recurrent is None else len(rollout.recurrent.lengths)
        for _ in range(self.config.epochs):
            for part in np.array_split(self.generator.permutation(units), min(self.config.minibatches, units)):
                steps.append(self._step(rollout, part))
        return steps

    def _step(self, rollout: Rollout, part: np.ndarray) -> PPOStepStats:
        """One minibatch: ``part`` names its rows, or a recurrent net's runs."""
        taken = part if rollout.recurrent is None else rollout.recurrent.rows(part)
        rows = torch.as_tensor(taken).to(self.device)
        if rollout.recurrent is None:
            head, values = forward(self.net, rollout.states[rows], self.config.bf16)
        else:
            head, values = rollout.recurrent.unroll(self.net, rollout.states, part, self.config.bf16)
        terms = ppo_loss(head, values, rollout.actions[rows], rollout.behaviour_log_probs[rows],
                         rollout.advantages[rows], rollout.old_values[rows], rollout.targets[rows],
                         self.loss_settings, self.distribution)
        self.optimizer.zero_grad(set_to_none=True)
        terms.total.backward()
        grad_norm = clip_and_step(self.net, self.optimizer, self.config.clip_grad, float(terms.total.detach()),
                                  self.version_counter)
        stats = PPOStepStats(float(terms.total.detach()), float(terms.policy.detach()), float(terms.value.detach()),
                             float(terms.entropy.detach()), terms.policy_entropy, terms.approx_kl,
                             terms.clip_fraction, grad_norm, rollout.explained_variance, rollout.vtrace_rho,
                             rollout.policy_lag)
        return stats if rollout.batch is None else trained_on(stats, lambda: rollout.batch[taken])

    def log_interval(self, writer: SummaryWriter, frame: int) -> None:
        """The learning rate and entropy bonus; every other figure is a step's (``PPOStepStats``)."""
        writer.add_scalar("train/lr", self.optimizer.param_groups[0]["lr"], frame)
        writer.add_scalar("train/entropy_beta", self.loss_settings.entropy_beta, frame)

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        return {}

    def load_extras(self, state: dict[str, Any]) -> None:
        """PPO's checkpoint holds nothing beyond the net and the optimizer; a rollout being
        gathered is not kept."""


def explained_variance(values: np.ndarray, targets: np.ndarray) -> float:
    """``1 - Var(targets - values) / Var(targets)``; 0 where the targets do not vary."""
    spread = float(np.var(targets))
    return 0.0 if spread == 0.0 else 1.0 - float(np.var(targets - values)) / spread
