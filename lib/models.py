"""Actor-critic networks: each maps a batch of observations to (policy head, state values),
the head being what its ``distribution`` reads (``a3c.lib.distributions``: logits, or a
Gaussian's means and log-stds)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from a3c.lib.attention import GatedTransformerXL
from a3c.lib.custom_model import CustomFeatures, custom_features
from a3c.lib.distributions import CATEGORICAL, DiagGaussian, Distribution, MultiCategorical
from a3c.lib.envs import ATARI_SCREEN_SIZE, SCREEN_SIZES, EnvInfo
from a3c.lib.normalize import ObservationNormalizer
from a3c.lib.observations import ImagePart, columns_outside_images
from a3c.lib.recurrent import RecurrentA2C
from a3c.model_config import ATTENTION_DEFAULTS

HEADS = ("shared", "separate")
"""How the Atari net's policy and value read the conv features: through one shared hidden
layer and two linear outputs, or through a hidden layer each (the reference net)."""

CONVS = ("nature", "small")
"""The Atari net's conv body: the Nature DQN's three layers under 512 hidden units, or the
A3C paper's two (16 and 32 channels) under 256, about a third of the compute per frame."""
CONV_LAYERS = {"nature": [(32, 8, 4), (64, 4, 2), (64, 3, 1)], "small": [(16, 8, 4), (32, 4, 2)]}
"""Each body's layers: (channels out, kernel, stride)."""
CONV_HIDDEN = {"nature": 512, "small": 256}
ConvFilter = tuple[int, Any, int]
"""A conv layer: channels out, kernel (an int or (height, width)), stride."""
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "silu": nn.SiLU, "swish": nn.SiLU,
               "linear": nn.Identity}
"""The model config's ``fcnet_activation`` values and their layers."""


class AtariA2C(nn.Module):
    """The Atari actor-critic: a conv body, then policy and value heads.

    ``heads="separate"`` is the reference net: a hidden ReLU layer for each head, PyTorch's
    default initialisation. Its policy layer learns only from the policy gradient, while the
    value gradient, tens of times larger, reshapes the conv features beneath it, and most of
    its units stop firing on every state for good: the policy then ignores the screen
    (docs/learning.md). ``heads="shared"`` (the Nature-CNN actor-critic) feeds both linear
    heads from one hidden layer that the value keeps alive, initialised orthogonally
    (gain sqrt 2 for ReLU layers, 0.01 for the policy's logits so it starts uniform, 1 for the
    value). ``conv`` picks the body and the hidden width (``CONVS``); the model config's
    ``conv_filters``, ``fcnet_hiddens`` and ``fcnet_activation`` (``filters``, ``hiddens``,
    ``activation``) replace them.

    Takes uint8 frames (N, 4, 84, 84) or (N, 4, 42, 42) and scales them to [0, 1] inside, so
    observations travel through queues and buffers as uint8. The conv weights and activations
    are kept channels-last, where oneDNN's convolutions run about a third faster on the CPU;
    the logical shapes, state dicts and flat gradients are unchanged.
    """

    def __init__(self, input_shape: tuple[int, ...], n_actions: int, heads: str = "separate",
                 conv: str = "nature", filters: Sequence[ConvFilter] | None = None,
                 hiddens: Sequence[int] | None = None, activation: str = "relu"):
        super().__init__()
        self.conv, conv_out, hidden = conv_body(conv, input_shape, filters)
        widths = [hidden] if hiddens is None else list(hiddens)
        if heads == "shared":
            self.body = hidden_layers(conv_out, widths, activation)
            self.policy, self.value = nn.Linear(widths[-1], n_actions), nn.Linear(widths[-1], 1)
            _init_orthogonal(self)
        elif heads == "separate":
            self.body = nn.Identity()
            self.policy = mlp(conv_out, n_actions, widths, activation)
            self.value = mlp(conv_out, 1, widths, activation)
        else:
            raise ValueError(f"heads must be one of {', '.join(HEADS)}, got {heads!r}")
        self.conv.to(memory_format=torch.channels_last)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.body(self.conv(scaled_channels_last(observations)))
        return self.policy(features), self.value(features).squeeze(-1)


def conv_body(name: str, input_shape: tuple[int, ...],
              filters: Sequence[ConvFilter] | None = None) -> tuple[nn.Sequential, int, int]:
    """The conv body ``name`` (flattened), its output size and the hidden width above it:
    "nature", the Nature CNN (32 8x8/4, 64 4x4/2, 64 3x3/1; 512 units), or "small", the A3C
    paper's (16 8x8/4, 32 4x4/2; 256 units). On 42-pixel frames the first layer's kernel
    and stride are halved (4x4/2), so it sees the same part of the screen and every layer
    above it gets maps of the same size as on 84-pixel frames; other sizes (an env's own
    images, ``a3c.lib.envs.MIN_IMAGE_SIDE`` pixels or more) take the layers as they are.
    ``filters`` (the model config's ``conv_filters``) replace ``name``'s layers, as given."""
    if name not in CONV_LAYERS:
        raise ValueError(f"conv must be one of {', '.join(CONVS)}, got {name!r}")
    layers, hidden = CONV_LAYERS[name], CONV_HIDDEN[name]
    if filters is None:
        shrink = ATARI_SCREEN_SIZE // input_shape[-1] if input_shape[-1] in SCREEN_SIZES else 1
        (channels_out, kernel, stride), *above = layers
        layers = [(channels_out, kernel // shrink, stride // shrink), *above]
    else:
        layers = list(filters)
    modules: list[nn.Module] = []
    channels = input_shape[0]
    for out_channels, kernel, stride in layers:
        modules += [nn.Conv2d(channels, out_channels, kernel_size=kernel, stride=stride), nn.ReLU()]
        channels = out_channels
    conv = nn.Sequential(*modules, nn.Flatten())
    with torch.no_grad():
        features = conv(torch.zeros(1, *input_shape)).shape[1]
    return conv, features, hidden


def init_relu_layers(layers: Iterable[nn.Module]) -> None:
    """Orthogonal weights with gain sqrt 2 and zero biases for the conv and linear layers."""
    for layer in layers:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.orthogonal_(layer.weight, gain=2 ** 0.5)
            nn.init.zeros_(layer.bias)


def _init_orthogonal(net: AtariA2C) -> None:
    init_relu_layers([*net.conv, *net.body])
    for layer, gain in ((net.policy, 0.01), (net.value, 1.0)):
        nn.init.orthogonal_(layer.weight, gain=gain)
        nn.init.zeros_(layer.bias)


SCALING_CHUNK = 8
"""Frames converted at a time on the CPU: 8 Pong frames as float32 (0.9 MB) stay in a
core's L2. A GPU converts the whole batch at once, since chunks would only add launches."""


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast casts to on ``device_type`` where it is on, else None (and None on
    torch before 2.4, which cannot say per device; there frames stay float32, as before)."""
    try:
        enabled = torch.is_autocast_enabled(device_type)
    except TypeError:
        return None
    return torch.get_autocast_dtype(device_type) if enabled else None


def scaled_channels_last(frames: torch.Tensor) -> torch.Tensor:
    """uint8 (N, C, H, W) frames in [0, 1], laid out channels-last: float32, or bfloat16 where
    bfloat16 autocast is on for the frames' device.

    One strided copy per channel into an (N, H, W, C) buffer, where
    ``.to(memory_format=channels_last)`` takes more than twice as long (its generic
    transpose is slow with 4 channels innermost). The copies and the scaling go
    ``SCALING_CHUNK`` frames at a time, so the four passes over each part of the buffer hit
    L2 rather than L3. That pays in the learner, whose batch of 128 (14 MB of floats) comes
    fresh after a backward pass (docs/performance.md), and costs nothing at the workers' 32.
    Under autocast the frames go straight to bfloat16: the same values the first conv would
    get by casting the float32 ones (k / 255 rounded once), without that cast's extra pass
    over the batch and with half the bytes written.
    """
    if torch.jit.is_tracing():  # an export (a3c.export): the chunks would be fixed at the traced batch's
        return frames.float() * (1 / 255.0)
    batch, channels, height, width = frames.shape
    dtype = torch.bfloat16 if autocast_dtype(frames.device.type) == torch.bfloat16 else torch.float32
    scaled = torch.empty((batch, height, width, channels), dtype=dtype, device=frames.device)
    step = SCALING_CHUNK if frames.device.type == "cpu" else max(batch, 1)
    for start in range(0, batch, step):
        source, chunk = frames[start:start + step], scaled[start:start + step]
        for channel in range(channels):
            chunk[..., channel].copy_(source[:, channel])
        chunk.mul_(1 / 255.0)
    return scaled.permute(0, 3, 1, 2)


MLP_HIDDEN = 128
"""The width of the vector nets' hidden layers."""


IMAGE_FEATURES = 256
"""The hidden units over each image's conv body in an ``ObservationEncoder``."""


class ObservationEncoder(nn.Module):
    """Features of a flattened observation that holds images (``EnvInfo.image_parts``): each
    image cut out of the row, put channels-first and scaled to [0, 1], then read by a conv
    body (``conv_body``) and ``IMAGE_FEATURES`` hidden units of its own; the row's other
    values follow as they are. ``size`` is the width of the features."""

    def __init__(self, observation_size: int, parts: Sequence[ImagePart], conv: str = "nature",
                 filters: Sequence[ConvFilter] | None = None):
        super().__init__()
        self.parts = tuple(parts)
        self.images = nn.ModuleList()
        for part in self.parts:
            body, conv_out, _ = conv_body(conv, part.channels_first_shape, filters)
            hidden = nn.Sequential(nn.Linear(conv_out, IMAGE_FEATURES), nn.ReLU())
            init_relu_layers([*body, *hidden])
            self.images.append(nn.Sequential(body, hidden))
        self.vector_columns = columns_outside_images(observation_size, self.parts)
        self.register_buffer("_vector_index", torch.tensor(self.vector_columns, dtype=torch.long), persistent=False)
        self.size = IMAGE_FEATURES * len(self.parts) + len(self.vector_columns)

    def split(self, observations: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """(each image as (N, C, H, W) in [0, 1], the other values (N, rest)) of flat rows."""
        images = []
        for part in self.parts:
            image = observations[:, part.offset:part.offset + part.size].reshape(-1, *part.shape)
            images.append((image.permute(0, 3, 1, 2) if part.channels_last else image) / 255.0)
        return images, observations[:, self._vector_index]

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        images, rest = self.split(observations.float())
        return torch.cat([*(read(image) for read, image in zip(self.images, images)), rest], dim=1)


def hidden_layers(inputs: int, widths: Sequence[int], activation: str = "relu") -> nn.Sequential:
    """A linear layer of each of ``widths`` units, each followed by ``activation``."""
    layers: list[nn.Module] = []
    for width in widths:
        layers += [nn.Linear(inputs, width), ACTIVATIONS[activation]()]
        inputs = width
    return nn.Sequential(*layers)


def mlp(inputs: int, outputs: int, hidden: int | Sequence[int], activation: str = "relu") -> nn.Sequential:
    """Hidden layers between ``inputs`` and ``outputs``: two of ``hidden`` units, or one of
    each width ``hidden`` lists (the model config's ``fcnet_hiddens``)."""
    widths = [hidden, hidden] if isinstance(hidden, int) else list(hidden)
    return nn.Sequential(*hidden_layers(inputs, widths, activation), nn.Linear(widths[-1] if widths else inputs, outputs))


class FeaturesThen(nn.Module):
    """An MLP over a custom model's features of a row's first ``observation_size`` values and
    the rest of the row as it is (a critic's action; nothing for the actor)."""

    def __init__(self, features: CustomFeatures, observation_size: int, mlp_above: nn.Sequential):
        super().__init__()
        self.features, self.observation_size, self.mlp = features, observation_size, mlp_above

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        observations, rest = inputs[:, :self.observation_size], inputs[:, self.observation_size:]
        return self.mlp(torch.cat([self.features(observations), rest], dim=-1))


def on_features(features: Callable[[], CustomFeatures] | None, observation_size: int, outputs: int,
                hidden: int | Sequence[int], activation: str, extra_inputs: int = 0) -> nn.Module:
    """The MLP of a net's part that reads the observation (an actor, an agent's Q-network; or
    a critic, reading ``extra_inputs`` more: the action), or over a custom model's features
    of it where ``features`` makes one."""
    if features is None:
        return mlp(observation_size + extra_inputs, outputs, hidden, activation)
    made = features()
    return FeaturesThen(made, observation_size, mlp(made.size + extra_inputs, outputs, hidden, activation))


class MlpA2C(nn.Module):
    """Separate policy and value MLPs (two hidden layers each) for vector observations.

    Nothing is shared: with a shared first layer, the critic's squared errors (returns near
    100 on CartPole) reshaped the policy's features and some seeds collapsed on the way to
    solving (docs/learning.md, "CartPole"). Observations with images go through one
    ``ObservationEncoder`` (``encoder``) that both MLPs read, as SB3's multi-input policy
    shares its extractor: a conv body each would double the compute.

    With a ``DiagGaussian`` distribution (Box actions) the policy MLP gives the means, its
    last layer initialised orthogonally at gain 0.01 so that they start near 0, and a
    state-independent log-std (starting at ``log_std_init``) follows them in the policy head. With
    ``normalize_observations`` both MLPs see the observations standardised by running
    statistics the learner keeps up (``a3c.lib.normalize.ObservationNormalizer``).
    """

    def __init__(self, observation_size: int, n_actions: int, hidden: int | Sequence[int] = MLP_HIDDEN,
                 distribution: Distribution = CATEGORICAL,
                 normalize_observations: bool = False, log_std_init: float = 0.0,
                 encoder: ObservationEncoder | CustomFeatures | None = None, activation: str = "relu",
                 share: bool = False):
        super().__init__()
        self.distribution = distribution
        self.normalizer = observation_normalizer(observation_size, encoder) if normalize_observations else None
        self.encoder = encoder
        features = observation_size if encoder is None else encoder.size
        widths = [hidden, hidden] if isinstance(hidden, int) else list(hidden)
        # the model config's vf_share_layers: one trunk under two linear outputs
        self.trunk = hidden_layers(features, widths, activation) if share else None
        if share:
            features, widths = widths[-1], []
        self.policy = mlp(features, n_actions, widths, activation)
        self.value = mlp(features, 1, widths, activation)
        if distribution.continuous:
            nn.init.orthogonal_(self.policy[-1].weight, gain=0.01)
            nn.init.zeros_(self.policy[-1].bias)
            self.log_std = nn.Parameter(torch.full((n_actions,), float(log_std_init)))

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        observations = observations.float()
        if self.normalizer is not None:
            observations = self.normalizer(observations)
        if self.encoder is not None:
            observations = self.encoder(observations)
        if self.trunk is not None:
            observations = self.trunk(observations)
        head = self.policy(observations)
        if self.distribution.continuous:
            head = torch.cat([head, self.log_std.expand_as(head)], dim=-1)
        return head, self.value(observations).squeeze(-1)




class AtariFeatures(nn.Module):
    """A conv body (``conv_body``) and one hidden ReLU layer over it (or the model config's
    hidden layers), on uint8 frames: the features a recurrent net's cell reads
    (``a3c.lib.recurrent``)."""

    def __init__(self, input_shape: tuple[int, ...], conv: str = "nature",
                 filters: Sequence[ConvFilter] | None = None, hiddens: Sequence[int] | None = None,
                 activation: str = "relu"):
        super().__init__()
        self.conv, conv_out, hidden = conv_body(conv, input_shape, filters)
        widths = [hidden] if hiddens is None else list(hiddens)
        self.size = widths[-1]
        self.hidden = hidden_layers(conv_out, widths, activation)
        init_relu_layers([*self.conv, *self.hidden])
        self.conv.to(memory_format=torch.channels_last)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.hidden(self.conv(scaled_channels_last(observations)))


def observation_encoder(env_info: EnvInfo, conv: str = "nature",
                        filters: Sequence[ConvFilter] | None = None) -> ObservationEncoder | None:
    """The encoder of ``env_info``'s flat rows where they hold images, else None."""
    if not env_info.image_parts:
        return None
    return ObservationEncoder(env_info.observation_shape[0], env_info.image_parts, conv, filters)


def observation_normalizer(observation_size: int,
                           encoder: ObservationEncoder | CustomFeatures | None) -> ObservationNormalizer:
    """Running statistics for the values of a row that are not in an image (images are
    scaled by 255 instead)."""
    return ObservationNormalizer(observation_size, None if encoder is None else encoder.vector_columns)


def build_net(env_info: EnvInfo, heads: str = "separate", conv: str = "nature",
              normalize_observations: bool = False, lstm: bool = False, lstm_cell_size: int = 256,
              mlp_hidden: int = MLP_HIDDEN, log_std_init: float = 0.0,
              model: Mapping[str, Any] | None = None) -> nn.Module:
    """The conv net for Atari frames (with ``heads`` and ``conv``), the MLP for flat vectors
    (``mlp_hidden`` units a layer; a Gaussian policy for Box actions, its log-std starting at
    ``log_std_init``; running observation statistics with ``normalize_observations``); with
    ``lstm``, the body under an LSTM cell of ``lstm_cell_size`` units
    (``a3c.lib.recurrent.RecurrentA2C``; ``heads`` does not apply), or with the model config's
    ``use_attention`` under a gated transformer-XL (``a3c.lib.attention``). Flat rows that hold an env's
    images read them through an ``ObservationEncoder`` with ``conv`` bodies first.

    ``model`` (RLlib's keys, checked by ``a3c.model_config``) replaces the shorthands where it
    gives ``fcnet_hiddens``, ``fcnet_activation``, ``conv_filters`` or ``vf_share_layers``; its
    ``custom_model`` reads the observations (Atari's frames too) in place of the encoder or
    the conv body, under the same heads (``a3c.lib.custom_model``)."""
    model = model or {}
    hiddens, filters = model.get("fcnet_hiddens"), model.get("conv_filters")
    activation, share = model.get("fcnet_activation", "relu"), model.get("vf_share_layers")
    if env_info.continuous:
        distribution = DiagGaussian(env_info.n_actions, env_info.action_low, env_info.action_high)
    else:
        distribution = CATEGORICAL if env_info.action_nvec is None else MultiCategorical(env_info.action_nvec)
    custom = custom_features(env_info, model)
    if lstm or model.get("use_attention"):
        normalizer = None
        if env_info.atari and custom is None:
            body = AtariFeatures(env_info.observation_shape, conv, filters, hiddens, activation)
            features = body.size
        else:
            size = env_info.observation_shape[0]
            encoder = custom or observation_encoder(env_info, conv, filters)
            widths = hiddens or [mlp_hidden]
            layer = hidden_layers(size if encoder is None else encoder.size, widths, activation)
            init_relu_layers(layer)
            body, features = (layer if encoder is None else nn.Sequential(encoder, layer)), widths[-1]
            normalizer = observation_normalizer(size, encoder) if normalize_observations else None
        if lstm:
            return RecurrentA2C(body, features, env_info.n_actions, lstm_cell_size, distribution, normalizer,
                                log_std_init)
        return attention_net(body, features, env_info.n_actions, distribution, normalizer, log_std_init, model)
    if env_info.atari and custom is None:
        if share is not None:
            heads = "shared" if share else "separate"
        return AtariA2C(env_info.observation_shape, env_info.n_actions, heads, conv, filters, hiddens, activation)
    return MlpA2C(env_info.observation_shape[0], env_info.n_actions, hiddens or mlp_hidden, distribution,
                  normalize_observations, log_std_init, custom or observation_encoder(env_info, conv, filters),
                  activation, bool(share))


def attention_net(body: nn.Module, features: int, n_actions: int, distribution: Distribution,
                  normalizer: ObservationNormalizer | None, log_std_init: float,
                  model: Mapping[str, Any]) -> GatedTransformerXL:
    """The GTrXL over ``body`` as the model config's ``attention_*`` keys (RLlib's values where
    not given) shape it."""
    sizes = {**ATTENTION_DEFAULTS, **{key: value for key, value in model.items() if key in ATTENTION_DEFAULTS}}
    return GatedTransformerXL(body, features, n_actions, distribution, normalizer, log_std_init,
                              dim=sizes["attention_dim"], units=sizes["attention_num_transformer_units"],
                              heads=sizes["attention_num_heads"], head_dim=sizes["attention_head_dim"],
                              memory=sizes["attention_memory_inference"],
                              mlp_dim=sizes["attention_position_wise_mlp_dim"],
                              gate_bias=sizes["attention_init_gru_gate_bias"])


def forward(net: nn.Module, observations: torch.Tensor,
            bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy logits, state values) as float32, so that sampling and the loss never see
    bfloat16. ``bf16`` runs the net under bfloat16 autocast (weights stay float32)."""
    with torch.autocast(observations.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits, values = net(observations)
    return logits.float(), values.float()


@torch.inference_mode()
def evaluate(net: nn.Module, observations: torch.Tensor,
             bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``forward`` for acting: no autograd bookkeeping at all.

    ``bf16`` runs it under bfloat16 autocast, which pays on CPUs with bfloat16 instructions
    (docs/performance.md, "bfloat16").
    """
    return forward(net, observations, bf16)
