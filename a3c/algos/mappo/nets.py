"""MAPPO's net: each agent's policy on its own observation, the value on every agent's."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from a3c.lib.models import mlp


class CentralCriticMlp(nn.Module):
    """A policy MLP on an agent's own observation and one-hot index (the last ``own_size``
    features of a row) and a value MLP on the whole row, whose front holds every agent's
    observation (``a3c.lib.multiagent.with_global_state``): MAPPO's centralised critic. A row of
    ``own_size`` features alone (acting outside the workers: play, ``compute_action``) gets
    the policy and zeros for values, which acting does not read. ``hidden`` and ``activation``
    are the model config's ``fcnet_hiddens`` and ``fcnet_activation`` (two layers of 128, ReLU).

    With ``features`` (the model config's ``custom_model``, ``a3c.lib.custom_model``), the
    policy reads the user's features of the agent's own observation in place of it, and the
    value reads them beside every agent's observation."""

    def __init__(self, own_size: int, global_size: int, n_actions: int, hidden: int | Sequence[int] = 128,
                 activation: str = "relu", features: nn.Module | None = None):
        super().__init__()
        self.own_size, self.global_size = own_size, global_size
        self.features = features
        width = own_size if features is None else features.size
        self.policy = mlp(width, n_actions, hidden, activation)
        self.value = mlp(global_size + width, 1, hidden, activation)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        observations = observations.float()
        own = observations[:, -self.own_size:] if self.features is None else self.features(observations)
        head = self.policy(own)
        if observations.shape[1] == self.own_size:
            return head, torch.zeros(len(observations), device=observations.device)
        return head, self.value(torch.cat([observations[:, :self.global_size], own], dim=1)).squeeze(-1)
