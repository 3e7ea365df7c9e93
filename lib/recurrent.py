"""Memory: an actor-critic with an LSTM cell after its body, and the sequences it learns on.

The A3C paper's LSTM agent: the body's features go through one LSTM cell whose output feeds
a linear policy head and a linear value head. A recurrent state is the cell's (h, c), one
``(2, cell_size)`` float32 array per env, zero at an episode's start (the attention net's,
``a3c.lib.attention``, is its memory of past steps, handled the same way).

Acting keeps each env's state and writes the state it acted from into every row
(``recurrent_states``). The learner cannot run rows one at a time as the actor did, so it
cuts each env's rows (a "stream": one env of one worker, rows in the order it stepped) into
sequences of at most ``seq_len`` steps, starts each sequence from the state stored with its
first row, zeroes the state where a row starts an episode (``starts``), and backpropagates
within the sequence only (truncated backprop through time; the stored states carry no
gradient). A sequence cut therefore loses nothing the actor had, only the gradient across it.
"""
from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np
import torch
from torch import nn

from a3c.lib.action_masks import ActionMasked
from a3c.lib.batch import TransitionBuffer
from a3c.lib.distributions import CATEGORICAL, Distribution
from a3c.lib.experience import TransitionBatch
from a3c.lib.normalize import ObservationNormalizer

STREAM_STRIDE = 1 << 20
"""Streams of different workers get ids this far apart: worker * STREAM_STRIDE + env index."""


class RecurrentActorCritic(nn.Module):
    """Body, then a memory, then linear policy and value heads: what the workers and the
    learner know of a net with memory (``RecurrentA2C``'s LSTM cell, or
    ``a3c.lib.attention.GatedTransformerXL``).

    ``body`` maps a batch of observations to ``features`` each (a conv net for Atari frames,
    a layer for vectors). A subclass's ``advance(features, state)`` is the memory's one step,
    its state one ``state_shape`` float32 array per env, zero at an episode's start.
    ``forward(observations, state)`` is one step: (policy head, values, next state). The
    policy head's weights start at gain 0.01 so the first policy is near uniform (a
    Gaussian's means near 0, its state-independent log-std at ``log_std_init``).
    """

    recurrent = True
    state_shape: tuple[int, ...]

    def __init__(self, body: nn.Module, outputs: int, n_actions: int, distribution: Distribution = CATEGORICAL,
                 normalizer: ObservationNormalizer | None = None, log_std_init: float = 0.0):
        super().__init__()
        self.distribution = distribution
        self.normalizer = normalizer
        self.body = body
        self.policy = nn.Linear(outputs, n_actions)
        self.value = nn.Linear(outputs, 1)
        nn.init.orthogonal_(self.policy.weight, gain=0.01)
        nn.init.zeros_(self.policy.bias)
        if distribution.continuous:
            self.log_std = nn.Parameter(torch.full((n_actions,), float(log_std_init)))

    def initial_state(self, rows: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """Zero states for ``rows`` envs."""
        return torch.zeros(rows, *self.state_shape, device=device)

    def features(self, observations: torch.Tensor) -> torch.Tensor:
        """The body's output for each row, before the memory."""
        if self.normalizer is not None:
            observations = self.normalizer(observations.float())
        return self.body(observations)

    def advance(self, features: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory's output for each row and the next state (float32, whatever autocast does)."""
        raise NotImplementedError

    def heads(self, outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(policy head, values) of the memory's outputs."""
        head = self.policy(outputs)
        if self.distribution.continuous:
            head = torch.cat([head, self.log_std.expand_as(head)], dim=-1)
        return head, self.value(outputs).squeeze(-1)

    def forward(self, observations: torch.Tensor,
                state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        outputs, next_state = self.advance(self.features(observations), state)
        head, values = self.heads(outputs)
        return head, values, next_state


class RecurrentA2C(RecurrentActorCritic):
    """The A3C paper's LSTM agent: one LSTM cell of ``cell_size`` units over the body's
    features; its state is the cell's (h, c), ``(2, cell_size)``."""

    def __init__(self, body: nn.Module, features: int, n_actions: int, cell_size: int = 256,
                 distribution: Distribution = CATEGORICAL, normalizer: ObservationNormalizer | None = None,
                 log_std_init: float = 0.0):
        cell = nn.LSTMCell(features, cell_size)  # before the heads: a seed gives the weights it gave
        super().__init__(body, cell_size, n_actions, distribution, normalizer, log_std_init)
        self.cell_size = cell_size
        self.state_shape = (2, cell_size)
        self.cell = cell
        nn.init.zeros_(self.cell.bias_ih)
        nn.init.zeros_(self.cell.bias_hh)

    def advance(self, features: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden, cell = self.cell(features, (state[:, 0], state[:, 1]))
        return hidden, torch.stack([hidden, cell], dim=1).float()


def is_recurrent(net: nn.Module) -> bool:
    return getattr(net, "recurrent", False)


def step(net: RecurrentActorCritic, observations: torch.Tensor, state: torch.Tensor,
         bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One acting step without autograd: (policy head, values) as float32 and the next state."""
    with torch.inference_mode(), torch.autocast(observations.device.type, dtype=torch.bfloat16, enabled=bf16):
        head, values, next_state = net(observations, state)
    return head.float(), values.float(), next_state.float()


def sequences(streams: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Each stream's rows cut into runs of at most ``seq_len``: the rows in run order, and each
    run's length. ``streams`` names each row's stream; a stream's rows must come in the order
    it stepped (other streams' rows may lie between them)."""
    order, lengths = [], []
    for stream in dict.fromkeys(streams.tolist()):
        rows = np.flatnonzero(streams == stream)
        for start in range(0, len(rows), seq_len):
            order.append(rows[start:start + seq_len])
            lengths.append(len(order[-1]))
    return np.concatenate(order), np.array(lengths)


def streams_of(batch: TransitionBatch) -> np.ndarray:
    """Each row's stream: its ``streams`` column where the learner added one (``with_streams``),
    else its env index (the rows of one worker)."""
    return batch.extras.get("streams", batch.env_ids)


def with_streams(batch: TransitionBatch, worker_id: int | np.ndarray) -> TransitionBatch:
    """``batch`` with each row's stream (worker and env) as a column, so rows of several
    workers can be put back into sequences."""
    streams = np.asarray(worker_id, dtype=np.int64) * STREAM_STRIDE + batch.env_ids
    return dataclasses.replace(batch, extras={**batch.extras, "streams": streams})


def unroll(net: RecurrentActorCritic | ActionMasked, observations: torch.Tensor, stored_states: torch.Tensor, starts: np.ndarray,
           lengths: np.ndarray, bf16: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy head, values) of rows in run order (``sequences``), with gradient: each run of
    ``lengths`` steps starts from the stored state of its first row, the state zeroed before
    every row that ``starts`` an episode. The body runs once over all rows; the memory steps one
    time step at a time, every run side by side."""
    device = observations.device
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    steps, width = int(lengths.max()), len(lengths)
    # padding repeats a run's last row; its outputs are never read
    index = offsets[None, :] + np.minimum(np.arange(steps)[:, None], lengths[None, :] - 1)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        features = net.features(observations)
        index_t = torch.as_tensor(index, device=device)
        keep = torch.as_tensor(~np.asarray(starts, dtype=bool)[index], dtype=torch.float32,
                               device=device).reshape(steps, width, *(1 for _ in net.state_shape))
        state = stored_states[index_t[0]].float()
        outputs = []
        for time in range(steps):
            output, state = net.advance(features[index_t[time]], state * keep[time])
            outputs.append(output)
        flat = torch.stack(outputs).reshape(steps * width, -1)
        taken = np.concatenate([np.arange(length) * width + column for column, length in enumerate(lengths)])
        head, values = net.heads(flat[torch.as_tensor(taken, device=device)])
    if isinstance(net, ActionMasked):  # the heads read the memory's outputs: the rows hold the mask
        head = net.mask(head, observations)
    return head.float(), values.float()


class SequenceBuffer:
    """``TransitionBuffer`` for a recurrent learner: holds each stream's rows until they make a
    whole sequence (``seq_len`` rows, or fewer ending an episode), and hands out batches of
    whole sequences, at least ``batch_size`` rows each, so that every sequence the learner
    reruns is as long as the settings allow rather than cut wherever a batch ends. Rows are
    held as (message, row) references and copied out once, a column at a time per message."""

    def __init__(self, batch_size: int, seq_len: int):
        self.batch_size = batch_size
        self.seq_len = seq_len
        self._open: dict[int, list[tuple[TransitionBatch, int]]] = {}
        self._ready: deque[list[tuple[TransitionBatch, int]]] = deque()
        self._ready_rows = 0

    def __len__(self) -> int:
        return self._ready_rows + sum(len(rows) for rows in self._open.values())

    def add(self, transitions: TransitionBatch) -> None:
        ends = transitions.ends
        for row, stream in enumerate(streams_of(transitions).tolist()):
            rows = self._open.setdefault(stream, [])
            rows.append((transitions, row))
            if len(rows) == self.seq_len or ends[row]:
                self._ready.append(self._open.pop(stream))
                self._ready_rows += len(rows)

    def pop_batch(self) -> TransitionBatch | None:
        """Whole sequences, oldest first, of at least ``batch_size`` rows; None while fewer are held."""
        if self._ready_rows < self.batch_size:
            return None
        taken: list[tuple[TransitionBatch, int]] = []
        while len(taken) < self.batch_size:
            taken += self._ready.popleft()
        self._ready_rows -= len(taken)
        return gathered(taken)


def gathered(rows: list[tuple[TransitionBatch, int]]) -> TransitionBatch:
    """One batch of the referenced rows, in order."""
    sources: dict[int, tuple[TransitionBatch, list[int], list[int]]] = {}
    for position, (batch, row) in enumerate(rows):
        _, positions, picked = sources.setdefault(id(batch), (batch, [], []))
        positions.append(position)
        picked.append(row)
    template = rows[0][0].columns()
    columns = {name: np.empty((len(rows), *column.shape[1:]), column.dtype) for name, column in template.items()}
    for batch, positions, picked in sources.values():
        for name, column in batch.columns().items():
            columns[name][positions] = column[picked]
    return TransitionBatch.from_columns(columns)


def transition_buffer(net: nn.Module, batch_size: int, seq_len: int) -> TransitionBuffer | SequenceBuffer:
    """The buffer a learner of ``net`` batches rows in: whole sequences for a recurrent net."""
    return SequenceBuffer(batch_size, seq_len) if is_recurrent(net) else TransitionBuffer(batch_size)
