"""PPO on the asynchronous actors (APPO-style): workers sample the policy and send one-step
rows with the log-probability of each action; the learner runs the clipped surrogate over
whole rollouts, with V-trace value targets for the policy lag (docs/ppo.md)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.actor_critic import ActorCritic
from a3c.algos.ppo.settings import BOX_PRESETS, PPOSettings, family_values, rollout_rows
from a3c.options import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.ppo.learner import PPOLearner
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


class PPO(ActorCritic):
    name = "ppo"
    summary = ("proximal policy optimisation on the same actors: rollouts of one-step rows, GAE, "
               "clipped surrogate against the acting policy, V-trace value targets")
    settings = PPOSettings
    presets: ClassVar[Mapping[str, str]] = {
        "box": "Box actions (MuJoCo, Pendulum): the PPO paper's MuJoCo values, 2,048-row rollouts, "
               "10 epochs of 64-row minibatches, lr 3e-4 decaying",
        "mujoco": "MuJoCo's locomotion tasks: the box preset on the RL zoo's MuJoCo net, 256-unit "
                  "layers and a log-std from -2"}

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return family_values(atari, values)

    def check(self, config: Config, atari: bool) -> None:
        super().check(config, atari)
        if config.preset in BOX_PRESETS and atari:
            raise ConfigError(f"--preset {config.preset} is for Box actions; Atari's are Discrete")
        if config.reward_steps != 1:
            raise ConfigError("--reward-steps of --algo ppo is 1: GAE(lambda) sums the rewards (--gae-lambda)")
        rows = rollout_rows(vars(config))
        if config.minibatches > rows:
            raise ConfigError(f"--minibatches {config.minibatches} is more than a rollout's {rows} rows "
                              "(--rollout-length x --processes x --envs-per-process)")
        if config.batch_size != rows // config.minibatches:
            raise ConfigError(f"--batch-size of --algo ppo is a rollout's {rows} rows over --minibatches "
                              f"{config.minibatches}, {rows // config.minibatches}: set --rollout-length "
                              "or --minibatches instead")

    def describe(self, config: Config) -> str:
        return f"{self.name}, rollouts of {config.rollout_length} steps x {config.epochs} epochs x " \
               f"{config.minibatches} minibatches"

    def transitions_ahead(self, config: Config) -> int:
        """A whole rollout: the workers keep acting through the learner's passes over the
        last one, as far as the next rollout; with ``sync_rollouts`` a message each, so that
        they wait while the learner trains."""
        return config.envs_per_process if config.sync_rollouts else rollout_rows(vars(config))

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        return {**super().acting_options(config, worker_id), "send_log_probs": True}

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> PPOLearner:
        from a3c.algos.ppo.learner import PPOLearner

        return PPOLearner(config, net, version_counter, max(1, len(env_info.agents)))
