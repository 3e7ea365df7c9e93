"""The learner's step, in two flavours that share every part but where gradients come from.

Data-parallel: unpack a batch of transitions, compute the actor-critic loss and its
gradients here, clip, step Adam. Gradient-parallel: the children ran ``loss_gradients`` on
their own batches; the learner sums ``grad_batch`` of their flat gradients, clips, steps.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from a3c.messages import Gradients, Transitions

from lib.batch import TransitionBuffer, unpack_batch
from lib.experience import TransitionBatch
from lib.loss import a2c_loss
from lib.models import forward


class NonFiniteLoss(RuntimeError):
    """The loss or gradient norm was NaN or infinite; the step was not applied."""


@dataclass
class LossStats:
    """The loss terms and value statistics of one batch, as floats."""

    loss_total: float
    loss_policy: float
    loss_value: float
    loss_entropy: float
    advantage: float
    values: float
    reference_values: float

    @staticmethod
    def mean(all_stats: Sequence[LossStats]) -> LossStats:
        columns = [asdict(stats) for stats in all_stats]
        return LossStats(**{name: float(np.mean([row[name] for row in columns])) for name in columns[0]})


@dataclass
class StepStats(LossStats):
    """Scalars worth logging about one optimizer step."""

    grad_norm: float = 0.0
    policy_lag: float | None = None
    """Mean optimizer steps between the weights that acted and the ones trained, if known."""


def loss_gradients(net: nn.Module, transitions: TransitionBatch, gamma: float, entropy_beta: float,
                   device: torch.device | str, bf16: bool = False) -> LossStats:
    """Forward, loss and backward on ``transitions``: the gradients are left in ``net``'s
    parameters (replacing any there), the loss terms returned as floats.

    ``bf16`` runs the forward pass under bfloat16 autocast (weights, gradients and the loss
    stay float32): 1.35-2x the training rate on CPUs with AMX, 1.6x with AVX512-BF16.
    """
    states, actions, reference_values = unpack_batch(transitions, net, gamma, device)
    logits, values = forward(net, states, bf16)
    terms = a2c_loss(logits, values, actions, reference_values, entropy_beta)
    net.zero_grad(set_to_none=True)
    terms.total.backward()
    return LossStats(
        loss_total=float(terms.total.detach()),
        loss_policy=float(terms.policy.detach()),
        loss_value=float(terms.value.detach()),
        loss_entropy=float(terms.entropy.detach()),
        advantage=float(terms.advantages.mean()),
        values=float(values.detach().mean()),
        reference_values=float(reference_values.mean()),
    )


def flat_gradients(net: nn.Module) -> np.ndarray:
    """All parameter gradients as one float32 vector, in ``parameters()`` order."""
    return torch.cat([
        (torch.zeros_like(parameter) if parameter.grad is None else parameter.grad).reshape(-1)
        for parameter in net.parameters()
    ]).cpu().numpy()


def make_adam(net: nn.Module, lr: float, eps: float) -> torch.optim.Adam:
    """Adam, fused where this torch build has a fused kernel for the net's device.

    On the CPU the fused step takes about a sixth of the per-parameter loop's time (measured
    on the Pong net: 5 ms against 32 ms); older builds without it get the plain loop.
    """
    try:
        return torch.optim.Adam(net.parameters(), lr=lr, eps=eps, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(net.parameters(), lr=lr, eps=eps)


def new_policy_version() -> torch.Tensor:
    """A shared-memory step counter at 0."""
    return torch.zeros((), dtype=torch.int64).share_memory_()


class Learner:
    """Owns the optimizer of the shared net and applies one step per batch.

    ``policy_version`` is a shared-memory counter of the steps applied; children read it
    when they act, so every transition says how old the weights that chose it were. It is
    made here unless given (the trainer makes it before the children, and them before this).
    """

    def __init__(self, net: nn.Module, lr: float, adam_eps: float, gamma: float,
                 entropy_beta: float, clip_grad: float, device: torch.device | str, bf16: bool = False,
                 policy_version: torch.Tensor | None = None):
        self.net = net
        self.bf16 = bf16
        self.optimizer = make_adam(net, lr, adam_eps)
        self.gamma = gamma
        self.entropy_beta = entropy_beta
        self.clip_grad = clip_grad
        self.device = device
        self.policy_version = new_policy_version() if policy_version is None else policy_version

    @property
    def steps_done(self) -> int:
        return int(self.policy_version)

    @steps_done.setter
    def steps_done(self, steps: int) -> None:
        self.policy_version.fill_(steps)

    def step(self, transitions: TransitionBatch) -> StepStats:
        """One optimizer step on ``transitions``; raises NonFiniteLoss instead of applying NaNs."""
        loss = loss_gradients(self.net, transitions, self.gamma, self.entropy_beta, self.device, self.bf16)
        lag = None
        if transitions.policy_versions is not None:
            lag = float(self.steps_done - transitions.policy_versions.mean())
        return StepStats(**asdict(loss), grad_norm=self._clip_and_step(loss.loss_total), policy_lag=lag)

    def step_on_gradients(self, gradients: Sequence[np.ndarray], losses: Sequence[LossStats],
                          policy_versions: Sequence[int]) -> StepStats:
        """One optimizer step on the sum of children's flat gradients."""
        total = torch.as_tensor(np.sum(gradients, axis=0)).to(self.device)
        offset = 0
        for parameter in self.net.parameters():
            size = parameter.numel()
            # empty_like keeps the parameter's layout (the conv weights are channels-last)
            parameter.grad = torch.empty_like(parameter).copy_(total[offset:offset + size].view_as(parameter))
            offset += size
        loss = LossStats.mean(losses)
        lag = float(self.steps_done - np.mean(policy_versions))
        return StepStats(**asdict(loss), grad_norm=self._clip_and_step(loss.loss_total), policy_lag=lag)

    def _clip_and_step(self, loss_total: float) -> float:
        grad_norm = float(nn.utils.clip_grad_norm_(self.net.parameters(), self.clip_grad))
        if not (math.isfinite(loss_total) and math.isfinite(grad_norm)):
            raise NonFiniteLoss(
                f"non-finite training signal at step {self.steps_done}: "
                f"loss {loss_total}, gradient norm {grad_norm}"
            )
        self.optimizer.step()
        self.policy_version += 1
        return grad_norm


class TransitionSteps:
    """Data mode: batches of exactly ``batch_size`` transitions, one step each."""

    def __init__(self, learner: Learner, batch_size: int):
        self.learner = learner
        self.buffer = TransitionBuffer(batch_size)

    def consume(self, message: Transitions) -> list[StepStats]:
        self.buffer.add(message.batch)
        steps = []
        while (batch := self.buffer.pop_batch()) is not None:
            steps.append(self.learner.step(batch))
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
        lag = self.learner.steps_done - message.policy_version
        if self.max_policy_lag is not None and lag > self.max_policy_lag:
            self.dropped += 1
            return []
        self.pending.append(message)
        if len(self.pending) < self.grad_batch:
            return []
        taken, self.pending = self.pending, []
        return [self.learner.step_on_gradients([m.gradient for m in taken], [m.loss for m in taken],
                                               [m.policy_version for m in taken])]
