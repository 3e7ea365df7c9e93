"""QMIX's learner: joint rows into a uniform replay buffer, then per sample one Adam step of
the agent Q-network and the mixer on (Q_tot - y)^2, with y from the target nets
(``a3c.algos.qmix.loss.qmix_targets``), the targets following by Polyak averaging."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from a3c.algos.joint import JointReplayLearner
from a3c.algos.optimizer import clip_and_step, follow, frozen_copy
from a3c.algos.qmix.loss import qmix_targets, td_loss
from a3c.algos.qmix.nets import QMIXNet
from a3c.algos.replay_learner import ReplayFigures
from a3c.lib.action_masks import valid_actions
from a3c.lib.experience import TransitionBatch

if TYPE_CHECKING:

    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


@dataclass
class QMIXStepStats(ReplayFigures):
    """Scalars worth logging about one QMIX step."""

    loss_td: float
    q_total: float
    td_error: float
    grad_norm: float


class QMIXUpdate:
    """One optimizer step of the agent net and the mixer on a joint batch."""

    def __init__(self, net: QMIXNet, lr: float, adam_eps: float, clip_grad: float, gamma: float, tau: float,
                 device: torch.device | str, version_counter: torch.Tensor,
                 action_mask: tuple[int, int] | None = None):
        self.net = net
        self.action_mask = action_mask
        """Where each agent's row holds its action mask (``EnvInfo.action_mask``), if it has one."""
        self.target_net = frozen_copy(net)
        self.optimizer = torch.optim.Adam(net.parameters(), lr=lr, eps=adam_eps)
        self.clip_grad, self.gamma, self.tau = clip_grad, gamma, tau
        self.device = device
        self.version_counter = version_counter

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def step(self, batch: TransitionBatch, weights: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
        def tensor(array: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(array, device=self.device)

        observations = tensor(batch.states).float()
        next_observations = tensor(batch.last_states).float()
        next_valid = None if self.action_mask is None else valid_actions(next_observations, self.action_mask)
        targets = qmix_targets(self.net, self.target_net, tensor(batch.rewards), tensor(batch.dones),
                               next_observations, self.gamma, next_valid)
        totals = self.net.q_total(observations, tensor(batch.actions))
        loss = td_loss(totals, targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = clip_and_step(self.net, self.optimizer, self.clip_grad, float(loss.detach()), self.version_counter)
        follow(self.target_net, self.net, self.tau)
        td_errors = (targets - totals.detach()).abs()
        figures = {"loss_td": float(loss.detach()), "q_total": float(totals.detach().mean()),
                   "td_error": float(td_errors.mean()), "grad_norm": grad_norm}
        return figures, td_errors.cpu().numpy()


class QMIXLearner(JointReplayLearner):
    """The learner side of ``--algo qmix``."""

    stats_type = QMIXStepStats

    def __init__(self, config: Config, net: QMIXNet, version_counter: torch.Tensor, env_info: EnvInfo):
        super().__init__(config, QMIXUpdate(net, config.lr, config.adam_eps, config.clip_grad, config.gamma,
                                            config.tau, torch.device(config.device), version_counter,
                                            env_info.action_mask), env_info)
