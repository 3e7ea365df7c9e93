"""One child's way to the learner: small records through the shared bounded queue, and
the large columns its algorithm declared (observation rows, a flat gradient) through
preallocated shared-memory slots. It knows the columns only as the ``a3c.lib.columns.Payload``
declares them.

Why slots (TorchBeast's idea): a Pong micro-batch holds ~0.2 MB of frames. Pickled through
the queue's pipe it is copied on both sides, and a child killed while its feeder thread is
half-way through writing it leaves a torn message that blocks the learner's next read.
Written into a slot it is one memcpy, and the queue carries only a few hundred bytes,
which a single pipe write delivers whole or not at all.

Each child has ``slots`` slots used round-robin (a shared tensor per large column, a row
block per slot) and a semaphore counting the free ones: the child takes one before writing,
the learner gives it back after copying the rows out. Messages from one child arrive in
order, so slot ``i`` is only rewritten after the learner has read it.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import time
from typing import Any

import numpy as np
import torch

from a3c.lib.columns import Column, Payload
from a3c.transport.messages import SlotRows

POLL_SECONDS = 0.1
SLOT_BYTES = 4096
"""A column whose rows in one full message take this much or more travels in a slot. Below
it, pickling through the pipe costs less than a slot, and the record stays near the size a
single pipe write delivers whole (PIPE_BUF, 4096 bytes on Linux)."""


def slot_columns(payload: Payload) -> tuple[Column, ...]:
    """The columns of ``payload`` that travel in shared-memory slots: the large ones."""
    return tuple(column for column in payload.columns if payload.max_rows * column.row_bytes >= SLOT_BYTES)


def slots_bytes(payload: Payload, slots: int) -> int:
    """The shared memory ``allocate_slots`` takes for one child."""
    return slots * payload.max_rows * sum(column.row_bytes for column in slot_columns(payload))


def allocate_slots(payload: Payload, slots: int) -> dict[str, torch.Tensor]:
    """Shared memory for one child: ``slots`` x ``payload.max_rows`` rows of each large column."""
    return {column.name: torch.zeros((slots, payload.max_rows, *column.shape),
                                     dtype=torch.from_numpy(np.zeros(0, dtype=column.dtype)).dtype).share_memory_()
            for column in slot_columns(payload)}


class ChildChannel:
    """Both ends of one child's channel; the same object is pickled into the child.

    Every blocking call polls ``stop_event`` and the child's parent so that a child told to
    stop, or orphaned, never waits on a learner that has stopped reading.
    """

    def __init__(self, worker_id: int, incarnation: int, messages: Any, stop_event: Any, payload: Payload,
                 slots: dict[str, torch.Tensor], slot_count: int, free_slots: Any, wait_seconds: torch.Tensor,
                 tasks: Any):
        self.worker_id = worker_id
        self.payload = payload
        self.large_names = frozenset(column.name for column in slot_columns(payload))
        self.incarnation = incarnation
        self.messages = messages
        self.tasks = tasks
        """The other way, learner to child: env tasks (curriculum), rare and small."""
        self.stop_event = stop_event
        self.slots = slots
        """Each large column's shared rows: ``slot_count`` x max rows x the row's shape."""
        self.slot_count = slot_count
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
        if os.getpid() == self.learner_pid:
            return False
        parent = multiprocessing.parent_process()
        return parent is not None and not parent.is_alive()

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

    def poll_tasks(self) -> list[Any]:
        """What the learner sent since the last call, in order: env tasks and ``WorkerCall``s."""
        tasks = []
        while not self.tasks.empty():
            try:
                tasks.append(self.tasks.get_nowait())
            except queue.Empty:
                break
        return tasks

    def put_item(self, item: Any) -> bool:
        """Encode ``item`` as the payload declares, write its large columns into the next slot
        and send the rest; False if stopped or orphaned. PayloadError for columns that do not
        match the declaration."""
        columns, meta = self.payload.encode_checked(item)
        large = self.large_names
        slot = self._fill_slot({name: array for name, array in columns.items() if name in large})
        if slot is None:
            return False
        rows = len(next(iter(columns.values())))
        small = {name: array for name, array in columns.items() if name not in large}
        return self.put(SlotRows(self.worker_id, slot, rows, small, meta))

    def _fill_slot(self, large: dict[str, np.ndarray]) -> int | None:
        """Wait for a free slot and copy each large column's rows into it; None if stopped or
        orphaned first."""
        if not self.free_slots.acquire(block=False):
            started = time.monotonic()
            try:
                while not self.free_slots.acquire(timeout=POLL_SECONDS):
                    if self.stopped():
                        return None
            finally:
                self.wait_seconds += time.monotonic() - started
        slot = self._next_slot
        self._next_slot = (slot + 1) % self.slot_count
        for name, array in large.items():
            self.slots[name][slot, :len(array)] = torch.from_numpy(array)
        return slot

    # learner side
    def take(self, message: SlotRows) -> Any:
        """Copy the large columns out of the message's slot, free the slot, and decode the
        message as the payload declares."""
        columns = {name: slots[message.slot, :message.rows].numpy().copy() for name, slots in self.slots.items()}
        self.free_slots.release()
        return self.payload.decode(self.worker_id, columns | message.columns, message.meta)
