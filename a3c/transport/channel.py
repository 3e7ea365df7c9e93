"""One child's way to the learner: small records through the shared bounded queue, and
large arrays (the observation rows of transition batches, or a flat gradient) through
preallocated shared-memory slots.

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

import os
import queue
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from a3c.transport.messages import Gradients, SlotGradients, SlotTransitions, Transitions
from lib.experience import TransitionBatch

if TYPE_CHECKING:
    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from lib.gradients import LossStats

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class SlotLayout:
    """The shape of one child's slots: ``slots`` x ``rows`` x ``row_shape`` of ``dtype``."""

    row_shape: tuple[int, ...]
    """One observation, or (number of parameters,) for a flat gradient."""
    dtype: str
    rows: int
    """Transitions: the most one vector step can emit (envs x reward steps), twice that
    with last states; a flat gradient: 1."""
    slots: int
    """Messages with arrays a child may have in flight."""

    def allocate(self) -> torch.Tensor:
        dtype = torch.from_numpy(np.zeros(0, dtype=self.dtype)).dtype
        return torch.zeros((self.slots, self.rows, *self.row_shape), dtype=dtype).share_memory_()


def queue_capacity(algorithm: Algorithm, config: Config) -> int:
    """Messages with arrays in flight over all children: ``--queue-size``, else enough for
    the algorithm's ``rows_in_flight`` and two per child. Smaller and the learner waits on
    children that wait on it: with fewer than a batch of transitions in flight, collecting
    and learning take turns."""
    if config.queue_size:
        return config.queue_size
    messages = -(-algorithm.rows_in_flight(config) // algorithm.transitions_per_message(config))
    return max(2 * config.processes, messages)


def slots_per_child(algorithm: Algorithm, config: Config) -> int:
    """Messages with arrays one child may have in flight: its share of the queue, at least one."""
    return max(1, -(-queue_capacity(algorithm, config) // config.processes))


class ChildChannel:
    """Both ends of one child's channel; the same object is pickled into the child.

    Every blocking call polls ``stop_event`` and the child's parent so that a child told to
    stop, or orphaned, never waits on a learner that has stopped reading.
    """

    def __init__(self, worker_id: int, incarnation: int, messages: Any, stop_event: Any,
                 slots: torch.Tensor, free_slots: Any, wait_seconds: torch.Tensor, tasks: Any):
        self.worker_id = worker_id
        self.incarnation = incarnation
        self.messages = messages
        self.tasks = tasks
        """The other way, learner to child: env tasks (curriculum), rare and small."""
        self.stop_event = stop_event
        self.slots = slots
        self.free_slots = free_slots
        self.wait_seconds = wait_seconds
        """Shared: seconds this child spent blocked on a full channel, for the benchmark."""
        self._next_slot = 0
        self.learner_pid = os.getpid()
        """The process that made the channel: the learner, and its children's parent."""

    # child side
    def orphaned(self) -> bool:
        """The learner's process is gone without setting the stop event (SIGKILL, a crash),
        so no one will read a message or free a slot again."""
        return os.getpid() != self.learner_pid and os.getppid() != self.learner_pid

    def stopped(self) -> bool:
        return self.stop_event.is_set() or self.orphaned()

    def abandon(self) -> None:
        """An orphan's exit: drop what the queue's feeder thread still holds, which would
        otherwise keep the process waiting at exit for a reader that is gone."""
        self.messages.cancel_join_thread()

    def put(self, message: Any) -> bool:
        """Put, waiting while the queue is full; False if stopped or orphaned first."""
        try:
            self.messages.put_nowait(message)
            return True
        except queue.Full:
            pass
        started = time.monotonic()
        try:
            while not self.stopped():
                try:
                    self.messages.put(message, timeout=POLL_SECONDS)
                    return True
                except queue.Full:
                    continue
            return False
        finally:
            self.wait_seconds += time.monotonic() - started

    def poll_task(self) -> Any | None:
        """The newest env task the learner sent since the last call, or None."""
        task = None
        while not self.tasks.empty():
            try:
                task = self.tasks.get_nowait()
            except queue.Empty:
                break
        return task

    def put_transitions(self, batch: TransitionBatch) -> bool:
        """Write ``batch.states`` (and ``batch.last_states``, if any) into the next slot and
        send the other columns; False if stopped or orphaned."""
        observations = [batch.states] if batch.last_states is None else [batch.states, batch.last_states]
        slot = self._fill_slot(observations)
        if slot is None:
            return False
        return self.put(SlotTransitions(self.worker_id, slot, batch.small_columns(),
                                        with_last_states=batch.last_states is not None))

    def put_gradient(self, gradient: np.ndarray, policy_version: int, transitions: int,
                     loss: LossStats) -> bool:
        """Write a flat gradient into the next slot and send its record; False if stopped or orphaned."""
        slot = self._fill_slot([gradient[None]])
        if slot is None:
            return False
        return self.put(SlotGradients(self.worker_id, slot, policy_version,
                                      transitions, loss))

    def _fill_slot(self, parts: list[np.ndarray]) -> int | None:
        """Wait for a free slot and copy the rows of ``parts`` into it, one after the other;
        None if stopped or orphaned first."""
        rows = sum(len(part) for part in parts)
        if rows > self.slots.shape[1]:
            raise ValueError(f"{rows} rows do not fit a slot of {self.slots.shape[1]}")
        if not self.free_slots.acquire(block=False):
            started = time.monotonic()
            try:
                while not self.free_slots.acquire(timeout=POLL_SECONDS):
                    if self.stopped():
                        return None
            finally:
                self.wait_seconds += time.monotonic() - started
        slot = self._next_slot
        self._next_slot = (slot + 1) % self.slots.shape[0]
        start = 0
        for part in parts:
            self.slots[slot, start:start + len(part)] = torch.from_numpy(part)
            start += len(part)
        return slot

    # learner side
    def take(self, message: SlotTransitions | SlotGradients) -> Transitions | Gradients:
        """Copy the arrays out of the message's slot, free the slot, and complete the message."""
        if isinstance(message, SlotGradients):
            gradient = self._read_slot(message.slot, 1)[0]
            return Gradients(message.worker_id, gradient, message.policy_version,
                             message.transitions, message.loss)
        rows = len(message.columns["actions"])
        observations = self._read_slot(message.slot, 2 * rows if message.with_last_states else rows)
        last_states = observations[rows:] if message.with_last_states else None
        return Transitions(message.worker_id, TransitionBatch(
            states=observations[:rows], last_states=last_states, **message.columns))

    def _read_slot(self, slot: int, rows: int) -> np.ndarray:
        copied = self.slots[slot, :rows].numpy().copy()
        self.free_slots.release()
        return copied
