"""What the algorithms that train on joint rows share (MADDPG, QMIX): one set of values for
vector observations, one-step rows holding every agent's observation, action and reward,
their last states for the target nets, a multi-agent env required; and the learner that
puts those rows into a uniform replay buffer and hands samples to the algorithm's update.
Pure at import: the learner's part imports torch when made."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.base import Algorithm, shown_value
from a3c.algos.replay_learner import UniformReplayLearner
from a3c.options import ConfigError

if TYPE_CHECKING:
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo
    from a3c.lib.replay import ReplayBuffer


def require_agents(algo: str, config: Config, env_info: EnvInfo) -> None:
    """ConfigError unless the env has several agents (the algorithm ``algo`` needs them)."""
    if not env_info.agents:
        raise ConfigError(f"--algo {algo} needs a multi-agent env (TwoStepGame, or a PettingZoo parallel env "
                          f"such as mpe2.simple_spread_v3); {config.env_id} has one agent")


class JointRowsAlgorithm(Algorithm):
    """A multi-agent algorithm on joint rows with one ``preset`` of values."""

    preset: ClassVar[Mapping[str, Any]] = {}
    sends_last_states = True
    model_keys = frozenset({"fcnet_hiddens", "fcnet_activation", "custom_model", "custom_model_config"})
    net_shape: ClassVar[Mapping[str, Any]] = {"model": None}

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self.preset)

    def defaults_help(self, name: str) -> str | None:
        """One value: these algorithms run on vector observations only."""
        return None if self.preset.get(name) is None else shown_value(self.preset[name])

    def check(self, config: Config, atari: bool) -> None:
        if atari:
            raise ConfigError(f"--algo {self.name} is for multi-agent envs with vector observations")
        if config.reward_steps != 1:
            raise ConfigError(f"--reward-steps of --algo {self.name} is 1: its targets bootstrap every step")

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        require_agents(self.name, config, env_info)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        return {**super().acting_options(config, worker_id), "joint_rows": True}


class JointReplayLearner(UniformReplayLearner):
    """The learner side: a uniform replay buffer of joint rows."""

    def replay_buffer(self) -> ReplayBuffer:
        from a3c.lib.replay import ReplayBuffer

        agents = len(self.env_info.agents)
        return ReplayBuffer(self.config.replay_size, (agents, *self.env_info.observation_shape),
                            self.env_info.observation_dtype, prioritized=False, agents=agents)
