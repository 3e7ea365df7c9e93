"""Soft actor-critic's net (Haarnoja et al. 2018): a tanh-squashed Gaussian policy
(``a3c.lib.distributions.SquashedGaussian``) with its log-stds clamped to ``LOG_STD_RANGE``, twin Q
critics over observation and action, and the learned temperature. TD3 (``a3c.algos.td3``)
builds on the same actor and twin critics with a deterministic actor.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from a3c.lib.custom_model import CustomFeatures
from a3c.lib.distributions import DiagGaussian, SquashedGaussian
from a3c.lib.models import on_features

LOG_STD_RANGE = (-5.0, 2.0)
"""The log-stds the actor may give (CleanRL's and SB3's bounds): wider, and the squashed
log-densities of a near-deterministic policy overflow."""


HIDDEN = 256
"""Units of each of the two hidden layers of the actor and of each critic (the paper's)."""


class ActorAndTwinCritics(nn.Module):
    """An actor (observation to ``head_size`` values of ``distribution``'s policy head) and
    twin critics (observation and action to Q), separate MLPs: SAC's net and TD3's. ``hidden``
    and ``activation`` are the model config's ``fcnet_hiddens`` and ``fcnet_activation``.
    ``features`` makes the model config's custom model, one for the actor and one for each
    critic (``FeaturesThen``).
    ``forward`` gives (policy head, zeros), as the actor-critic nets act
    (``a3c.lib.models.evaluate``): the critics serve the learner only."""

    def __init__(self, observation_size: int, distribution: DiagGaussian, head_size: int,
                 hidden: int | Sequence[int] = HIDDEN, activation: str = "relu",
                 features: Callable[[], CustomFeatures] | None = None):
        super().__init__()
        self.distribution = distribution
        self.actor = on_features(features, observation_size, head_size, hidden, activation)
        self.critics = nn.ModuleList(on_features(features, observation_size, 1, hidden, activation, distribution.size)
                                     for _ in range(2))

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        head = self.actor(observations.float())
        return head, head.new_zeros(head.shape[:-1])

    def q_values(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """(N, 2): each critic's Q(observation, action)."""
        return critic_values(self.critics, observations, actions)


class SACNet(ActorAndTwinCritics):
    """The actor gives the means and log-stds of a ``SquashedGaussian``;
    ``log_temperature`` is the entropy temperature's log, learned with the rest from 1."""

    def __init__(self, observation_size: int, distribution: SquashedGaussian, hidden: int | Sequence[int] = HIDDEN,
                 activation: str = "relu", features: Callable[[], CustomFeatures] | None = None):
        super().__init__(observation_size, distribution, 2 * distribution.size, hidden, activation, features)
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        head, zeros = super().forward(observations)
        mean, log_std = head.chunk(2, dim=-1)
        return torch.cat([mean, log_std.clamp(*LOG_STD_RANGE)], dim=-1), zeros


def critic_values(critics: nn.ModuleList, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """(N, critics): each of ``critics``' Q(observation, action), the net's or their target copies'."""
    inputs = torch.cat([observations.float(), actions], dim=-1)
    return torch.cat([critic(inputs) for critic in critics], dim=-1)
