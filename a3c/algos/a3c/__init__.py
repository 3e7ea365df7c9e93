"""A3C: the actor-critic the project is named for. Children act by sampling the policy and
send n-step transitions with V(last state) (data mode), or train a copy of the net on their
own transitions and send the gradients (``--mode grads``); the learner steps Adam on the
policy-gradient, value and entropy terms."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from a3c.algos.a3c.settings import (
    ATARI_PRESET,
    NATURE84_PRESET,
    REFERENCE_PRESET,
    SMALL_PRESET,
    VECTOR_PRESET,
    A3CSettings,
    grads_layout,
    importance_weighted,
)
from a3c.algos.actor_critic import ActorCritic
from a3c.algos.base import Outbox, Sender
from a3c.model_config import has_memory
from a3c.options import CORES, ConfigError
from a3c.schedules import parse_lr_schedule

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.a3c.learner import A3CLearner
    from a3c.config import Config
    from a3c.lib.columns import Payload
    from a3c.lib.envs import EnvInfo


class A3C(ActorCritic):
    name = "a3c"
    summary = "the actor-critic: workers sample the policy and send n-step transitions (or gradients)"
    settings = A3CSettings
    presets: ClassVar[Mapping[str, str]] = {
        "reference": "the reference chapter's Pong values, for any env",
        "nature84": "Atari in float32 with one worker: the defaults where the CPU has no bfloat16 "
                    "instructions, and everywhere before bfloat16",
        "small": "Atari on the A3C paper's smaller conv net, a worker on each of 2 cores: more "
                 "frames/s than nature84, more frames to 18"}

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        if values.get("preset") == "reference":
            preset = REFERENCE_PRESET
        elif values.get("preset") == "small" and atari:
            preset = SMALL_PRESET
        elif atari and (values.get("preset") == "nature84" or values.get("cuda")):
            preset = NATURE84_PRESET  # bfloat16 and its layout are for a learner on the CPU
        else:
            preset = ATARI_PRESET if atari else VECTOR_PRESET
        if values.get("mode") == "grads":
            preset = grads_layout(preset, CORES, atari)
        if has_memory(values) and not atari:  # the memory serves both heads: keep the values small
            preset = dataclasses.replace(preset, scale_rewards=True)
        return dataclasses.asdict(preset)

    def defaults_help(self, name: str) -> str | None:
        text = super().defaults_help(name)
        if text is None:
            return None
        text += f", {getattr(REFERENCE_PRESET, name)} with --preset reference"
        if name == "scale_rewards":
            text += ", True with --lstm on vector observations"
        for label, preset in (("nature84", NATURE84_PRESET), ("small", SMALL_PRESET)):
            if getattr(preset, name) != getattr(ATARI_PRESET, name):
                text += f", {getattr(preset, name)} with --preset {label}"
        return text

    def check(self, config: Config, atari: bool) -> None:
        super().check(config, atari)
        if config.mode == "grads" and config.passes > 1:
            raise ConfigError("--passes is for data mode: in grads mode each worker's gradient is "
                              "applied once")
        if (config.passes_frames or config.passes_from) and config.passes == 1:
            raise ConfigError("--passes-from and --passes-frames bound the extra steps of --passes; "
                              "set --passes above 1")
        if config.passes_frames and config.passes_from >= config.passes_frames:
            raise ConfigError(f"--passes-from ({config.passes_from}) must be below --passes-frames "
                              f"({config.passes_frames}), where the extra steps end")
        try:
            parse_lr_schedule(config.lr_schedule)
        except ValueError as error:
            raise ConfigError(f"--lr-schedule {config.lr_schedule!r}: {error}") from None
        if config.mode == "grads" and config.hold_weights > 1:
            raise ConfigError("--hold-weights is for data mode: a grads-mode worker renews its weights "
                              "after every gradient it sends")
        if config.mode == "grads" and config.normalize_observations:
            raise ConfigError("--normalize-observations is for data mode: the learner keeps the statistics "
                              "from the rows it receives, and in grads mode it receives none")
        if config.mode == "grads" and config.lr_schedule:
            raise ConfigError("--lr-schedule is for data mode: in grads mode the learner does not "
                              "count frames")
        if config.mode == "grads" and config.entropy_decay_frames:
            raise ConfigError("--entropy-decay-frames is for data mode: in grads mode the workers "
                              "weigh the entropy bonus, and they do not count frames")

    def describe(self, config: Config) -> str:
        return f"a3c, {config.mode} mode"

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        """Rows carry the acting log-probabilities for the importance weights, and the sequence
        columns that come with them for ``--lstm``."""
        return {**super().acting_options(config, worker_id), "return_lambda": config.return_lambda,
                "send_log_probs": importance_weighted(config) or has_memory(vars(config))}

    def make_sender(self, config: Config, net: nn.Module, policy_version: Callable[[], int],
                    outbox: Outbox) -> Sender | None:
        if config.mode != "grads" and config.hold_weights > 1:
            from a3c.algos.a3c.acting import HeldWeightsSender

            return HeldWeightsSender(net, policy_version, outbox, config.hold_weights)
        if config.mode != "grads":
            return None
        from a3c.algos.a3c.acting import GradientSender

        return GradientSender(config, net, policy_version, outbox, next(net.parameters()).device)

    def transitions_per_message(self, config: Config) -> int:
        return config.batch_size if config.mode == "grads" else config.envs_per_process

    def payload(self, config: Config, env_info: EnvInfo, net: nn.Module) -> Payload:
        """Grads mode: one flat gradient a message."""
        if config.mode != "grads":
            return super().payload(config, env_info, net)
        from a3c.algos.payloads import GradientPayload

        return GradientPayload(sum(parameter.numel() for parameter in net.parameters()))

    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> A3CLearner:
        from a3c.algos.a3c.learner import A3CLearner

        return A3CLearner(config, net, version_counter)
