"""SAC's loss as small pure functions: the soft targets of the twin critics, the critics' squared
error, the actor's and the temperature's losses. TD3 takes the targets at temperature 0 and
the critics' loss as they are.
"""
from __future__ import annotations

import torch


def soft_targets(rewards: torch.Tensor, dones: torch.Tensor, steps: torch.Tensor, next_q: torch.Tensor,
                 next_log_probs: torch.Tensor, temperature: float, gamma: float) -> torch.Tensor:
    """y = R + gamma^n (1 - done) (min_i Q'_i(s', a') - temperature * log pi(a' | s')) for n-step
    rows (``rewards`` their discounted sums over ``steps``), a' drawn from the policy at s'."""
    soft_value = next_q.min(dim=-1).values - temperature * next_log_probs
    return rewards + gamma ** steps.float() * (~dones).float() * soft_value


def twin_critic_loss(q_values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Each critic's mean squared error to the shared targets, summed over the critics:
    ``q_values`` (N, critics) of the stored actions, ``targets`` (N,)."""
    return (q_values - targets[:, None]).pow(2).mean(dim=0).sum()


def actor_loss(log_probs: torch.Tensor, q_values: torch.Tensor, temperature: float) -> torch.Tensor:
    """mean(temperature * log pi(a | s) - min_i Q_i(s, a)) over the actor's fresh,
    reparametrised actions a: ``log_probs`` (N,), ``q_values`` (N, critics)."""
    return (temperature * log_probs - q_values.min(dim=-1).values).mean()


def temperature_loss(log_temperature: torch.Tensor, log_probs: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """-mean(log alpha * (log pi(a | s) + target entropy)): its gradient raises the
    temperature while the policy's entropy is below the target and lowers it above. The
    log-densities are constants here."""
    return -(log_temperature * (log_probs.detach() + target_entropy)).mean()
