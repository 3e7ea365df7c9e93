"""The policy's distribution over actions, read from the net's policy head.

A net's policy head is one tensor per row: a Discrete action space's logits, a
MultiDiscrete one's logits of each dimension side by side, or a Box action space's means
followed by their log standard deviations (the PPO paper's Gaussian, whose log-std is a
learned parameter independent of the state; SAC's, squashed into the bounds), or TD3's
deterministic actions squashed into the bounds. Everything that samples,
scores or explains actions (acting, the losses, play) asks the net's ``distribution``, so
an algorithm's loss is written once for both spaces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from a3c.lib.action_masks import masked_any, uniform_valid

HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class Categorical:
    """Discrete actions: the head is the logits."""

    continuous = False

    def sample(self, head: torch.Tensor) -> torch.Tensor:
        """One action per row. Gumbel-max: argmax(logits + G) with G = -log(Exp(1)) is an exact
        sample of softmax(logits), faster on the CPU than ``torch.multinomial`` at the workers'
        batch sizes (docs/performance.md)."""
        exponential_noise = torch.empty_like(head).exponential_()
        return (head - exponential_noise.log()).argmax(dim=-1)

    def greedy(self, head: torch.Tensor) -> torch.Tensor:
        return head.argmax(dim=-1)

    def uniform(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A uniformly random action per row and its log-probability under that uniform choice:
        among the valid actions where the head is masked (``a3c.lib.action_masks``)."""
        if masked_any(head):
            return uniform_valid(head)
        count = head.shape[-1]
        actions = torch.randint(count, head.shape[:-1], device=head.device)
        return actions, torch.full(head.shape[:-1], -math.log(count), device=head.device)

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Each row's log-probability of its action."""
        return F.log_softmax(head, dim=-1).gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self, head: torch.Tensor) -> torch.Tensor:
        """Each row's entropy in nats (ln of the action count when uniform)."""
        log_probs = F.log_softmax(head, dim=-1)
        return -(log_probs.exp() * log_probs).sum(dim=-1)

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        return actions


@dataclass(frozen=True)
class DiagGaussian:
    """Box actions of ``size`` dimensions: the head is the means, then the log-stds. Samples
    are scored as drawn; ``env_actions`` clips them to ``low`` and ``high`` for the env only."""

    size: int
    low: tuple[float, ...]
    high: tuple[float, ...]
    continuous = True

    def _split(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return head[..., :self.size], head[..., self.size:]

    def sample(self, head: torch.Tensor) -> torch.Tensor:
        mean, log_std = self._split(head)
        return mean + log_std.exp() * torch.randn_like(mean)

    def greedy(self, head: torch.Tensor) -> torch.Tensor:
        return self._split(head)[0]

    def uniform(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """An action drawn uniformly within the bounds per row, and its log-density."""
        low = torch.tensor(self.low, device=head.device)
        high = torch.tensor(self.high, device=head.device)
        actions = low + (high - low) * torch.rand(*head.shape[:-1], self.size, device=head.device)
        return actions, torch.full(head.shape[:-1], -float(torch.log(high - low).sum()), device=head.device)

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The sum over dimensions of each normal's log-density at the action."""
        mean, log_std = self._split(head)
        z = (actions - mean) / log_std.exp()
        return (-0.5 * z.pow(2) - log_std - HALF_LOG_TWO_PI).sum(dim=-1)

    def entropy(self, head: torch.Tensor) -> torch.Tensor:
        """Each row's differential entropy: the sum of log std + 1/2 log(2 pi e)."""
        log_std = self._split(head)[1]
        return (log_std + HALF_LOG_TWO_PI + 0.5).sum(dim=-1)

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        return np.clip(actions, np.asarray(self.low, np.float32), np.asarray(self.high, np.float32))

    def _centre_and_half_width(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        low = torch.tensor(self.low, device=like.device)
        high = torch.tensor(self.high, device=like.device)
        return (high + low) / 2, (high - low) / 2

    def squash(self, draws: torch.Tensor) -> torch.Tensor:
        """``draws`` by tanh into the bounds: ``low + (tanh(u) + 1) / 2 * (high - low)``."""
        centre, half_width = self._centre_and_half_width(draws)
        return centre + half_width * torch.tanh(draws)


@dataclass(frozen=True)
class SquashedGaussian(DiagGaussian):
    """Box actions drawn from a Gaussian (the head as ``DiagGaussian``'s) and squashed by tanh
    into [``low``, ``high``] (``squash``), so that samples always lie within the bounds, and
    ``log_prob`` is the density of the squashed action, the Gaussian's corrected by the
    squash's slope (SAC's policy)."""

    def sample_with_log_prob(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparametrised actions (gradients reach the head through them) and their log-densities."""
        draws = super().sample(head)
        return self.squash(draws), self._log_prob_of_draws(head, draws)

    def _log_prob_of_draws(self, head: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
        """log N(u; mean, std) - sum log |d action / d u|, where d action / d u is
        half_width * (1 - tanh(u)^2), and log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))
        without the cancellation of 1 - tanh^2 near the bounds."""
        _, half_width = self._centre_and_half_width(draws)
        slope = (torch.log(half_width) + 2 * (math.log(2.0) - draws - F.softplus(-2 * draws))).sum(dim=-1)
        return super().log_prob(head, draws) - slope

    def sample(self, head: torch.Tensor) -> torch.Tensor:
        return self.squash(super().sample(head))

    def greedy(self, head: torch.Tensor) -> torch.Tensor:
        """The squashed mean."""
        return self.squash(super().greedy(head))

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The log-density of squashed ``actions`` (strictly inside the bounds)."""
        centre, half_width = self._centre_and_half_width(actions)
        draws = torch.atanh(((actions - centre) / half_width).clamp(-1 + 1e-6, 1 - 1e-6))
        return self._log_prob_of_draws(head, draws)

    def entropy(self, head: torch.Tensor) -> torch.Tensor:
        """Not in closed form once squashed: SAC estimates it as minus ``log_prob`` of samples."""
        raise NotImplementedError("a squashed Gaussian's entropy has no closed form")


@dataclass(frozen=True)
class NoisyDeterministic(DiagGaussian):
    """Box actions of a deterministic policy, explored with Gaussian noise (TD3's): the head
    is ``size`` values squashed into the bounds (``squash``) for the greedy action; a sample
    adds noise of std ``noise`` times the bounds' half-width and is clipped to them, so the
    replay holds the action the env got. No density: the learner never scores actions."""

    noise: float = 0.1

    def greedy(self, head: torch.Tensor) -> torch.Tensor:
        return self.squash(head)

    def sample(self, head: torch.Tensor) -> torch.Tensor:
        return self.perturbed(self.greedy(head), self.noise)

    def perturbed(self, actions: torch.Tensor, noise: float, noise_clip: float = math.inf) -> torch.Tensor:
        """``actions`` plus noise of std ``noise`` times the half-width, the noise clipped to
        ``noise_clip`` half-widths, then the sums to the bounds (TD3's target smoothing too)."""
        centre, half_width = self._centre_and_half_width(actions)
        shift = (noise * torch.randn_like(actions)).clamp(-noise_clip, noise_clip) * half_width
        return torch.clamp(actions + shift, centre - half_width, centre + half_width)

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("a deterministic policy's noisy actions have no density it is trained on")

    def entropy(self, head: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("a deterministic policy has no entropy")


@dataclass(frozen=True)
class MultiCategorical:
    """MultiDiscrete actions: one Categorical per dimension, the head their logits side by side
    (``nvec`` of them); log-probabilities and entropies are sums over the dimensions."""

    nvec: tuple[int, ...]
    continuous = False

    def _split(self, head: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.split(head, list(self.nvec), dim=-1)

    def sample(self, head: torch.Tensor) -> torch.Tensor:
        return torch.stack([CATEGORICAL.sample(logits) for logits in self._split(head)], dim=-1)

    def greedy(self, head: torch.Tensor) -> torch.Tensor:
        return torch.stack([logits.argmax(dim=-1) for logits in self._split(head)], dim=-1)

    def uniform(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        draws = [CATEGORICAL.uniform(logits) for logits in self._split(head)]
        return torch.stack([actions for actions, _ in draws], dim=-1), sum(log_probs for _, log_probs in draws)

    def log_prob(self, head: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return sum(CATEGORICAL.log_prob(logits, actions[..., index])
                   for index, logits in enumerate(self._split(head)))

    def entropy(self, head: torch.Tensor) -> torch.Tensor:
        return sum(CATEGORICAL.entropy(logits) for logits in self._split(head))

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        return actions


CATEGORICAL = Categorical()
Distribution = Categorical | DiagGaussian | SquashedGaussian | NoisyDeterministic | MultiCategorical


def policy_distribution(net: nn.Module) -> Distribution:
    """The distribution a net's policy head parametrises: its ``distribution``, else Categorical."""
    return getattr(net, "distribution", CATEGORICAL)
