"""DQN, Ape-X style: workers act epsilon-greedy on the shared Q-network (each env with an
epsilon of its own) and send n-step transitions with their last states; the learner keeps
them in a prioritized replay buffer and trains on samples of it with Double-DQN targets
from a target network."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.base import Algorithm
from a3c.algos.dqn.settings import (
    ATARI_PRESET,
    ATARI_REPLAY,
    VECTOR_PRESET,
    VECTOR_REPLAY,
    DQNSettings,
)
from a3c.algos.replay_learner import check_replay_fits
from a3c.model_config import check_conv_filters
from a3c.options import ConfigError
from a3c.schedules import parse_epsilon_schedule

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.dqn.learner import DQNLearner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class DQN(Algorithm):
    name = "dqn"
    summary = ("Ape-X-style Q-learning from a replay buffer the workers fill, acting "
               "epsilon-greedy")
    settings = DQNSettings
    sends_last_states = True
    head_is_q_values = True
    model_keys = frozenset({"fcnet_hiddens", "fcnet_activation", "conv_filters", "custom_model", "custom_model_config"})
    net_shape: ClassVar[Mapping[str, Any]] = {"model": None}

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        preset = ATARI_PRESET if atari else VECTOR_PRESET
        return {**dataclasses.asdict(preset), **(ATARI_REPLAY if atari else VECTOR_REPLAY)}

    def check(self, config: Config, atari: bool) -> None:
        try:
            parse_epsilon_schedule(config.epsilon_schedule)
        except ValueError as error:
            raise ConfigError(f"--epsilon-schedule {config.epsilon_schedule!r}: {error}") from None
        if config.prioritized_from_episodes and not config.prioritized:
            raise ConfigError("--prioritized-from-episodes switches to prioritized replay, which --no-prioritized "
                              "turns off")
        if config.learning_starts > config.replay_size:
            raise ConfigError(f"--learning-starts {config.learning_starts:,} is above --replay-size "
                              f"{config.replay_size:,}: the buffer would never hold enough to learn")

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        """The replay buffer must fit in the memory free now."""
        from a3c.lib.replay import replay_bytes

        needed = replay_bytes(config.replay_size, env_info.observation_shape, env_info.observation_dtype,
                              env_info.frame_stack)
        check_replay_fits(config, needed)
        check_conv_filters(config, env_info)

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        from a3c.algos.dqn.nets import build_q_net

        return build_q_net(env_info, settings.get("dueling", True), settings.get("model"))

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        from a3c.algos.dqn.acting import epsilon_greedy_chooser

        return {**super().acting_options(config, worker_id),
                "choose_actions": epsilon_greedy_chooser(config, worker_id)}

    def play_actions(self, head: torch.Tensor, greedy: bool, distribution: Any) -> torch.Tensor:
        """Greedy on the Q-values, always."""
        return head.argmax(dim=-1)

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> DQNLearner:
        from a3c.algos.dqn.learner import DQNLearner

        return DQNLearner(config, net, version_counter, env_info)
