"""TD3 (Fujimoto et al. 2018) on Box actions: the workers act with the shared net's
deterministic actor plus Gaussian noise and send n-step transitions with their last states;
the learner keeps them in a uniform replay buffer, trains twin critics towards the smaller
target critic's value of a smoothed target action, and steps the actor and the target nets
every ``--policy-delay`` critic steps. SAC's machinery with another policy and learner."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from a3c.algos.sac import SAC
from a3c.algos.td3.settings import PRESET, TD3Settings
from a3c.model_config import mlp_shape

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.td3.learner import TD3Learner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class TD3(SAC):
    name = "td3"
    summary = ("twin delayed DDPG for Box actions: a deterministic actor explored with Gaussian noise, "
               "twin critics, delayed actor steps, from a replay buffer the workers fill")
    settings = TD3Settings

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(PRESET)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        """Uniformly random actions until the learner's first step: an actor that has not
        learned explores only its noise's width."""
        return {**super().acting_options(config, worker_id), "uniform_until_learning": True}

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        from a3c.algos.sac.nets import HIDDEN, ActorAndTwinCritics
        from a3c.lib.custom_model import features_maker
        from a3c.lib.distributions import NoisyDeterministic

        distribution = NoisyDeterministic(env_info.n_actions, env_info.action_low, env_info.action_high,
                                          noise=settings["exploration_noise"])
        return ActorAndTwinCritics(env_info.observation_shape[0], distribution, env_info.n_actions,
                                   *mlp_shape(settings, HIDDEN), features_maker(env_info, settings))

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> TD3Learner:
        from a3c.algos.td3.learner import TD3Learner

        return TD3Learner(config, net, version_counter, env_info)
