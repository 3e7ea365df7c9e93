"""Forward, loss and backward on one batch: the n-step reference values (``unpack_batch``),
A3C's loss on them and its gradients; what the learner (data mode) and a grads-mode worker
both compute, kept apart from the learner so that workers never import it."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from a3c.algos.a3c.loss import LossSettings, LossTerms, a2c_loss
from a3c.lib.distributions import policy_distribution
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import forward
from a3c.lib.recurrent import is_recurrent, sequences, streams_of, unroll


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
    policy_entropy: float
    """The policy's mean entropy in nats, not scaled by the entropy weight."""
    importance_weight: float = 1.0
    """The mean truncated importance weight of the policy term (1 without the correction)."""
    truncated_share: float = 0.0
    """The share of rows whose ratio pi/mu was cut to rho-bar."""

    @staticmethod
    def mean(all_stats: Sequence[LossStats]) -> LossStats:
        columns = [asdict(stats) for stats in all_stats]
        return LossStats(**{name: float(np.mean([row[name] for row in columns])) for name in columns[0]})

    @staticmethod
    def of(terms: LossTerms, values: torch.Tensor, reference_values: torch.Tensor,
           rho_bar: float | None = None) -> LossStats:
        weights = terms.importance_weights
        return LossStats(
            loss_total=float(terms.total.detach()),
            loss_policy=float(terms.policy.detach()),
            loss_value=float(terms.value.detach()),
            loss_entropy=float(terms.entropy.detach()),
            advantage=float(terms.advantages.mean()),
            values=float(values.detach().mean()),
            reference_values=float(reference_values.mean()),
            policy_entropy=float(terms.policy_entropy),
            importance_weight=1.0 if weights is None else float(weights.mean()),
            truncated_share=0.0 if weights is None else float((weights >= rho_bar).float().mean()),
        )


def batch_loss(net: nn.Module, transitions: TransitionBatch, settings: LossSettings,
               device: torch.device | str) -> tuple[LossTerms, LossStats]:
    """Forward pass and loss terms on ``transitions`` (nothing is backpropagated yet), a
    recurrent net's over sequences of ``settings.seq_len`` (``a3c.lib.recurrent``); with
    ``settings.rho_bar`` the rows' ``log_probs`` weigh the policy term (``a2c_loss``), where
    they carry them (rows made by hand without them weigh 1)."""
    lengths = None
    if is_recurrent(net):  # rows regrouped into each env's sequences, rerun from their stored states
        order, lengths = sequences(streams_of(transitions), settings.seq_len)
        transitions = transitions[order]
    states, actions, reference_values = unpack_batch(transitions, net, settings.gamma, device)
    if lengths is None:
        head, values = forward(net, states, settings.bf16)
    else:
        stored = torch.as_tensor(transitions.extras["recurrent_states"]).to(device)
        head, values = unroll(net, states, stored, transitions.starts, lengths, settings.bf16)
    behaviour = None
    if settings.rho_bar is not None and transitions.log_probs is not None:
        behaviour = torch.as_tensor(transitions.log_probs).to(device)
    terms = a2c_loss(head, values, actions, reference_values, settings.entropy_beta,
                     settings.value_weight, settings.normalize_advantages, behaviour,
                     settings.rho_bar or 1.0, policy_distribution(net))
    return terms, LossStats.of(terms, values, reference_values, settings.rho_bar)


def loss_gradients(net: nn.Module, transitions: TransitionBatch, settings: LossSettings,
                   device: torch.device | str) -> LossStats:
    """Forward, loss and backward on ``transitions``: the gradients are left in ``net``'s
    parameters (replacing any there), the loss terms returned as floats.

    ``settings.bf16`` runs the forward pass under bfloat16 autocast (weights, gradients and
    the loss stay float32).
    """
    terms, stats = batch_loss(net, transitions, settings, device)
    net.zero_grad(set_to_none=True)
    terms.total.backward()
    return stats


def flat_gradients(net: nn.Module) -> np.ndarray:
    """All parameter gradients as one float32 vector, in ``parameters()`` order."""
    return torch.cat([
        (torch.zeros_like(parameter) if parameter.grad is None else parameter.grad).reshape(-1)
        for parameter in net.parameters()
    ]).cpu().numpy()


def unpack_batch(
    transitions: TransitionBatch, net: nn.Module, gamma: float, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(states, actions, reference values) on ``device``.

    reference = discounted reward + gamma**steps * V(last state) where the episode did not
    terminate; ``steps`` is n except for transitions cut short by truncation. V(last state)
    is the sender's ``last_values`` when present, else ``net`` evaluates ``last_states``
    without gradient: either way it is a target, not a prediction.
    """
    states = torch.as_tensor(transitions.states).to(device)
    actions = torch.as_tensor(transitions.actions).to(device)
    reference_values = torch.tensor(transitions.rewards, dtype=torch.float32, device=device)
    bootstrap_rows = np.flatnonzero(~transitions.dones)
    if len(bootstrap_rows):
        bootstrap_values = _bootstrap_values(transitions, bootstrap_rows, net, device)
        discounts = torch.as_tensor(
            gamma ** transitions.steps[bootstrap_rows].astype(np.float64), dtype=torch.float32
        ).to(device)
        rows = torch.as_tensor(bootstrap_rows).to(device)
        reference_values[rows] += discounts * bootstrap_values
    return states, actions, reference_values


def _bootstrap_values(transitions: TransitionBatch, rows: np.ndarray, net: nn.Module,
                      device: torch.device | str) -> torch.Tensor:
    if transitions.last_values is not None:
        return torch.as_tensor(transitions.last_values[rows], dtype=torch.float32).to(device)
    if transitions.last_states is None:
        raise ValueError("transitions carry neither last_states nor last_values")
    last_states = torch.as_tensor(transitions.last_states[rows]).to(device)
    with torch.no_grad():
        _, values = net(last_states)
    return values
