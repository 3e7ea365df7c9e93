"""TD3's learner: n-step rows into a uniform replay buffer, then per sample one step of the
twin critics towards r + gamma^n (1 - done) min Q'(s', a'), a' the target actor's action
with clipped noise added (target policy smoothing), and every ``policy_delay`` steps one of
the actor up Q_1(s, actor(s)), after which the target actor and critics follow by Polyak
averaging."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from a3c.algos.optimizer import follow, frozen_copy, step_parts
from a3c.algos.replay_learner import ActorCriticFigures, UniformReplayLearner
from a3c.algos.sac.loss import soft_targets, twin_critic_loss
from a3c.algos.sac.nets import ActorAndTwinCritics, critic_values
from a3c.algos.td3.loss import deterministic_actor_loss
from a3c.lib.experience import TransitionBatch

if TYPE_CHECKING:
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class TD3Update:
    """The optimizer step on one batch: one Adam over the actor and the critics (a parameter
    group each), the critics moved by theirs every step, the actor by its own loss every
    ``policy_delay``-th (``a3c.algos.optimizer.step_parts``). ``target_net`` holds the target actor
    and critics."""

    def __init__(self, net: ActorAndTwinCritics, lr: float, adam_eps: float, clip_grad: float, gamma: float,
                 tau: float, policy_noise: float, noise_clip: float, policy_delay: int,
                 device: torch.device | str, version_counter: torch.Tensor):
        self.net = net
        self.target_net = frozen_copy(nn.ModuleDict({"actor": net.actor, "critics": net.critics}))
        self.actor_parameters = list(net.actor.parameters())
        self.critic_parameters = list(net.critics.parameters())
        self.optimizer = torch.optim.Adam([{"params": self.actor_parameters}, {"params": self.critic_parameters}],
                                          lr=lr, eps=adam_eps)
        self.clip_grad, self.gamma, self.tau = clip_grad, gamma, tau
        self.policy_noise, self.noise_clip, self.policy_delay = policy_noise, noise_clip, policy_delay
        self.device = device
        self.version_counter = version_counter
        self.last_actor = (0.0, 0.0)
        """The last actor step's loss (minus Q_1 of its actions) and gradient norm, reported
        with each critic step until the next."""

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def targets(self, batch: TransitionBatch) -> torch.Tensor:
        """The critics' targets of ``batch``, without gradient: SAC's soft targets at
        temperature 0, from the target actor's smoothed actions."""
        with torch.no_grad():
            next_observations = torch.as_tensor(batch.last_states, device=self.device)
            distribution = self.net.distribution
            next_actions = distribution.perturbed(distribution.greedy(self.target_net["actor"](next_observations.float())),
                                                  self.policy_noise, self.noise_clip)
            next_q = critic_values(self.target_net["critics"], next_observations, next_actions)
            rewards = torch.as_tensor(batch.rewards, device=self.device)
            return soft_targets(rewards, torch.as_tensor(batch.dones, device=self.device),
                                torch.as_tensor(batch.steps, device=self.device), next_q,
                                torch.zeros_like(rewards), 0.0, self.gamma)

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
        """One critic step, with an actor step and the targets' every ``policy_delay``-th; its
        figures and |y - Q_1| (for the priorities). Raises NonFiniteLoss (``a3c.algos.optimizer``),
        applying nothing, for a non-finite loss or norm."""
        net = self.net
        observations = torch.as_tensor(batch.states, device=self.device)
        targets = self.targets(batch)
        q_values = net.q_values(observations, torch.as_tensor(batch.actions, device=self.device))
        loss_critic = twin_critic_loss(q_values, targets)
        parts = [(loss_critic, self.critic_parameters)]
        actor_step = (self.policy_version + 1) % self.policy_delay == 0  # every critic step is a version
        if actor_step:
            head, _ = net(observations)
            loss_actor = deterministic_actor_loss(net.q_values(observations, net.distribution.greedy(head)))
            parts.append((loss_actor, self.actor_parameters))
        norm_critic, *norm_actor = step_parts(self.optimizer, parts, self.clip_grad, self.version_counter)
        if actor_step:
            self.last_actor = (float(loss_actor.detach()), norm_actor[0])
            follow(self.target_net["actor"], net.actor, self.tau)
            follow(self.target_net["critics"], net.critics, self.tau)
        td_errors = (targets - q_values[:, 0].detach()).abs()
        figures = {"loss_critic": float(loss_critic.detach()), "loss_actor": self.last_actor[0],
                   "q_values": float(q_values.detach().mean()), "td_error": float(td_errors.mean()),
                   "grad_norm": self.last_actor[1], "grad_norm_critic": norm_critic}
        return figures, td_errors.cpu().numpy()


class TD3Learner(UniformReplayLearner):
    """The learner side of ``--algo td3``: a uniform replay buffer of Box actions."""

    stats_type = ActorCriticFigures

    def __init__(self, config: Config, net: ActorAndTwinCritics, version_counter: torch.Tensor, env_info: EnvInfo):
        super().__init__(config, TD3Update(net, config.lr, config.adam_eps, config.clip_grad, config.gamma,
                                           config.tau, config.policy_noise, config.noise_clip, config.policy_delay,
                                           torch.device(config.device), version_counter), env_info)
