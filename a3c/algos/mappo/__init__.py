"""MAPPO: PPO on a multi-agent env with a centralised critic. Each agent's policy acts on its
own observation, as with independent PPO; the value function reads every agent's
observation of the env (the workers put them in front of each agent's row, and the net's
critic alone reads them). Everything else is ``--algo ppo``: its settings, rollouts,
V-trace targets and learner."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a3c.algos.joint import require_agents
from a3c.algos.ppo import PPO
from a3c.model_config import mlp_shape
from a3c.options import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class MAPPO(PPO):
    name = "mappo"
    summary = ("PPO with a centralised critic on a multi-agent env: each agent's policy on its own "
               "observation, the value on every agent's")
    central_critic = True
    model_keys = frozenset({"fcnet_hiddens", "fcnet_activation", "custom_model", "custom_model_config"})

    def check(self, config: Config, atari: bool) -> None:
        super().check(config, atari)
        if atari:
            raise ConfigError("--algo mappo is for multi-agent envs with vector observations")

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        require_agents(self.name, config, env_info)
        super().preflight(config, env_info)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        return {**super().acting_options(config, worker_id), "global_state": True}

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        from a3c.algos.mappo.nets import CentralCriticMlp
        from a3c.lib.custom_model import custom_features

        own = env_info.observation_shape[0] - env_info.global_state_size
        return CentralCriticMlp(own, env_info.global_state_size, env_info.n_actions, *mlp_shape(settings, 128),
                                features=custom_features(env_info, settings.get("model")))
