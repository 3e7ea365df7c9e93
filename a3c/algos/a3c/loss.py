"""A3C's loss terms as small pure functions, each returning a scalar to minimise: the policy
gradient (with V-trace's truncated importance weights where rows are stale), the value
regression and the entropy bonus."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from a3c.lib.advantages import standardized
from a3c.lib.distributions import CATEGORICAL, Distribution


def value_loss(values: torch.Tensor, reference_values: torch.Tensor) -> torch.Tensor:
    """Mean squared error of the critic against the n-step reference values."""
    return F.mse_loss(values, reference_values)


def policy_loss(taken: torch.Tensor, advantages: torch.Tensor,
                weights: torch.Tensor | None = None) -> torch.Tensor:
    """Policy-gradient loss: minus the advantage-weighted log-probability ``taken`` of each
    row's action, each row also times its importance weight where ``weights`` are given.

    ``advantages`` and ``weights`` must carry no gradient, so the critic is trained only by
    the value loss and the weights only scale each row's step.
    """
    if weights is not None:
        advantages = weights * advantages
    return -(advantages * taken).mean()


def truncated_importance_weights(log_probs: torch.Tensor, behaviour_log_probs: torch.Tensor,
                                 rho_bar: float) -> torch.Tensor:
    """IMPALA's ``min(rho_bar, pi(a|s) / mu(a|s))`` per row, detached: ``log_probs`` of the
    taken actions under the learner's policy pi, ``behaviour_log_probs`` under the weights
    that acted, mu. A row whose action the policy has since made rarer counts for less;
    one it made likelier counts at most ``rho_bar`` times, so no stale row dominates."""
    ratios = torch.exp(log_probs.detach().float() - behaviour_log_probs.float())
    return torch.clamp(ratios, max=rho_bar)




def entropy_loss(entropies: torch.Tensor, entropy_beta: float) -> torch.Tensor:
    """-beta * the rows' mean entropy: minimising it keeps the policy exploring."""
    return -entropy_beta * entropies.mean()


@dataclass(frozen=True)
class LossSettings:
    """What the actor-critic loss needs besides the net and the batch."""

    gamma: float
    entropy_beta: float
    value_weight: float = 1.0
    bf16: bool = False
    """Run the forward pass under bfloat16 autocast (weights, gradients, loss stay float32)."""
    normalize_advantages: bool = False
    """Scale each batch's advantages to zero mean and unit deviation before the policy term
    (off by default: on Pong it sped the start and then collapsed the policy, docs/learning.md)."""
    rho_bar: float | None = None
    """Weigh each row's policy-gradient term by ``min(rho_bar, pi/mu)`` (rows must carry the
    acting policy's log-probabilities); None: every row weighs 1, as on-policy A2C does."""
    seq_len: int = 20
    """A recurrent net's sequences: the most steps backpropagated through (``a3c.lib.recurrent``)."""


@dataclass
class LossTerms:
    """The loss and the quantities worth logging about it."""

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    advantages: torch.Tensor
    policy_entropy: torch.Tensor
    """The policy's mean entropy in nats (ln of the action count when uniform), detached."""
    importance_weights: torch.Tensor | None = None
    """Each row's truncated importance weight, where the policy term had them."""


def a2c_loss(
    head: torch.Tensor,
    values: torch.Tensor,
    actions: torch.Tensor,
    reference_values: torch.Tensor,
    entropy_beta: float,
    value_weight: float = 1.0,
    normalize_advantages: bool = False,
    behaviour_log_probs: torch.Tensor | None = None,
    rho_bar: float = 1.0,
    distribution: Distribution = CATEGORICAL,
) -> LossTerms:
    """Policy + ``value_weight`` * value + entropy, with advantage = reference - V(s)
    detached (``normalize_advantages``: standardised over the batch, so the policy term's
    scale no longer follows the rewards' or the critic's error). With
    ``behaviour_log_probs`` each row's policy term is weighted by
    ``truncated_importance_weights`` at ``rho_bar``. ``value`` is reported unweighted, so
    runs with other weights compare; ``advantages`` as they entered the policy term.
    ``head`` is the net's policy head, read by ``distribution`` (logits by default)."""
    taken = distribution.log_prob(head, actions)
    entropies = distribution.entropy(head)
    advantages = (reference_values - values).detach()
    if normalize_advantages:
        advantages = standardized(advantages)
    weights = None
    if behaviour_log_probs is not None:
        weights = truncated_importance_weights(taken, behaviour_log_probs, rho_bar)
    policy = policy_loss(taken, advantages, weights)
    value = value_loss(values, reference_values)
    entropy = entropy_loss(entropies, entropy_beta)
    policy_entropy = entropies.mean().detach()
    return LossTerms(policy + value_weight * value + entropy, policy, value, entropy, advantages,
                     policy_entropy, weights)
