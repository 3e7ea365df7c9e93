"""DQN's loss as small pure functions: the n-step (Double-)DQN target and the
importance-weighted Huber loss.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def double_dqn_targets(rewards: torch.Tensor, dones: torch.Tensor, steps: torch.Tensor,
                       next_q_online: torch.Tensor, next_q_target: torch.Tensor, gamma: float,
                       double: bool = True) -> torch.Tensor:
    """n-step targets: R + gamma ** steps * Q_target(s', a*) where the episode did not
    terminate. Double DQN takes a* = argmax_a Q_online(s', a) (the online net chooses, the
    target net evaluates); plain DQN a* = argmax_a Q_target(s', a). ``steps`` is the number
    of rewards actually summed (fewer than n where a time limit cut the episode)."""
    chooser = next_q_online if double else next_q_target
    best_actions = chooser.argmax(dim=-1, keepdim=True)
    bootstrap = next_q_target.gather(-1, best_actions).squeeze(-1)
    discounts = gamma ** steps.to(torch.float64)
    return rewards + (discounts.to(rewards.dtype) * bootstrap) * (~dones).to(rewards.dtype)


def weighted_huber_loss(q_taken: torch.Tensor, targets: torch.Tensor,
                        weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The importance-weighted mean Huber loss and the TD errors (target - prediction)."""
    td_errors = targets - q_taken
    losses = F.smooth_l1_loss(q_taken, targets, reduction="none")
    return (weights * losses).mean(), td_errors.detach()
