"""QMIX's nets: one agent Q-network shared by the agents (each observation ends with the
agent's one-hot index, ``a3c.lib.multiagent``), and a mixing network that turns the agents'
chosen Q-values into the team's Q_tot, its weights made by hypernetworks from the global
state and kept non-negative, so that Q_tot rises with every agent's Q (Rashid et al.'s
monotonicity: each agent's greedy action is the team's).

The global state the mixer reads is every agent's observation side by side (the joint
row's whole content); in the two-step game that is the state itself, which its
``with_state`` variant also hands out as "state".
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from a3c.lib.models import on_features


class AgentQ(nn.Module):
    """Q-values of each action from one agent's observation: two hidden layers of 64, or the
    model config's ``fcnet_hiddens`` with its ``fcnet_activation``; over the user's features
    of it where ``features`` makes the model config's ``custom_model`` (``a3c.lib.custom_model``)."""

    def __init__(self, observation_size: int, n_actions: int, hidden: int | Sequence[int] = 64,
                 activation: str = "relu", features: Callable[[], nn.Module] | None = None):
        super().__init__()
        self.net = on_features(features, observation_size, n_actions, hidden, activation)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations.float())


class Mixer(nn.Module):
    """Q_tot = w2 . elu(q @ W1 + b1) + b2, with |W1| and |w2| from hypernetworks of the state
    (non-negative, so dQ_tot/dq_i >= 0) and b1, b2 from it unconstrained (b2 through a hidden
    layer, as in the paper)."""

    def __init__(self, agents: int, state_size: int, embed: int = 32):
        super().__init__()
        self.agents, self.embed = agents, embed
        self.hyper_w1 = nn.Linear(state_size, agents * embed)
        self.hyper_b1 = nn.Linear(state_size, embed)
        self.hyper_w2 = nn.Linear(state_size, embed)
        self.hyper_b2 = nn.Sequential(nn.Linear(state_size, embed), nn.ReLU(), nn.Linear(embed, 1))

    def weights(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The mixing weights W1 (N, agents, embed) and w2 (N, embed), both non-negative."""
        return (self.hyper_w1(states).abs().view(-1, self.agents, self.embed),
                self.hyper_w2(states).abs())

    def forward(self, agent_q: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """Q_tot (N,) of the agents' Q-values (N, agents) in ``states`` (N, state size)."""
        w1, w2 = self.weights(states)
        hidden = F.elu(torch.bmm(agent_q.unsqueeze(1), w1).squeeze(1) + self.hyper_b1(states))
        return (hidden * w2).sum(dim=1) + self.hyper_b2(states).squeeze(1)


class QMIXNet(nn.Module):
    """The agents' shared Q-network and the mixer. As an acting net it maps observations to
    Q-values (the head an epsilon-greedy chooser reads) and zeros for values."""

    def __init__(self, observation_size: int, n_actions: int, agents: int, embed: int = 32,
                 hidden: int | Sequence[int] = 64, activation: str = "relu",
                 features: Callable[[], nn.Module] | None = None):
        super().__init__()
        self.agents, self.n_actions = agents, n_actions
        self.agent_q = AgentQ(observation_size, n_actions, hidden, activation, features)
        self.mixer = Mixer(agents, agents * observation_size, embed)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_values = self.agent_q(observations)
        return q_values, torch.zeros(len(observations), device=q_values.device)

    def joint_q(self, observations: torch.Tensor) -> torch.Tensor:
        """Each agent's Q-values (N, agents, actions) from joint rows' observations (N, agents, size)."""
        rows = observations.shape[0]
        return self.agent_q(observations.reshape(rows * self.agents, -1)).view(rows, self.agents, -1)

    def q_total(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q_tot (N,) of joint actions (N, agents) in joint rows (N, agents, size)."""
        taken = self.joint_q(observations).gather(2, actions.long().unsqueeze(2)).squeeze(2)
        return self.mixer(taken, observations.reshape(len(observations), -1).float())
