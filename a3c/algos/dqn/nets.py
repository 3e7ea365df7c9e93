"""DQN's Q-networks, dueling or plain. A Q-network maps observations to one value per action; its
``forward`` returns ``(q_values, max_q)`` so that it acts where an actor-critic does (the first
output chooses the action, the second is a state value): the same actors and play code serve both.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from a3c.lib.custom_model import CustomFeatures, custom_features
from a3c.lib.envs import EnvInfo
from a3c.lib.models import (
    ACTIVATIONS,
    ObservationEncoder,
    conv_body,
    hidden_layers,
    init_relu_layers,
    observation_encoder,
    scaled_channels_last,
)


class QHead(nn.Module):
    """Q-values from features: dueling (V(s) + A(s, a) - mean_a A(s, a), Wang et al. 2016)
    or one linear layer per action value."""

    def __init__(self, features: int, n_actions: int, hidden: int, dueling: bool, activation: str = "relu"):
        super().__init__()
        self.dueling = dueling

        def stream(outputs: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(features, hidden), ACTIVATIONS[activation](), nn.Linear(hidden, outputs))

        if dueling:
            self.advantage, self.value = stream(n_actions), stream(1)
        else:
            self.q = stream(n_actions)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if not self.dueling:
            return self.q(features)
        advantages = self.advantage(features)
        return self.value(features) + advantages - advantages.mean(dim=-1, keepdim=True)


def q_head(features: int, hiddens: Sequence[int], n_actions: int, dueling: bool, activation: str) -> QHead:
    """The Q head over hidden layers of all but the last of ``hiddens`` (on ``features``): its
    own hidden layer is that last one."""
    return QHead(hiddens[-2] if len(hiddens) > 1 else features, n_actions, hiddens[-1], dueling, activation)


VECTOR_HIDDENS = (128, 128)
"""The vector Q-network's hidden widths: the body's layers, then the Q head's hidden layer."""


class MlpQ(nn.Module):
    """Q-network for vector observations: hidden layers, the last of them the Q head's
    (``hiddens``, the model config's ``fcnet_hiddens``); rows that hold an env's images read
    them through an ``ObservationEncoder`` first (``encoder``), or the model config's custom model
    reads the observations (``a3c.lib.custom_model``)."""

    def __init__(self, observation_size: int, n_actions: int, dueling: bool = True,
                 hiddens: Sequence[int] = VECTOR_HIDDENS, encoder: ObservationEncoder | CustomFeatures | None = None,
                 activation: str = "relu"):
        super().__init__()
        features = observation_size if encoder is None else encoder.size
        layer = hidden_layers(features, hiddens[:-1], activation)
        self.body = layer if encoder is None else nn.Sequential(encoder, layer)
        self.head = q_head(features, hiddens, n_actions, dueling, activation)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = self.head(self.body(observations.float()))
        return q_values, q_values.max(dim=-1).values


class AtariQ(nn.Module):
    """Q-network for Atari frames: the Nature-CNN conv body that ``AtariA2C`` has (initialised
    orthogonally, channels-last), then the Q head with 512 hidden units (the model config's
    ``conv_filters`` and ``fcnet_hiddens`` replace them)."""

    def __init__(self, input_shape: tuple[int, ...], n_actions: int, dueling: bool = True,
                 filters: Sequence[tuple] | None = None, hiddens: Sequence[int] | None = None,
                 activation: str = "relu"):
        super().__init__()
        self.conv, features, hidden = conv_body("nature", input_shape, filters)
        hiddens = [hidden] if hiddens is None else list(hiddens)
        self.body = hidden_layers(features, hiddens[:-1], activation)
        init_relu_layers([*self.conv, *self.body])
        self.conv.to(memory_format=torch.channels_last)
        self.head = q_head(features, hiddens, n_actions, dueling, activation)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = self.head(self.body(self.conv(scaled_channels_last(observations))))
        return q_values, q_values.max(dim=-1).values


def build_q_net(env_info: EnvInfo, dueling: bool = True, model: Mapping[str, Any] | None = None) -> nn.Module:
    """The Q-network for ``env_info``'s observations, shaped by ``model`` (RLlib's keys, checked)."""
    model = model or {}
    hiddens, filters = model.get("fcnet_hiddens"), model.get("conv_filters")
    activation = model.get("fcnet_activation", "relu")
    custom = custom_features(env_info, model)
    if env_info.atari and custom is None:
        return AtariQ(env_info.observation_shape, env_info.n_actions, dueling, filters, hiddens, activation)
    return MlpQ(env_info.observation_shape[0], env_info.n_actions, dueling, hiddens or VECTOR_HIDDENS,
                custom or observation_encoder(env_info, filters=filters), activation)
