"""Learner-side batching: exact-size batches from micro-batches, and unpacking to tensors."""
from __future__ import annotations

from collections import deque

import numpy as np
import torch
from torch import nn

from lib.experience import TransitionBatch


class TransitionBuffer:
    """Collects micro-batches and hands out batches of exactly ``batch_size`` transitions.

    A micro-batch that overshoots is split; its tail opens the next batch, so no
    transition is dropped or used twice and arrival order is kept.
    """

    def __init__(self, batch_size: int):
        self.batch_size = batch_size
        self._parts: deque[TransitionBatch] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, transitions: TransitionBatch) -> None:
        if len(transitions):
            self._parts.append(transitions)
            self._size += len(transitions)

    def pop_batch(self) -> TransitionBatch | None:
        """The oldest ``batch_size`` transitions, or None while fewer are held."""
        if self._size < self.batch_size:
            return None
        taken: list[TransitionBatch] = []
        missing = self.batch_size
        while missing:
            part = self._parts.popleft()
            if len(part) > missing:
                self._parts.appendleft(part[missing:])
                part = part[:missing]
            taken.append(part)
            missing -= len(part)
        self._size -= self.batch_size
        return TransitionBatch.concatenate(taken)


def unpack_batch(
    transitions: TransitionBatch, net: nn.Module, gamma: float, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(states, actions, reference values) on ``device``.

    reference = discounted reward + gamma**steps * V(last state) where the episode did not
    terminate; ``steps`` is n except for transitions cut short by truncation. V(last state)
    is the sender's ``last_values`` when present, else ``net`` evaluates ``last_states``
    without gradient: either way it is a target, not a prediction.
    """
    states = torch.as_tensor(transitions.states).to(device)
    actions = torch.as_tensor(transitions.actions).to(device)
    reference_values = torch.tensor(transitions.rewards, dtype=torch.float32, device=device)
    bootstrap_rows = np.flatnonzero(~transitions.dones)
    if len(bootstrap_rows):
        bootstrap_values = _bootstrap_values(transitions, bootstrap_rows, net, device)
        discounts = torch.as_tensor(
            gamma ** transitions.steps[bootstrap_rows].astype(np.float64), dtype=torch.float32
        ).to(device)
        rows = torch.as_tensor(bootstrap_rows).to(device)
        reference_values[rows] += discounts * bootstrap_values
    return states, actions, reference_values


def _bootstrap_values(transitions: TransitionBatch, rows: np.ndarray, net: nn.Module,
                      device: torch.device | str) -> torch.Tensor:
    if transitions.last_values is not None:
        return torch.as_tensor(transitions.last_values[rows], dtype=torch.float32).to(device)
    if transitions.last_states is None:
        raise ValueError("transitions carry neither last_states nor last_values")
    last_states = torch.as_tensor(transitions.last_states[rows]).to(device)
    with torch.no_grad():
        _, values = net(last_states)
    return values
