"""MADDPG's loss as small pure functions: the straight-through Gumbel-softmax that lets a
critic's gradient reach a discrete actor, the critics' targets from the target actors' actions,
and the joint actions of each agent's actor update.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from a3c.algos.maddpg.nets import MADDPGNet
from a3c.lib.action_masks import MASKED

LOGIT_PENALTY = 1e-3
"""Weight of the actors' mean squared logits (the reference code's), which keeps the
straight-through actions from saturating."""


def straight_through_gumbel(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """A one-hot sample of softmax(logits) whose gradient is that of the relaxed sample
    softmax((logits + Gumbel noise) / temperature): the forward pass acts, the backward pass
    passes the critic's gradient to the logits."""
    gumbels = -torch.empty_like(logits).exponential_().log()
    relaxed = F.softmax((logits + gumbels) / temperature, dim=-1)
    hard = F.one_hot(relaxed.argmax(dim=-1), logits.shape[-1]).to(relaxed.dtype)
    return hard + relaxed - relaxed.detach()


def critic_targets(rewards: torch.Tensor, dones: torch.Tensor, next_q: torch.Tensor,
                   gamma: float) -> torch.Tensor:
    """y_i = r_i + gamma * Q'_i(s', a') where the episode did not terminate, per agent: rewards
    and next_q (N, agents), dones (N,)."""
    return rewards + gamma * (~dones).unsqueeze(1).to(next_q.dtype) * next_q


def target_actions(target_net: MADDPGNet, next_observations: torch.Tensor) -> torch.Tensor:
    """a' of the targets: each target actor's most probable action, one-hot (N, agents, n)."""
    logits, _ = target_net(next_observations)
    return F.one_hot(logits.argmax(dim=-1), target_net.n_actions).float()


def actor_joint_actions(taken: torch.Tensor, agent: int, own: torch.Tensor) -> torch.Tensor:
    """The joint one-hot actions of the actor update for ``agent``: the others' as taken
    (from the replay), its own ``own`` (straight-through, so its gradient flows)."""
    mask = F.one_hot(torch.tensor(agent), taken.shape[1]).to(taken.dtype)[None, :, None]
    return taken * (1 - mask) + own.unsqueeze(1) * mask


def critic_loss(q_values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Each agent's critic's mean squared error to its own targets, summed over the agents:
    ``q_values`` and ``targets`` (N, agents)."""
    return (q_values - targets).pow(2).mean(dim=0).sum()


def actor_loss(logits: torch.Tensor, own_q: torch.Tensor, logit_penalty: float = LOGIT_PENALTY) -> torch.Tensor:
    """-sum over agents of mean Q_i(s, a_i from actor i, the others' actions as taken), plus
    the logits' mean square times ``logit_penalty`` (a masked action's logit counts as 0):
    ``own_q`` (N, agents), each column agent i's critic on the joint actions of its own actor update."""
    kept = logits.masked_fill(logits <= MASKED, 0.0)
    return logit_penalty * kept.pow(2).mean() - own_q.mean(dim=0).sum()
