"""Soft actor-critic on Box actions: workers act with the shared net's squashed Gaussian
policy and send n-step transitions with their last states; the learner keeps them in a
uniform replay buffer and trains twin critics towards soft targets, the actor through them,
and the entropy temperature towards a target entropy."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.base import Algorithm, shown_value
from a3c.algos.replay_learner import check_replay_fits
from a3c.algos.sac.settings import PRESET, SACSettings
from a3c.model_config import mlp_shape
from a3c.options import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.sac.learner import SACLearner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class SAC(Algorithm):
    name = "sac"
    summary = ("soft actor-critic for Box actions: a squashed Gaussian policy, twin critics and a "
               "learned entropy temperature, from a replay buffer the workers fill")
    settings = SACSettings
    action_spaces = frozenset({"Box"})
    sends_last_states = True
    model_keys = frozenset({"fcnet_hiddens", "fcnet_activation", "custom_model", "custom_model_config"})
    net_shape: ClassVar[Mapping[str, Any]] = {"model": None}

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(PRESET)

    def defaults_help(self, name: str) -> str | None:
        """One value: the algorithm runs on vector observations with Box actions only."""
        value = self.family_defaults(False, {}).get(name)
        return None if value is None else shown_value(value)

    def check(self, config: Config, atari: bool) -> None:
        if atari:
            raise ConfigError(f"--algo {self.name} is for Box actions; Atari games have Discrete ones")
        if config.tau == 0:
            raise ConfigError(f"--tau of --algo {self.name} must be > 0: its target critics follow by Polyak "
                              "averaging")

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        """One agent's Box actions with finite bounds, vector observations, and room for the
        replay buffer."""
        algo = f"--algo {self.name}"
        if env_info.agents:
            raise ConfigError(f"{algo} takes one agent's Box actions; {config.env_id} has several agents")
        if env_info.image_parts:
            raise ConfigError(f"{algo} reads vector observations through MLPs; {config.env_id}'s hold images")
        if not env_info.bounded:
            raise ConfigError(f"{algo} squashes its actions into their bounds; {config.env_id}'s are unbounded")
        from a3c.lib.replay import replay_bytes

        needed = replay_bytes(config.replay_size, env_info.observation_shape, env_info.observation_dtype,
                              action_bytes=4 * env_info.n_actions)
        check_replay_fits(config, needed)

    def transitions_ahead(self, config: Config) -> int:
        """Two optimizer steps' worth of transitions (at one step a transition; the transport
        keeps two messages a worker at least): the workers act with weights a few steps old,
        where two learner batches in flight would be 512 transitions, 512 steps, behind."""
        return max(1, round(2 * config.batch_size / config.replay_ratio))

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        from a3c.algos.sac.nets import HIDDEN, SACNet, SquashedGaussian
        from a3c.lib.custom_model import features_maker

        distribution = SquashedGaussian(env_info.n_actions, env_info.action_low, env_info.action_high)
        return SACNet(env_info.observation_shape[0], distribution, *mlp_shape(settings, HIDDEN),
                      features_maker(env_info, settings))

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> SACLearner:
        from a3c.algos.sac.learner import SACLearner

        return SACLearner(config, net, version_counter, env_info)
