"""QMIX: agents act epsilon-greedy on a shared Q-network; the learner trains the agents'
chosen Q-values through a monotonic mixing network into the team's Q_tot, towards the
team reward plus the target mixer's value of the next joint greedy action."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a3c.algos.joint import JointRowsAlgorithm
from a3c.algos.qmix.settings import PRESET, QMIXSettings
from a3c.model_config import mlp_shape
from a3c.options import ConfigError
from a3c.schedules import parse_epsilon_schedule

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.qmix.learner import QMIXLearner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class QMIX(JointRowsAlgorithm):
    name = "qmix"
    summary = ("monotonic value factorisation: per-agent Q-nets mixed into the team's Q by a network "
               "of the global state; replay, epsilon-greedy, target nets")
    settings = QMIXSettings
    preset = PRESET

    def check(self, config: Config, atari: bool) -> None:
        super().check(config, atari)
        try:
            if parse_epsilon_schedule(config.epsilon_schedule) is None:
                raise ValueError("QMIX explores by the schedule; give one")
        except ValueError as error:
            raise ConfigError(f"--epsilon-schedule {config.epsilon_schedule!r}: {error}") from None

    def build_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        """The agents' shared Q-network and the mixer, in one module, its Q-values masked where
        the agents observe an action mask."""
        from a3c.algos.qmix.nets import QMIXNet
        from a3c.lib.custom_model import features_maker

        net = QMIXNet(env_info.observation_shape[0], env_info.n_actions, len(env_info.agents),
                      settings.get("mixing_embed") or 32, *mlp_shape(settings, 64), features_maker(env_info, settings))
        return self.masked(net, env_info)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        from a3c.algos.dqn.acting import ScheduledEpsilonGreedy
        from a3c.lib.envs import run_frames_per_step

        chooser = ScheduledEpsilonGreedy(parse_epsilon_schedule(config.epsilon_schedule),
                                         run_frames_per_step(config) // config.envs_per_process)
        return {**super().acting_options(config, worker_id), "choose_actions": chooser}

    def play_actions(self, head: torch.Tensor, greedy: bool, distribution: Any) -> torch.Tensor:
        """Greedy on each agent's Q-values, always."""
        return head.argmax(dim=-1)

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> QMIXLearner:
        from a3c.algos.qmix.learner import QMIXLearner

        return QMIXLearner(config, net, version_counter, env_info)
