"""The learner's step: unpack a batch, compute the actor-critic loss, clip, step Adam."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from lib.batch import unpack_batch
from lib.experience import TransitionBatch
from lib.loss import a2c_loss


class NonFiniteLoss(RuntimeError):
    """The loss or gradient norm was NaN or infinite; the step was not applied."""


@dataclass
class StepStats:
    """Scalars worth logging about one optimizer step."""

    loss_total: float
    loss_policy: float
    loss_value: float
    loss_entropy: float
    grad_norm: float
    advantage: float
    values: float
    reference_values: float
    policy_lag: float | None
    """Mean optimizer steps between the weights that acted and the ones trained, if known."""


class Learner:
    """Owns the optimizer of the shared net and applies one step per batch.

    ``policy_version`` is a shared-memory counter of the steps applied; children read it
    when they act, so every transition says how old the weights that chose it were.
    """

    def __init__(self, net: nn.Module, lr: float, adam_eps: float, gamma: float,
                 entropy_beta: float, clip_grad: float, device: torch.device | str):
        self.net = net
        self.optimizer = torch.optim.Adam(net.parameters(), lr=lr, eps=adam_eps)
        self.gamma = gamma
        self.entropy_beta = entropy_beta
        self.clip_grad = clip_grad
        self.device = device
        self.policy_version = torch.zeros((), dtype=torch.int64).share_memory_()

    @property
    def steps_done(self) -> int:
        return int(self.policy_version)

    @steps_done.setter
    def steps_done(self, steps: int) -> None:
        self.policy_version.fill_(steps)

    def step(self, transitions: TransitionBatch) -> StepStats:
        """One optimizer step on ``transitions``; raises NonFiniteLoss instead of applying NaNs."""
        states, actions, reference_values = unpack_batch(transitions, self.net, self.gamma, self.device)
        logits, values = self.net(states)
        terms = a2c_loss(logits, values, actions, reference_values, self.entropy_beta)
        self.optimizer.zero_grad(set_to_none=True)
        terms.total.backward()
        grad_norm = float(nn.utils.clip_grad_norm_(self.net.parameters(), self.clip_grad))
        loss_total = float(terms.total.detach())
        if not (math.isfinite(loss_total) and math.isfinite(grad_norm)):
            raise NonFiniteLoss(
                f"non-finite training signal at step {self.steps_done}: "
                f"loss {loss_total}, gradient norm {grad_norm}"
            )
        self.optimizer.step()
        lag = None
        if transitions.policy_versions is not None:
            lag = float(self.steps_done - transitions.policy_versions.mean())
        self.policy_version += 1
        return StepStats(
            loss_total=loss_total,
            loss_policy=float(terms.policy.detach()),
            loss_value=float(terms.value.detach()),
            loss_entropy=float(terms.entropy.detach()),
            grad_norm=grad_norm,
            advantage=float(terms.advantages.mean()),
            values=float(values.detach().mean()),
            reference_values=float(reference_values.mean()),
            policy_lag=lag,
        )
