"""MADDPG's learner: joint rows into a uniform replay buffer, then per sample one step of
every agent's critic (towards r_i + gamma Q'_i(s', a') with the target actors' a') and of
every actor (up the gradient of its agent's critic through a straight-through Gumbel-softmax
action, the other agents' actions as taken), and Polyak-averaged target nets."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from a3c.algos.joint import JointReplayLearner
from a3c.algos.maddpg.loss import (
    actor_joint_actions,
    actor_loss,
    critic_loss,
    critic_targets,
    straight_through_gumbel,
    target_actions,
)
from a3c.algos.maddpg.nets import MADDPGNet
from a3c.algos.optimizer import follow, frozen_copy, step_parts
from a3c.algos.replay_learner import ActorCriticFigures
from a3c.lib.experience import TransitionBatch

if TYPE_CHECKING:

    from a3c.config import Config
    from a3c.lib.envs import EnvInfo

class MADDPGUpdate:
    """The nets' optimizer step on one joint batch: Adam over actors and critics (one
    parameter group each, clipped apart), the targets following by Polyak averaging."""

    def __init__(self, net: MADDPGNet, lr: float, adam_eps: float, clip_grad: float, gamma: float, tau: float,
                 temperature: float, device: torch.device | str, version_counter: torch.Tensor):
        self.net = net
        self.target_net = frozen_copy(net)
        self.actor_parameters = list(net.actors.parameters())
        self.critic_parameters = list(net.critics.parameters())
        self.optimizer = torch.optim.Adam([{"params": self.actor_parameters}, {"params": self.critic_parameters}],
                                          lr=lr, eps=adam_eps)
        self.clip_grad, self.gamma, self.tau, self.temperature = clip_grad, gamma, tau, temperature
        self.device = device
        self.version_counter = version_counter

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def targets(self, batch: TransitionBatch) -> torch.Tensor:
        """y (N, agents) of the critics, without gradient."""
        with torch.no_grad():
            next_observations = torch.as_tensor(batch.last_states, device=self.device)
            next_q = self.target_net.q_values(next_observations, target_actions(self.target_net, next_observations))
            return critic_targets(torch.as_tensor(batch.rewards, device=self.device),
                                  torch.as_tensor(batch.dones, device=self.device), next_q, self.gamma)

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
        net = self.net
        observations = torch.as_tensor(batch.states, device=self.device)
        taken = F.one_hot(torch.as_tensor(batch.actions, device=self.device), net.n_actions).float()
        targets = self.targets(batch)
        q_values = net.q_values(observations, taken)
        loss_critic = critic_loss(q_values, targets)
        logits, _ = net(observations)
        own = straight_through_gumbel(logits, self.temperature)
        own_q = torch.stack([net.q_value(agent, observations, actor_joint_actions(taken, agent, own[:, agent]))
                             for agent in range(net.agents)], dim=1)
        loss_actor = actor_loss(logits, own_q)
        norm_critic, norm_actor = step_parts(self.optimizer, [(loss_critic, self.critic_parameters),
                                                              (loss_actor, self.actor_parameters)],
                                             self.clip_grad, self.version_counter)
        losses = (float(loss_critic.detach()), float(loss_actor.detach()))
        follow(self.target_net, net, self.tau)
        td_errors = (targets - q_values.detach()).abs().mean(dim=1)
        figures = {"loss_critic": losses[0], "loss_actor": losses[1], "q_values": float(q_values.detach().mean()),
                   "td_error": float(td_errors.mean()), "grad_norm": norm_actor, "grad_norm_critic": norm_critic}
        return figures, td_errors.cpu().numpy()


class MADDPGLearner(JointReplayLearner):
    """The learner side of ``--algo maddpg``."""

    stats_type = ActorCriticFigures

    def __init__(self, config: Config, net: MADDPGNet, version_counter: torch.Tensor, env_info: EnvInfo):
        super().__init__(config, MADDPGUpdate(net, config.lr, config.adam_eps, config.clip_grad, config.gamma,
                                              config.tau, config.gumbel_temperature, torch.device(config.device),
                                              version_counter), env_info)
