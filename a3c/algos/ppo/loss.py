"""PPO's loss terms as small pure functions: the clipped surrogate against the policy that
acted, the value loss (clipped or not) and the figures that tell how far the policy moved."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from a3c.lib.advantages import standardized
from a3c.lib.distributions import CATEGORICAL, Distribution


def clipped_surrogate(log_probs: torch.Tensor, behaviour_log_probs: torch.Tensor, advantages: torch.Tensor,
                      clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Minus the mean of ``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)``, with the
    ratio of the taken actions' probabilities under the net and under the weights that chose
    them; and the ratios, detached."""
    ratios = torch.exp(log_probs - behaviour_log_probs)
    unclipped = ratios * advantages
    clipped = torch.clamp(ratios, 1.0 - clip, 1.0 + clip) * advantages
    return -torch.min(unclipped, clipped).mean(), ratios.detach()


def value_loss(values: torch.Tensor, old_values: torch.Tensor, targets: torch.Tensor,
               clip: float | None) -> torch.Tensor:
    """Mean squared error against ``targets``; with ``clip``, per row the larger of it and the
    error of ``old_values`` moved at most ``clip`` towards ``values`` (a critic kept near the
    values the advantages were computed with)."""
    if clip is None:
        return F.mse_loss(values, targets)
    moved = old_values + torch.clamp(values - old_values, -clip, clip)
    return torch.max((values - targets) ** 2, (moved - targets) ** 2).mean()


@dataclass(frozen=True)
class PPOLossSettings:
    clip: float
    value_clip: bool
    entropy_beta: float
    value_weight: float


@dataclass
class PPOTerms:
    """The loss and the figures worth logging about one minibatch."""

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    policy_entropy: float
    approx_kl: float
    """Mean of ``(ratio - 1) - log ratio``: an estimate of KL(acting policy || net's) that is never negative."""
    clip_fraction: float
    """Share of rows whose ratio lies outside the clip."""


def ppo_loss(head: torch.Tensor, values: torch.Tensor, actions: torch.Tensor,
             behaviour_log_probs: torch.Tensor, advantages: torch.Tensor, old_values: torch.Tensor,
             targets: torch.Tensor, settings: PPOLossSettings,
             distribution: Distribution = CATEGORICAL) -> PPOTerms:
    """Surrogate + ``value_weight`` * value - ``entropy_beta`` * entropy on one minibatch;
    its advantages standardised (``value`` reported unweighted). ``head`` is the net's
    policy head, read by ``distribution`` (logits by default)."""
    taken = distribution.log_prob(head, actions)
    policy, ratios = clipped_surrogate(taken, behaviour_log_probs, standardized(advantages), settings.clip)
    value = value_loss(values, old_values, targets, settings.clip if settings.value_clip else None)
    policy_entropy = distribution.entropy(head).mean()
    entropy = -settings.entropy_beta * policy_entropy
    # from the log-ratios in float64: a Gaussian's ratio can underflow to 0 in float32
    log_ratios = (taken - behaviour_log_probs).detach().double()
    return PPOTerms(
        total=policy + settings.value_weight * value + entropy, policy=policy, value=value, entropy=entropy,
        policy_entropy=float(policy_entropy.detach()),
        approx_kl=float((torch.expm1(log_ratios) - log_ratios).mean()),
        clip_fraction=float(((ratios - 1.0).abs() > settings.clip).float().mean()),
    )
