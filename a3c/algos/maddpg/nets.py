"""MADDPG's nets (Lowe et al. 2017, discrete actions): decentralised actors and a centralised
critic per agent over every agent's observation and action.

Joint tensors are laid out agents second: observations (N, agents, size), actions as one-hot
(N, agents, n_actions), rewards (N, agents).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from a3c.lib.models import mlp, on_features
from a3c.lib.policies import PolicyMap

HIDDEN = 64
"""Units of each of the two hidden layers of actors and critics (the paper's)."""


class Actor(nn.Module):
    """An agent's policy: logits from its own observation (through the user's features of it,
    where ``features`` makes the model config's ``custom_model``). Returns (logits, zeros) so that it
    acts like the actor-critic nets (``a3c.lib.models.evaluate``)."""

    def __init__(self, observation_size: int, n_actions: int, hidden: int | Sequence[int] = HIDDEN,
                 activation: str = "relu", features: Callable[[], nn.Module] | None = None):
        super().__init__()
        self.policy = on_features(features, observation_size, n_actions, hidden, activation)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.policy(observations.float())
        return logits, logits.new_zeros(logits.shape[:-1])


class MADDPGNet(nn.Module):
    """The actors (behind a ``PolicyMap``: ``--policies`` maps agents to them; each with its own
    copy of the user's model where ``features`` makes one) and one critic
    per agent, Q_i(every observation, every action), their MLPs ``hidden`` wide with ``activation``
    (the model config's ``fcnet_hiddens`` and ``fcnet_activation``). ``forward`` is the actors':
    what the workers act with."""

    def __init__(self, observation_size: int, n_actions: int, agent_policies: Sequence[str],
                 hidden: int | Sequence[int] = HIDDEN, activation: str = "relu",
                 features: Callable[[], nn.Module] | None = None):
        super().__init__()
        agents = len(agent_policies)
        self.agents, self.n_actions = agents, n_actions
        self.actors = PolicyMap({name: Actor(observation_size, n_actions, hidden, activation, features)
                                 for name in dict.fromkeys(agent_policies)}, agent_policies)
        self.critics = nn.ModuleList(mlp(agents * (observation_size + n_actions), 1, hidden, activation)
                                     for _ in range(agents))

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.actors(observations)

    def q_values(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Every agent's Q (N, agents) of joint observations (N, agents, size) and one-hot
        actions (N, agents, n_actions)."""
        joint = critic_input(observations, actions)
        return torch.cat([critic(joint) for critic in self.critics], dim=1)

    def q_value(self, agent: int, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Agent ``agent``'s Q (N,)."""
        return self.critics[agent](critic_input(observations, actions)).squeeze(1)


def critic_input(observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """What every critic reads: all observations, then all one-hot actions, in agent order."""
    return torch.cat([observations.flatten(1).float(), actions.flatten(1)], dim=1)
