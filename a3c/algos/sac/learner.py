"""SAC's learner: n-step rows into a uniform replay buffer, then per sample one step of the
twin critics (towards the soft targets of the target critics), of the actor (up the smaller
critic's Q of its own reparametrised action, less the temperature times its log-density)
and of the temperature (towards the target entropy); the target critics follow by Polyak
averaging."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from a3c.algos.optimizer import follow, frozen_copy, step_parts
from a3c.algos.replay_learner import ActorCriticFigures, UniformReplayLearner
from a3c.algos.sac.loss import actor_loss, soft_targets, temperature_loss, twin_critic_loss
from a3c.algos.sac.nets import SACNet, critic_values
from a3c.lib.experience import TransitionBatch

if TYPE_CHECKING:
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


@dataclass(kw_only=True)
class SACStepStats(ActorCriticFigures):
    """Scalars worth logging about one SAC step."""

    loss_temperature: float
    temperature: float
    entropy: float
    """Minus the mean log-density of the actor's fresh actions: what the temperature steers."""


class SACUpdate:
    """The optimizer step on one batch: one Adam over the actor, the critics and the
    temperature (a parameter group each), each part moved by its own loss only
    (``a3c.algos.optimizer.step_parts``). A ``temperature`` given is used as it is; else the net's
    learned one. ``target_net`` holds the target critics."""

    def __init__(self, net: SACNet, lr: float, adam_eps: float, clip_grad: float, gamma: float, tau: float,
                 target_entropy: float, temperature: float | None, device: torch.device | str,
                 version_counter: torch.Tensor):
        self.net = net
        self.target_net = frozen_copy(net.critics)
        self.actor_parameters = list(net.actor.parameters())
        self.critic_parameters = list(net.critics.parameters())
        self.fixed_temperature = temperature
        groups = [{"params": self.actor_parameters}, {"params": self.critic_parameters}]
        if temperature is None:
            groups.append({"params": [net.log_temperature]})
        else:
            net.log_temperature.requires_grad_(False)
        self.optimizer = torch.optim.Adam(groups, lr=lr, eps=adam_eps)
        self.clip_grad, self.gamma, self.tau, self.target_entropy = clip_grad, gamma, tau, target_entropy
        self.device = device
        self.version_counter = version_counter

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def targets(self, batch: TransitionBatch, temperature: float) -> torch.Tensor:
        """The soft targets of ``batch``, without gradient."""
        with torch.no_grad():
            next_observations = torch.as_tensor(batch.last_states, device=self.device)
            head, _ = self.net(next_observations)
            next_actions, next_log_probs = self.net.distribution.sample_with_log_prob(head)
            next_q = critic_values(self.target_net, next_observations, next_actions)
            return soft_targets(torch.as_tensor(batch.rewards, device=self.device),
                                torch.as_tensor(batch.dones, device=self.device),
                                torch.as_tensor(batch.steps, device=self.device), next_q, next_log_probs,
                                temperature, self.gamma)

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
        """One step of the three losses; its figures and |y - Q_1| (for the priorities).
        Raises NonFiniteLoss (``a3c.algos.optimizer``), applying nothing, for a non-finite loss or norm."""
        net = self.net
        learned = self.fixed_temperature is None
        temperature = float(net.log_temperature.detach().exp()) if learned else self.fixed_temperature
        observations = torch.as_tensor(batch.states, device=self.device)
        targets = self.targets(batch, temperature)
        q_values = net.q_values(observations, torch.as_tensor(batch.actions, device=self.device))
        loss_critic = twin_critic_loss(q_values, targets)

        head, _ = net(observations)
        actions, log_probs = net.distribution.sample_with_log_prob(head)
        loss_actor = actor_loss(log_probs, net.q_values(observations, actions), temperature)
        loss_temperature = temperature_loss(net.log_temperature, log_probs, self.target_entropy)
        parts = [(loss_critic, self.critic_parameters), (loss_actor, self.actor_parameters)]
        if learned:
            parts.append((loss_temperature, [net.log_temperature]))
        norm_critic, norm_actor, *_ = step_parts(self.optimizer, parts, self.clip_grad, self.version_counter)
        follow(self.target_net, net.critics, self.tau)
        td_errors = (targets - q_values[:, 0].detach()).abs()
        figures = {"loss_critic": float(loss_critic.detach()), "loss_actor": float(loss_actor.detach()),
                   "loss_temperature": float(loss_temperature.detach()), "temperature": temperature,
                   "entropy": float(-log_probs.detach().mean()), "q_values": float(q_values.detach().mean()),
                   "td_error": float(td_errors.mean()), "grad_norm": norm_actor, "grad_norm_critic": norm_critic}
        return figures, td_errors.cpu().numpy()


class SACLearner(UniformReplayLearner):
    """The learner side of ``--algo sac``: a uniform replay buffer of Box actions."""

    stats_type = SACStepStats

    def __init__(self, config: Config, net: SACNet, version_counter: torch.Tensor, env_info: EnvInfo):
        target_entropy = -float(env_info.n_actions) if config.target_entropy is None else config.target_entropy
        super().__init__(config, SACUpdate(net, config.lr, config.adam_eps, config.clip_grad, config.gamma,
                                           config.tau, target_entropy, config.temperature,
                                           torch.device(config.device), version_counter), env_info)
