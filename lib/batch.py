"""Learner-side batching: exact-size batches from micro-batches, arrival order kept."""
from __future__ import annotations

from collections import deque

from a3c.lib.experience import TransitionBatch


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




