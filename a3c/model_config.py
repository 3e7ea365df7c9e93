"""The model config, in RLlib's keys: what shapes an algorithm's nets, given as ``model={...}``
(``--model JSON``) or by the flags that are its shorthands (``--mlp-hidden``, ``--conv``,
``--heads``, ``--lstm``, ``--lstm-cell-size``, ``--seq-len``).

Pure: no torch. ``check_model`` turns a given dict into a ``ModelConfig`` or a ConfigError of
one line; each algorithm says which keys its nets honour (``Algorithm.model_keys``), and a key
given to one that cannot is refused the same way.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a3c.options import ConfigError

ACTIVATIONS = ("relu", "tanh", "elu", "silu", "swish", "linear")
"""``fcnet_activation``'s values: torch's ReLU, Tanh, ELU, SiLU (RLlib's "swish" is the same)
and none."""

ConvFilter = tuple[int, tuple[int, int], int]
"""One conv layer as RLlib writes it: output channels, [kernel height, kernel width], stride."""


@dataclass(frozen=True)
class ModelConfig:
    """The keys of a model config this project reads; None where the algorithm's own value
    (or the shorthand flag's) applies."""

    fcnet_hiddens: tuple[int, ...] | None = None
    """The hidden layers' widths: over the observation (vector envs) or over the conv body."""
    fcnet_activation: str = "relu"
    conv_filters: tuple[ConvFilter, ...] | None = None
    """The conv body for images, in place of ``--conv``'s."""
    vf_share_layers: bool | None = None
    """Whether the value reads the policy's hidden layers (one trunk, two linear outputs) or
    has its own (``--heads separate`` on Atari, always apart on vectors by default)."""
    use_lstm: bool | None = None
    lstm_cell_size: int | None = None
    max_seq_len: int | None = None
    use_attention: bool | None = None
    """A gated transformer-XL memory (``a3c.lib.attention``) in place of the LSTM."""
    attention_num_transformer_units: int | None = None
    attention_dim: int | None = None
    attention_num_heads: int | None = None
    attention_head_dim: int | None = None
    attention_memory_inference: int | None = None
    """The steps each env remembers; the learner reruns from that memory as stored."""
    attention_memory_training: int | None = None
    """Accepted where it equals ``attention_memory_inference``: one memory here."""
    attention_position_wise_mlp_dim: int | None = None
    attention_init_gru_gate_bias: float | None = None
    custom_model: str | None = None
    """A model of the user's (``a3c.register_model``'s name, or ``module:factory``) giving the
    features the algorithm's own heads read, in place of the MLP over the observation or the conv body."""
    custom_model_config: dict | None = None
    """What the custom model's factory gets as its ``config``."""


ATTENTION_DEFAULTS = {"attention_num_transformer_units": 1, "attention_dim": 64, "attention_num_heads": 1,
                      "attention_head_dim": 32, "attention_memory_inference": 50, "attention_position_wise_mlp_dim": 32,
                      "attention_init_gru_gate_bias": 2.0}
"""RLlib's values for the attention keys not given."""

KEYS = tuple(field.name for field in dataclasses.fields(ModelConfig))
NOT_YET = ("attention_use_n_prev_actions", "attention_use_n_prev_rewards", "lstm_use_prev_action",
           "lstm_use_prev_reward")
"""RLlib's keys that this version reads but cannot build yet: refused by name, not taken for typos."""


def check_model(given: Mapping[str, Any] | None) -> ModelConfig:
    """``given`` (a JSON object's dict) as a ModelConfig; ConfigError naming the first key
    that is unknown, not built yet, or of the wrong type or range."""
    if not given:
        return ModelConfig()
    values: dict[str, Any] = {}
    for key, value in given.items():
        if key in NOT_YET:
            raise ConfigError(f"--model {key}: not built yet in this version (the keys it reads: {', '.join(KEYS)})")
        if key not in KEYS:
            raise ConfigError(f"--model {key}: not a model key; the keys are {', '.join(KEYS)}")
        values[key] = _checked(key, value)
    if "custom_model_config" in values and "custom_model" not in values:
        raise ConfigError("--model custom_model_config is for a custom_model, and none is given")
    attention = [key for key in values if key.startswith("attention_")]
    if attention and not values.get("use_attention"):
        raise ConfigError(f"--model {attention[0]} is for use_attention, and it is not on")
    if values.get("use_attention") and values.get("use_lstm"):
        raise ConfigError("--model use_attention and use_lstm are given both: the memory is one or the other")
    memory = values.get("attention_memory_inference", ATTENTION_DEFAULTS["attention_memory_inference"])
    if values.get("attention_memory_training", memory) != memory:
        raise ConfigError("--model attention_memory_training: the learner reruns from the memory the workers "
                          "stored, so it is attention_memory_inference here; give one")
    if "custom_model" in values and "conv_filters" in values:
        raise ConfigError("--model custom_model and conv_filters are given both: the custom model reads "
                          "the observation in place of the conv body; give one")
    return ModelConfig(**values)


def _checked(key: str, value: Any) -> Any:
    if key == "fcnet_hiddens":
        if not _ints(value) or not value or min(value) < 1:
            raise ConfigError(f"--model fcnet_hiddens must be a non-empty list of widths >= 1, got {value!r}")
        return tuple(value)
    if key == "fcnet_activation":
        if value not in ACTIVATIONS:
            raise ConfigError(f"--model fcnet_activation must be one of {', '.join(ACTIVATIONS)}, got {value!r}")
        return value
    if key == "conv_filters":
        return _conv_filters(value)
    if key == "custom_model":
        if not isinstance(value, str) or not value:
            raise ConfigError(f"--model custom_model must be a registered model's name or module:factory, got {value!r}")
        return value
    if key == "custom_model_config":
        if not isinstance(value, Mapping):
            raise ConfigError(f"--model custom_model_config must be a JSON object, got {value!r}")
        return dict(value)
    if key == "attention_init_gru_gate_bias":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"--model attention_init_gru_gate_bias must be a number, got {value!r}")
        return float(value)
    if key in ("vf_share_layers", "use_lstm", "use_attention"):
        if not isinstance(value, bool):
            raise ConfigError(f"--model {key} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # sizes, lengths, counts
        raise ConfigError(f"--model {key} must be a whole number >= 1, got {value!r}")
    return value


def _ints(values: Any) -> bool:
    return isinstance(values, Sequence) and not isinstance(values, str) and all(
        isinstance(value, int) and not isinstance(value, bool) for value in values)


def _conv_filters(value: Any) -> tuple[ConvFilter, ...]:
    """RLlib's ``[[channels, [kh, kw], stride], ...]`` (a kernel may be one int) as tuples."""
    wrong = ConfigError(f"--model conv_filters must be a non-empty list of [channels, [kernel_h, kernel_w], "
                        f"stride] with whole numbers >= 1, got {value!r}")
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise wrong
    layers = []
    for layer in value:
        if not isinstance(layer, Sequence) or isinstance(layer, str) or len(layer) != 3:
            raise wrong
        channels, kernel, stride = layer
        kernel = [kernel, kernel] if isinstance(kernel, int) and not isinstance(kernel, bool) else kernel
        if not (_ints([channels, stride]) and _ints(kernel) and len(kernel) == 2
                and min(channels, stride, *kernel) >= 1):
            raise wrong
        layers.append((channels, (kernel[0], kernel[1]), stride))
    return tuple(layers)


MODEL_SHORTHANDS = {"use_lstm": "lstm", "lstm_cell_size": "lstm_cell_size", "max_seq_len": "seq_len",
                    "fcnet_hiddens": "mlp_hidden", "conv_filters": "conv", "vf_share_layers": "heads"}
"""Each model key that a flag is the shorthand of, and the flag's setting."""
MODEL_SETTINGS = ("use_lstm", "lstm_cell_size", "max_seq_len")
"""The model keys that are run settings too (the learner and workers read them): they set those."""


def apply_model(values: dict[str, Any], family_values: Mapping[str, Any], model_keys: frozenset[str],
                defaults: Mapping[str, Any]) -> None:
    """Check ``values["model"]`` against its keys and the algorithm's ``model_keys``, refuse a key
    given with its shorthand flag set otherwise (than its ``defaults`` or ``family_values``),
    and put the keys that are settings into those settings."""
    model = check_model(values["model"])
    given = given_keys(model)
    for key in sorted(given - model_keys):
        takes = ", ".join(key for key in KEYS if key in model_keys) or "none yet"
        raise ConfigError(f"--model {key}: --algo {values['algo']}'s nets cannot honour it (the keys they take: {takes})")
    for key in sorted(given):
        name = MODEL_SHORTHANDS.get(key)
        value = values.get(name)
        if name is None or value is None or value in (defaults[name], family_values.get(name)):
            continue
        if key not in MODEL_SETTINGS or value != getattr(model, key):
            raise ConfigError(f"--model {key} and --{name.replace('_', '-')} are given both: give one")
    for key in given & set(MODEL_SETTINGS):
        values[MODEL_SHORTHANDS[key]] = getattr(model, key)


def mlp_shape(settings: Mapping[str, Any], default: int) -> tuple[int | tuple[int, ...], str]:
    """An algorithm's MLPs' hidden widths and activation from a run's settings: the model
    config's ``fcnet_hiddens`` and ``fcnet_activation`` where given, else two layers of
    ``default`` units and ReLU."""
    model = settings.get("model") or {}
    return model.get("fcnet_hiddens") or default, model.get("fcnet_activation", "relu")


def has_memory(settings: Mapping[str, Any]) -> bool:
    """A run's settings (a Config's fields, or a checkpoint's) give the net a state per env:
    ``--lstm`` or the model config's ``use_attention``."""
    return bool(settings.get("lstm")) or bool((settings.get("model") or {}).get("use_attention"))


def given_keys(model: ModelConfig) -> set[str]:
    """The keys set in ``model`` (the activation where not ReLU)."""
    defaults = ModelConfig()
    return {key for key in KEYS if getattr(model, key) != getattr(defaults, key)}


def check_conv_filters(config: Any, env_info: Any) -> None:
    """ConfigError where ``config.model`` gives ``conv_filters`` for an env without images, or
    layers that shrink an image (Atari's frames, or each image in the env's observation) to
    nothing."""
    filters = (config.model or {}).get("conv_filters")
    if filters is None:
        return
    shapes = [env_info.observation_shape] if env_info.atari else [
        part.channels_first_shape for part in env_info.image_parts]
    if not shapes:
        raise ConfigError(f"--model conv_filters is for image observations; {config.env_id} has none")
    for shape in shapes:
        height, width = shape[-2:]
        for _, (kernel_height, kernel_width), stride in _conv_filters(filters):
            height, width = (height - kernel_height) // stride + 1, (width - kernel_width) // stride + 1
        if min(height, width) < 1:
            raise ConfigError(f"--model conv_filters: the layers shrink a {shape[-2]}x{shape[-1]} image to nothing")
