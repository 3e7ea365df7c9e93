"""MADDPG on a multi-agent env: workers act with each agent's actor on its own observation
(sampling its softmax) and send one row per env step with every agent's observation, action
and reward; the learner trains a critic per agent on all of them from a replay buffer, and
each actor through its critic (centralised training, decentralised acting)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a3c.algos.base import Algorithm, shown_value
from a3c.algos.maddpg.settings import PRESET, MADDPGSettings
from a3c.settings import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.maddpg.learner import MADDPGLearner
    from a3c.config import Config
    from lib.envs import EnvInfo


class MADDPG(Algorithm):
    name = "maddpg"
    summary = ("multi-agent DDPG: each agent's actor sees its own observation, its critic every "
               "agent's observation and action; replay, Gumbel-softmax actions, target nets")
    settings = MADDPGSettings
    sends_last_states = True

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(PRESET)

    def defaults_help(self, name: str) -> str | None:
        """One value: MADDPG runs on vector observations only."""
        return None if PRESET.get(name) is None else shown_value(PRESET[name])

    def check(self, config: Config, atari: bool) -> None:
        if atari:
            raise ConfigError("--algo maddpg is for multi-agent envs with vector observations")
        if config.reward_steps != 1:
            raise ConfigError("--reward-steps of --algo maddpg is 1: its critics bootstrap every step")
        if config.tau == 0:
            raise ConfigError("--tau of --algo maddpg must be > 0: its target nets follow by Polyak averaging")

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        if not env_info.agents:
            raise ConfigError(f"--algo maddpg needs a multi-agent env (TwoStepGame, or a PettingZoo parallel "
                              f"env such as mpe2.simple_spread_v3); {config.env_id} has one agent")

    def build_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        """Actors per ``--policies`` and a critic per agent, in one module."""
        from lib.maddpg import MADDPGNet
        from lib.policies import PER_AGENT, parse_policy_mapping

        agent_policies = parse_policy_mapping(settings.get("policies") or PER_AGENT, env_info.agents)
        return MADDPGNet(env_info.observation_shape[0], env_info.n_actions, agent_policies)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        return {**super().acting_options(config, worker_id), "joint_rows": True}

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> MADDPGLearner:
        from a3c.algos.maddpg.learner import MADDPGLearner

        return MADDPGLearner(config, net, version_counter, env_info)
