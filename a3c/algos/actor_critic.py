"""What the actor-critic algorithms (A3C, PPO) share: the settings of their loss weights and
of the net, the checks of those, and the net itself (``a3c.lib.models``). Pure at import."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.base import Algorithm
from a3c.model_config import KEYS, check_conv_filters, has_memory
from a3c.options import ConfigError, Preset, option

if TYPE_CHECKING:
    from torch import nn

    from a3c.algos.payloads import TransitionPayload as Payload
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo

HEADS = ("shared", "separate")
"""The two ways ``a3c.lib.models.AtariA2C``'s heads read its conv body."""
CONVS = ("nature", "small")
"""``a3c.lib.models.AtariA2C``'s two conv bodies."""


@dataclass(frozen=True)
class ActorCriticSettings:
    """The loss weights and the net's shape; one flag each, for every actor-critic algorithm."""

    entropy_beta: float = option("weight of the entropy bonus", None, at_least=0.0, family=True)
    value_weight: float = option("weight of the value loss against the policy loss", None, above=0.0,
                                 family=True)
    heads: str = option("Atari net: one shared hidden layer under linear heads, or separate "
                        "layers (the reference's)", None, choices=HEADS, family=True)
    conv: str = option("Atari net's body: the Nature CNN under 512 units, or the A3C paper's "
                       "smaller one under 256 (a third of the compute)", None, choices=CONVS, family=True)
    lr_decay_frames: int = option("frames over which the learning rate falls linearly to a tenth "
                                  "of --lr, then holds (0: constant)", None, at_least=0, family=True)
    entropy_decay_frames: int = option("frames over which the entropy bonus falls linearly to a tenth "
                                       "of --entropy-beta, then holds (0: constant)", None, at_least=0,
                                       family=True)
    normalize_observations: bool = option("vector observations standardised by running statistics the "
                                          "learner keeps in the net (saved with it, used in play)", None,
                                          family=True)
    scale_rewards: bool = option("each worker divides the rewards it trains on by the running deviation "
                                 "of the discounted return", None, family=True)
    mlp_hidden: int = option("units of each hidden layer of the vector nets (the policy's and the "
                             "value's MLPs, or the layer under --lstm's cell)", None, at_least=1, family=True)
    log_std_init: float = option("Box actions: the Gaussian policy's log-std at the start (0: a "
                                 "deviation of 1; -2: 0.14, a calmer start)", None, family=True)
    lstm: bool = option("an LSTM cell after the net's body: workers keep each env's state, the learner "
                        "reruns sequences of --seq-len steps from the states they stored", False)
    lstm_cell_size: int = option("units of the LSTM cell (--lstm)", 256, at_least=1)
    seq_len: int = option("--lstm or attention: steps of each sequence the learner backpropagates through (at "
                          "least the steps a policy must remember across; A3C on Atari: 5, so that its "
                          "batches of whole sequences hold many envs' rows)", None, at_least=1, family=True)


@dataclass(frozen=True)
class ActorCriticPreset(Preset):
    """The actor-critic settings every preset of these algorithms gives, and its precision."""

    entropy_beta: float = 0.01
    value_weight: float = 1.0
    heads: str = "separate"
    conv: str = "nature"
    lr_decay_frames: int = 0
    entropy_decay_frames: int = 0
    normalize_observations: bool = False
    scale_rewards: bool = False
    mlp_hidden: int = 128
    log_std_init: float = 0.0
    seq_len: int = 20
    bf16: bool = False


class ActorCritic(Algorithm):
    """An algorithm that trains ``a3c.lib.models``' actor-critic: a policy and a value head."""

    net_shape: ClassVar[Mapping[str, Any]] = {"heads": "separate", "conv": "nature", "normalize_observations": False,
                                              "lstm": False, "lstm_cell_size": 256,
                                              "mlp_hidden": ActorCriticPreset.mlp_hidden,
                                              "log_std_init": ActorCriticPreset.log_std_init, "model": None}
    action_spaces = frozenset({"Discrete", "Box", "MultiDiscrete"})
    model_keys = frozenset(KEYS)

    def check(self, config: Config, atari: bool) -> None:
        if config.heads == "shared" and not atari:
            raise ConfigError("--heads shared is for the Atari net; vector observations use separate MLPs")
        if config.conv == "small" and not atari:
            raise ConfigError("--conv small is for the Atari net; vector observations use MLPs")
        if config.normalize_observations and atari:
            raise ConfigError("--normalize-observations is for vector observations; Atari frames are scaled "
                              "to [0, 1] in the net")
        if config.mlp_hidden != ActorCriticPreset.mlp_hidden and atari:
            raise ConfigError("--mlp-hidden is for vector observations; the Atari net's width comes with --conv")
        if has_memory(vars(config)) and (config.model or {}).get("vf_share_layers") is False:
            raise ConfigError("--model vf_share_layers false: with an LSTM or attention the policy and the value "
                              "read one memory")

    def saved_net_shape(self, saved: Mapping[str, Any]) -> dict[str, Any]:
        """The net-shaping settings the net has a use for: the cell's size only where it has
        the cell, the vector nets' width and first log-std only off Atari, so that a shape
        error names the flags that build the checkpoint's net again and no others."""
        shape = super().saved_net_shape(saved)
        if not shape["lstm"]:
            del shape["lstm_cell_size"]
        from a3c.lib.env_kind import is_atari

        if "env_id" in saved and is_atari(saved["env_id"]):
            del shape["mlp_hidden"], shape["log_std_init"]
        return shape

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        memory = "--lstm" if config.lstm else "--model use_attention"
        if has_memory(vars(config)) and env_info.agents:
            raise ConfigError(f"{memory} is for single-agent envs: an agent that finishes early would leave "
                              "gaps in its env's sequences")
        if config.log_std_init != ActorCriticPreset.log_std_init and not env_info.continuous:
            raise ConfigError(f"--log-std-init is for Box actions; {config.env_id}'s are not")
        check_conv_filters(config, env_info)

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        return {**super().acting_options(config, worker_id), "scale_rewards": config.scale_rewards}

    def payload(self, config: Config, env_info: EnvInfo, net: nn.Module) -> Payload:
        """With a recurrent net each row also holds the state its env acted from: the column
        follows the net the workers act with, as the actor's rows do."""
        payload = super().payload(config, env_info, net)
        from a3c.lib.recurrent import is_recurrent

        if not is_recurrent(net):
            return payload
        from a3c.lib.columns import Column

        return payload.with_columns([Column("recurrent_states", "float32", tuple(net.state_shape))])

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        from a3c.lib.models import build_net

        return build_net(env_info, **self.saved_net_shape(settings))
