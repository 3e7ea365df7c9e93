"""Attention as memory: the gated transformer-XL (GTrXL) of Parisotto et al. 2019, RLlib's
``use_attention``, stepped one time step at a time as the LSTM is (``a3c.lib.recurrent``).

Each env's state is its memory of the last ``memory`` steps: for every step, the body's
features at it, the input each later transformer unit had at it, and a flag that the step
belongs to this episode. The first unit projects the remembered features again at every step:
the learner's gradient then reaches how a remembered step is read, however far back it lies
(with the projection's output stored instead, the cue's reading drifted away once the task was
solved: CueMemory with the cue 12 steps back and sequences of 4 fell from 1.0 to 0). An episode's
start zeroes the state (the workers and the learner do so for every recurrent net), so its
flags are 0 and no unit attends to a step of the episode before. A step shifts the memory by
one and writes its own at the end; the learner reruns sequences of
``--seq-len`` steps from the stored memory, which reaches ``memory`` steps back however short
the sequences are: a cue further back than the LSTM's truncated gradient reaches is still
there to attend to.

A unit (the paper's "TrXL-I" order, layer norm on each part's input): multi-head attention of
the current step over the memory and itself, with a learned embedding for "k steps ago" added
to each position, then a GRU-type gate that starts near the identity (``gate_bias``); then a
position-wise MLP and a second gate.
"""
from __future__ import annotations

import torch
from torch import nn

from a3c.lib.distributions import CATEGORICAL, Distribution
from a3c.lib.normalize import ObservationNormalizer
from a3c.lib.recurrent import RecurrentActorCritic


class GRUGate(nn.Module):
    """The GTrXL's gate of a residual stream ``x`` and a part's output ``y``:
    r = sig(W_r y + U_r x), z = sig(W_z y + U_z x - b), h = tanh(W_g y + U_g (r * x)),
    out = (1 - z) * x + z * h, with b = ``bias`` (> 0: z small, the stream passed on)."""

    def __init__(self, dim: int, bias: float):
        super().__init__()
        self.from_y = nn.Linear(dim, 3 * dim, bias=False)
        self.from_x = nn.Linear(dim, 2 * dim, bias=False)
        self.reset_x = nn.Linear(dim, dim, bias=False)
        self.bias = nn.Parameter(torch.full((dim,), float(bias)))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        y_r, y_z, y_g = self.from_y(y).chunk(3, dim=-1)
        x_r, x_z = self.from_x(x).chunk(2, dim=-1)
        reset = torch.sigmoid(y_r + x_r)
        update = torch.sigmoid(y_z + x_z - self.bias)
        candidate = torch.tanh(y_g + self.reset_x(reset * x))
        return (1 - update) * x + update * candidate


class TransformerUnit(nn.Module):
    """One GTrXL unit: the current step's input ``x`` (N, dim) attends over its ``memory``
    (N, memory, dim) where ``valid`` (N, memory) and over itself."""

    def __init__(self, dim: int, heads: int, head_dim: int, memory: int, mlp_dim: int, gate_bias: float):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.positions = nn.Parameter(torch.randn(memory + 1, dim) * 0.02)
        """A learned embedding per position: index k holds the step ``memory - k`` steps ago."""
        self.attention_norm = nn.LayerNorm(dim)
        self.query = nn.Linear(dim, heads * head_dim, bias=False)
        self.key_value = nn.Linear(dim, 2 * heads * head_dim, bias=False)
        self.attended = nn.Linear(heads * head_dim, dim, bias=False)
        self.attention_gate = GRUGate(dim, gate_bias)
        self.mlp_norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, dim))
        self.mlp_gate = GRUGate(dim, gate_bias)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        # shapes from -1 and the tensors themselves, so that a traced export takes any batch
        window = self.attention_norm(torch.cat([memory, x[:, None]], dim=1) + self.positions)
        query = self.query(window[:, -1]).reshape(-1, self.heads, 1, self.head_dim)
        split = self.key_value(window).reshape(-1, window.shape[1], 2, self.heads, self.head_dim)
        keys, values = split[:, :, 0].transpose(1, 2), split[:, :, 1].transpose(1, 2)  # (N, heads, steps, head_dim)
        scores = query @ keys.transpose(-1, -2) / self.head_dim ** 0.5  # (N, heads, 1, steps)
        seen = torch.cat([valid, torch.ones_like(valid[:, :1])], dim=1)[:, None, None]
        weights = torch.softmax(scores.masked_fill(~seen, float("-inf")), dim=-1)
        attended = (weights @ values).reshape(-1, self.heads * self.head_dim)
        x = self.attention_gate(x, torch.relu(self.attended(attended)))
        return self.mlp_gate(x, torch.relu(self.mlp(self.mlp_norm(x))))


class GatedTransformerXL(RecurrentActorCritic):
    """The body's features, projected to ``dim``, through ``units`` transformer units over a
    memory of ``memory`` steps, then the policy and value heads. The state of an env is
    ``(memory, features + (units - 1) * dim + 1)``: a row per remembered step, oldest first,
    holding the body's features at that step (the first unit projects them again, so that
    the gradient of a later step reaches how a remembered one is read), each later unit's
    input, and the step's flag."""

    def __init__(self, body: nn.Module, features: int, n_actions: int, distribution: Distribution = CATEGORICAL,
                 normalizer: ObservationNormalizer | None = None, log_std_init: float = 0.0, *, dim: int = 64,
                 units: int = 1, heads: int = 1, head_dim: int = 32, memory: int = 50, mlp_dim: int = 32,
                 gate_bias: float = 2.0):
        super().__init__(body, dim, n_actions, distribution, normalizer, log_std_init)
        self.dim, self.memory, self.feature_size = dim, memory, features
        self.state_shape = (memory, features + (units - 1) * dim + 1)
        self.embed = nn.Linear(features, dim)
        self.units = nn.ModuleList(TransformerUnit(dim, heads, head_dim, memory, mlp_dim, gate_bias)
                                   for _ in range(units))

    def advance(self, features: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed(features)
        valid = state[:, :, -1] > 0.5
        remembered = [self.embed(state[:, :, :self.feature_size].to(features.dtype))]
        remembered += [state[:, :, self.feature_size + index * self.dim:self.feature_size + (index + 1) * self.dim]
                       for index in range(len(self.units) - 1)]
        written = [features]
        for index, unit in enumerate(self.units):
            x = unit(x, remembered[index].to(x.dtype), valid)
            if index + 1 < len(self.units):
                written.append(x)
        slot = torch.cat([*(part.float() for part in written), torch.ones_like(state[:, 0, :1])], dim=1)
        return x, torch.cat([state[:, 1:], slot[:, None]], dim=1)
