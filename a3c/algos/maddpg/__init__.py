"""MADDPG on a multi-agent env: workers act with each agent's actor on its own observation
(sampling its softmax) and send one row per env step with every agent's observation, action
and reward; the learner trains a critic per agent on all of them from a replay buffer, and
each actor through its critic (centralised training, decentralised acting)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a3c.algos.joint import JointRowsAlgorithm
from a3c.algos.maddpg.settings import PRESET, MADDPGSettings
from a3c.model_config import mlp_shape
from a3c.options import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.maddpg.learner import MADDPGLearner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class MADDPG(JointRowsAlgorithm):
    name = "maddpg"
    summary = ("multi-agent DDPG: each agent's actor sees its own observation, its critic every "
               "agent's observation and action; replay, Gumbel-softmax actions, target nets")
    settings = MADDPGSettings
    preset = PRESET

    def check(self, config: Config, atari: bool) -> None:
        super().check(config, atari)
        if config.tau == 0:
            raise ConfigError("--tau of --algo maddpg must be > 0: its target nets follow by Polyak averaging")

    def build_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        """Actors per ``--policies`` and a critic per agent, in one module, the actors' logits
        masked where the agents observe an action mask (the learner's actions too: the target
        actors' and the straight-through ones)."""
        from a3c.algos.maddpg.nets import HIDDEN, MADDPGNet
        from a3c.lib.custom_model import features_maker
        from a3c.lib.policies import PER_AGENT, parse_policy_mapping

        agent_policies = parse_policy_mapping(settings.get("policies") or PER_AGENT, env_info.agents)
        net = MADDPGNet(env_info.observation_shape[0], env_info.n_actions, agent_policies, *mlp_shape(settings, HIDDEN),
                        features_maker(env_info, settings))
        return self.masked(net, env_info)

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> MADDPGLearner:
        from a3c.algos.maddpg.learner import MADDPGLearner

        return MADDPGLearner(config, net, version_counter, env_info)
