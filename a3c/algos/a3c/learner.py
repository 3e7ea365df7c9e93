"""A3C's learner step, in two flavours that share every part but where gradients come from.

Data-parallel: unpack a batch of transitions, compute the actor-critic loss and its
gradients here, clip, step Adam. Gradient-parallel: the workers ran ``loss_gradients`` on
their own batches; the learner sums ``grad_batch`` of their flat gradients, clips, steps.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter

    from a3c.algos.payloads import Gradients, Transitions
    from a3c.config import Config
    from a3c.lifecycle.reporter import Reporter

from a3c.algos.a3c.acting import loss_settings
from a3c.algos.a3c.gradients import LossStats, batch_loss, loss_gradients
from a3c.algos.a3c.loss import LossSettings, LossTerms
from a3c.algos.base import trained_on
from a3c.algos.optimizer import clip_and_step, decayed, make_adam, new_version_counter, set_lr
from a3c.lib.experience import TransitionBatch
from a3c.lib.normalize import observe
from a3c.lib.recurrent import is_recurrent, transition_buffer, with_streams
from a3c.schedules import LrSchedule, parse_lr_schedule, scheduled


@dataclass
class StepStats(LossStats):
    """Scalars worth logging about one optimizer step."""

    grad_norm: float = 0.0
    policy_lag: float | None = None
    """Mean optimizer steps between the weights that acted and the ones trained, if known."""
    diagnostics: dict[str, float] | None = None
    """On every ``diagnose_every``-th step: each loss term's gradient norm before the clip,
    as a share of the clip, and the update's norm relative to the weights' (see Learner)."""


def gradients_by_term(net: nn.Module, terms: LossTerms, value_weight: float) -> dict[str, float]:
    """Backpropagate each weighted loss term on its own, leave their sum in ``net``'s
    gradients (as ``terms.total.backward()`` would) and return each term's gradient norm.

    Two more backward passes than one: worth it on a sampled step, not on every one.
    """
    parameters = [parameter for parameter in net.parameters() if parameter.requires_grad]
    weighted = {"policy": terms.policy, "value": value_weight * terms.value, "entropy": terms.entropy}
    norms, total = {}, None
    for name, term in weighted.items():
        grads = torch.autograd.grad(term, parameters, retain_graph=True, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(parameters, grads)]
        norms[name] = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
        total = grads if total is None else [t.add_(g) for t, g in zip(total, grads)]
    for parameter, grad in zip(parameters, total):
        parameter.grad = grad
    return norms


@contextmanager
def relu_activity(net: nn.Module) -> Iterator[dict[str, float]]:
    """While open, each forward pass records, for every ReLU in ``net``, the share of its
    units (channels, for a conv layer) that fire on at least one row of the batch.

    A unit silent on every state gets no gradient and stays silent: when most of a layer is,
    what comes after it can no longer tell states apart.
    """
    fractions: dict[str, float] = {}

    def recorder(name: str) -> Callable[[nn.Module, object, torch.Tensor], None]:
        def record(_module: nn.Module, _inputs: object, output: torch.Tensor) -> None:
            per_row = output.detach().flatten(2).amax(2) if output.dim() > 2 else output.detach()
            fractions[name] = float((per_row.amax(0) > 0).float().mean())
        return record

    handles = [module.register_forward_hook(recorder(name))
               for name, module in net.named_modules() if isinstance(module, nn.ReLU)]
    try:
        yield fractions
    finally:
        for handle in handles:
            handle.remove()


DIAGNOSE_EVERY = 100
"""Optimizer steps between two steps that measure each loss term's gradient and the update's
size: those take two more backward passes, one step in a hundred, so the others run as before."""


class Learner:
    """Owns the optimizer of the shared net and applies one step per batch.

    ``version_counter`` holds the policy version, the number of steps applied, in shared
    memory; workers read it when they act, so every transition says how old the weights
    that chose it were. It is made here unless given (the trainer makes it before the
    workers, and them before this).

    Every ``diagnose_every`` steps (data mode) the step also reports what tells a stuck
    policy from a slow one: each term's gradient norm before the clip and as a share of the
    clip, the norm of the update against the norm of the weights, and the share of each
    ReLU layer's units still firing on some state of the batch.
    """

    def __init__(self, net: nn.Module, settings: LossSettings, lr: float, adam_eps: float,
                 clip_grad: float, device: torch.device | str,
                 version_counter: torch.Tensor | None = None, diagnose_every: int = DIAGNOSE_EVERY,
                 lr_warmup: int = 0, lr_decay_frames: int = 0, entropy_decay_frames: int = 0,
                 lr_schedule: LrSchedule = ()):
        self.net = net
        self.settings = settings
        self.lr = lr
        self.lr_warmup = lr_warmup
        self.lr_decay_frames = lr_decay_frames
        self.lr_schedule = lr_schedule
        self.entropy_decay_frames = entropy_decay_frames
        self.frames = 0
        """The trainer's frame count, for the decays of the learning rate and entropy bonus
        (``A3CLearner.consume`` sets it)."""
        self.optimizer = make_adam(net, lr, adam_eps)
        self.clip_grad = clip_grad
        self.device = device
        self.diagnose_every = diagnose_every
        self.version_counter = new_version_counter() if version_counter is None else version_counter

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def current_lr(self) -> float:
        """``lr`` after its decay over the frames (``decayed``), times the schedule's factor
        at those frames (``scheduled``), ramped up linearly over
        the first ``lr_warmup`` steps: with a small eps, Adam's first steps move every weight
        by about ``lr`` whatever its gradient's size, and at full ``lr`` those first steps
        silence most of a fresh net's ReLU units."""
        lr = decayed(self.lr, self.frames, self.lr_decay_frames) * scheduled(self.lr_schedule, self.frames)
        if self.policy_version >= self.lr_warmup:
            return lr
        return lr * (self.policy_version + 1) / self.lr_warmup

    def current_settings(self) -> LossSettings:
        """The loss settings with the entropy bonus decayed over the frames (``decayed``)."""
        if not self.entropy_decay_frames:
            return self.settings
        beta = decayed(self.settings.entropy_beta, self.frames, self.entropy_decay_frames)
        return replace(self.settings, entropy_beta=beta)

    def step(self, transitions: TransitionBatch) -> StepStats:
        """One optimizer step on ``transitions``; raises NonFiniteLoss instead of applying NaNs."""
        lag = None
        if transitions.policy_versions is not None:
            lag = float(self.policy_version - transitions.policy_versions.mean())
        settings = self.current_settings()
        if self.policy_version % self.diagnose_every:
            loss = loss_gradients(self.net, transitions, settings, self.device)
            return StepStats(**asdict(loss), grad_norm=self._clip_and_step(loss.loss_total), policy_lag=lag)
        with relu_activity(self.net) as alive:
            terms, loss = batch_loss(self.net, transitions, settings, self.device)
        self.net.zero_grad(set_to_none=True)
        term_norms = gradients_by_term(self.net, terms, settings.value_weight)
        before = torch.cat([parameter.detach().reshape(-1) for parameter in self.net.parameters()])
        grad_norm = self._clip_and_step(loss.loss_total)
        after = torch.cat([parameter.detach().reshape(-1) for parameter in self.net.parameters()])
        diagnostics = {f"grad_norm_{name}": norm for name, norm in term_norms.items()}
        diagnostics.update({f"clip_share_{name}": norm / self.clip_grad for name, norm in term_norms.items()})
        diagnostics["update_to_weights"] = float((after - before).norm() / before.norm())
        diagnostics.update({f"alive_{name}": fraction for name, fraction in alive.items()})
        return StepStats(**asdict(loss), grad_norm=grad_norm, policy_lag=lag, diagnostics=diagnostics)

    def step_on_gradients(self, gradients: Sequence[np.ndarray], losses: Sequence[LossStats],
                          policy_versions: Sequence[int]) -> StepStats:
        """One optimizer step on the sum of workers' flat gradients."""
        total = torch.as_tensor(np.sum(gradients, axis=0)).to(self.device)
        offset = 0
        for parameter in self.net.parameters():
            size = parameter.numel()
            # empty_like keeps the parameter's layout (the conv weights are channels-last)
            parameter.grad = torch.empty_like(parameter).copy_(total[offset:offset + size].view_as(parameter))
            offset += size
        loss = LossStats.mean(losses)
        lag = float(self.policy_version - np.mean(policy_versions))
        return StepStats(**asdict(loss), grad_norm=self._clip_and_step(loss.loss_total), policy_lag=lag)

    def _clip_and_step(self, loss_total: float) -> float:
        set_lr(self.optimizer, self.current_lr())
        return clip_and_step(self.net, self.optimizer, self.clip_grad, loss_total, self.version_counter)


class TransitionSteps:
    """Data mode: batches of exactly ``batch_size`` transitions, ``passes`` steps each, one
    after another (more steps per frame at more compute per frame), while the learner's
    frames are in [``passes_from``, ``passes_frames``) (``passes_frames`` 0: to the end of
    the run); one step each outside that span."""

    def __init__(self, learner: Learner, batch_size: int, passes: int = 1, passes_frames: int = 0,
                 passes_from: int = 0):
        self.learner = learner
        self.buffer = transition_buffer(learner.net, batch_size, learner.settings.seq_len)
        self.passes = passes
        self.passes_frames = passes_frames
        self.passes_from = passes_from

    def current_passes(self) -> int:
        """``passes`` inside the span of frames, 1 outside it."""
        frames = self.learner.frames
        if frames < self.passes_from or (self.passes_frames and frames >= self.passes_frames):
            return 1
        return self.passes

    def consume(self, message: Transitions) -> list[StepStats]:
        observe(self.learner.net, message.batch.states)  # each row's observation once, as it arrives
        batch = message.batch
        if is_recurrent(self.learner.net):  # sequences are cut per worker and env
            batch = with_streams(batch, message.worker_id)
        self.buffer.add(batch)
        steps = []
        while (batch := self.buffer.pop_batch()) is not None:
            steps.extend(trained_on(self.learner.step(batch), batch) for _ in range(self.current_passes()))
        return steps


class GradientSteps:
    """Grads mode: one step per ``grad_batch`` gradients, dropping any older than
    ``max_policy_lag`` optimizer steps when that is set."""

    def __init__(self, learner: Learner, grad_batch: int, max_policy_lag: int | None):
        self.learner = learner
        self.grad_batch = grad_batch
        self.max_policy_lag = max_policy_lag
        self.pending: list[Gradients] = []
        self.dropped = 0

    def consume(self, message: Gradients) -> list[StepStats]:
        lag = self.learner.policy_version - message.policy_version
        if self.max_policy_lag is not None and lag > self.max_policy_lag:
            self.dropped += 1
            return []
        self.pending.append(message)
        if len(self.pending) < self.grad_batch:
            return []
        taken, self.pending = self.pending, []
        return [self.learner.step_on_gradients([m.gradient for m in taken], [m.loss for m in taken],
                                               [m.policy_version for m in taken])]


class A3CLearner:
    """A3C's learner side: the ``Learner`` and the steps its mode feeds it, transitions in
    data mode, the workers' gradients in grads mode."""

    stats_type = StepStats

    def __init__(self, config: Config, net: nn.Module, version_counter: torch.Tensor):
        self.learner = Learner(net, loss_settings(config), config.lr, config.adam_eps, config.clip_grad,
                               torch.device(config.device), version_counter, lr_warmup=config.lr_warmup,
                               lr_decay_frames=config.lr_decay_frames,
                               entropy_decay_frames=config.entropy_decay_frames,
                               lr_schedule=parse_lr_schedule(config.lr_schedule))
        self.net = net
        self.optimizer = self.learner.optimizer
        self.steps: TransitionSteps | GradientSteps
        if config.mode == "grads":
            self.steps = GradientSteps(self.learner, config.grad_batch, config.max_policy_lag)
        else:
            self.steps = TransitionSteps(self.learner, config.batch_size, config.passes,
                                         config.passes_frames, config.passes_from)

    @property
    def policy_version(self) -> int:
        return self.learner.policy_version

    def begin(self, writer: SummaryWriter, frame: int, restored: dict | None, reporter: Reporter) -> None:
        """Nothing to make: the workers feed the learner directly."""

    def consume(self, message: Transitions | Gradients, frame: int, episodes: int = 0) -> list[StepStats]:
        """The steps of ``message``, at the learning rate and entropy bonus ``frame`` sets
        (``--lr-decay-frames``, ``--entropy-decay-frames``)."""
        self.learner.frames = frame
        return self.steps.consume(message)

    def log_interval(self, writer: SummaryWriter, frame: int) -> None:
        writer.add_scalar("train/lr", self.learner.current_lr(), frame)
        writer.add_scalar("train/entropy_beta", self.learner.current_settings().entropy_beta, frame)
        if isinstance(self.steps, GradientSteps):
            writer.add_scalar("train/dropped_gradients", self.steps.dropped, frame)

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        return {}

    def load_extras(self, state: dict[str, Any]) -> None:
        """A3C's checkpoint holds nothing beyond the net and the optimizer."""
