"""DQN's Q-networks, dueling or plain. A Q-network maps observations to one value per action; its
``forward`` returns ``(q_values, max_q)`` so that it acts where an actor-critic does (the first
output chooses the action, the second is a state value): the same actors and play code serve both.
"""
from __future__ import annotations

import torch
from torch import nn

from a3c.lib.envs import EnvInfo
from a3c.lib.models import (
    ObservationEncoder,
    conv_body,
    init_relu_layers,
    observation_encoder,
    scaled_channels_last,
)


class QHead(nn.Module):
    """Q-values from features: dueling (V(s) + A(s, a) - mean_a A(s, a), Wang et al. 2016)
    or one linear layer per action value."""

    def __init__(self, features: int, n_actions: int, hidden: int, dueling: bool):
        super().__init__()
        self.dueling = dueling
        if dueling:
            self.advantage = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))
            self.value = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        else:
            self.q = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, n_actions))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if not self.dueling:
            return self.q(features)
        advantages = self.advantage(features)
        return self.value(features) + advantages - advantages.mean(dim=-1, keepdim=True)


class MlpQ(nn.Module):
    """Q-network for vector observations: one hidden layer, then the Q head; rows that hold
    an env's images read them through an ``ObservationEncoder`` first (``encoder``)."""

    def __init__(self, observation_size: int, n_actions: int, dueling: bool = True, hidden: int = 128,
                 encoder: ObservationEncoder | None = None):
        super().__init__()
        features = observation_size if encoder is None else encoder.size
        layer = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.body = layer if encoder is None else nn.Sequential(encoder, layer)
        self.head = QHead(hidden, n_actions, hidden, dueling)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = self.head(self.body(observations.float()))
        return q_values, q_values.max(dim=-1).values


class AtariQ(nn.Module):
    """Q-network for Atari frames: the Nature-CNN conv body that ``AtariA2C`` has (initialised
    orthogonally, channels-last), then the Q head with 512 hidden units."""

    def __init__(self, input_shape: tuple[int, ...], n_actions: int, dueling: bool = True):
        super().__init__()
        self.conv, features, _ = conv_body("nature", input_shape)
        init_relu_layers(self.conv)
        self.conv.to(memory_format=torch.channels_last)
        self.head = QHead(features, n_actions, 512, dueling)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = self.head(self.conv(scaled_channels_last(observations)))
        return q_values, q_values.max(dim=-1).values


def build_q_net(env_info: EnvInfo, dueling: bool = True) -> nn.Module:
    if env_info.atari:
        return AtariQ(env_info.observation_shape, env_info.n_actions, dueling)
    return MlpQ(env_info.observation_shape[0], env_info.n_actions, dueling, encoder=observation_encoder(env_info))
