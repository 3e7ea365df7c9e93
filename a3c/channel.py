"""One child's way to the learner: small records through the shared bounded queue, and
the observation rows of transition batches through preallocated shared-memory slots.

Why slots (TorchBeast's idea): a Pong micro-batch holds ~0.2 MB of frames. Pickled through
the queue's pipe it is copied on both sides, and a child killed while its feeder thread is
half-way through writing it leaves a torn message that blocks the learner's next read.
Written into a slot it is one memcpy, and the queue carries only a few hundred bytes,
which a single pipe write delivers whole or not at all.

Each child has ``slots`` slots used round-robin and a semaphore counting the free ones:
the child takes one before writing, the learner gives it back after copying the rows
out. Messages from one child arrive in order, so slot ``i`` is only rewritten after the
learner has read it.
"""
from __future__ import annotations

import dataclasses
import queue
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from a3c.messages import SlotTransitions, Transitions
from lib.experience import TransitionBatch

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class SlotLayout:
    """The shape of one child's slots."""

    observation_shape: tuple[int, ...]
    observation_dtype: str
    rows: int
    """Most transitions one vector step can emit: envs per process x reward steps."""
    slots: int
    """Micro-batches a child may have in flight."""

    def allocate(self) -> torch.Tensor:
        dtype = torch.from_numpy(np.zeros(0, dtype=self.observation_dtype)).dtype
        shape = (self.slots, self.rows, *self.observation_shape)
        return torch.zeros(shape, dtype=dtype).share_memory_()


class ChildChannel:
    """Both ends of one child's channel; the same object is pickled into the child.

    Every blocking call polls ``stop_event`` so that a child told to stop never waits on
    a learner that has stopped reading.
    """

    def __init__(self, worker_id: int, incarnation: int, messages: Any, stop_event: Any,
                 states: torch.Tensor, free_slots: Any, wait_seconds: torch.Tensor):
        self.worker_id = worker_id
        self.incarnation = incarnation
        self.messages = messages
        self.stop_event = stop_event
        self.states = states
        self.free_slots = free_slots
        self.wait_seconds = wait_seconds
        """Shared: seconds this child spent blocked on a full channel, for the benchmark."""
        self._next_slot = 0

    # child side
    def put(self, message: Any) -> bool:
        """Put, waiting while the queue is full; False if told to stop first."""
        try:
            self.messages.put_nowait(message)
            return True
        except queue.Full:
            pass
        started = time.monotonic()
        try:
            while not self.stop_event.is_set():
                try:
                    self.messages.put(message, timeout=POLL_SECONDS)
                    return True
                except queue.Full:
                    continue
            return False
        finally:
            self.wait_seconds += time.monotonic() - started

    def put_transitions(self, batch: TransitionBatch, policy_version: int) -> bool:
        """Write ``batch.states`` into the next slot and send the rest; False if stopped."""
        if len(batch) > self.states.shape[1]:
            raise ValueError(f"{len(batch)} transitions do not fit a slot of {self.states.shape[1]}")
        if not self.free_slots.acquire(block=False):
            started = time.monotonic()
            try:
                while not self.free_slots.acquire(timeout=POLL_SECONDS):
                    if self.stop_event.is_set():
                        return False
            finally:
                self.wait_seconds += time.monotonic() - started
        slot = self._next_slot
        self._next_slot = (slot + 1) % self.states.shape[0]
        self.states[slot, : len(batch)] = torch.from_numpy(batch.states)
        in_transit = dataclasses.replace(batch, states=None)
        return self.put(SlotTransitions(self.worker_id, self.incarnation, slot, in_transit, policy_version))

    # learner side
    def take(self, message: SlotTransitions) -> Transitions:
        """Copy the rows out of the message's slot, free the slot, and complete the batch."""
        rows = len(message.batch)
        states = self.states[message.slot, :rows].numpy().copy()
        self.free_slots.release()
        versions = np.full(rows, message.policy_version, dtype=np.int64)
        batch = dataclasses.replace(message.batch, states=states, policy_versions=versions)
        return Transitions(message.worker_id, batch)
