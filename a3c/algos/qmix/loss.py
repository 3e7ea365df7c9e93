"""QMIX's loss as small pure functions: the team's double-Q targets and the squared TD error of Q_tot."""
from __future__ import annotations

import torch

from a3c.algos.qmix.nets import QMIXNet
from a3c.lib.action_masks import MASKED


def qmix_targets(online: QMIXNet, target: QMIXNet, rewards: torch.Tensor, dones: torch.Tensor,
                 next_observations: torch.Tensor, gamma: float,
                 next_valid: torch.Tensor | None = None) -> torch.Tensor:
    """y = team reward + gamma (1 - done) Q'_tot(s', a'), with each agent's a' its greedy
    action under the online net (double Q-learning) among those ``next_valid`` (N, agents,
    actions) allows where the agents observe an action mask, and Q'_tot the target net's mixer."""
    with torch.no_grad():
        next_q = online.joint_q(next_observations)
        if next_valid is not None:
            next_q = next_q.masked_fill(~next_valid, MASKED)
        next_total = target.q_total(next_observations, next_q.argmax(dim=2))
        return rewards.sum(dim=1) + gamma * (~dones).float() * next_total


def td_loss(totals: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean squared error of Q_tot (N,) of the joint actions taken to the targets (N,)."""
    return (totals - targets).pow(2).mean()
