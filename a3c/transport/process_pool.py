"""The process backend of the worker pool: the only place that knows about child
processes, their queues and their shared-memory slots.

Each child writes its own bounded queue. An ``mp.Queue`` shared by several writers holds
one cross-process write lock while a child's feeder thread sends; a child SIGKILLed at
that moment keeps it locked for good, and every other child (its own replacement included)
then blocks on it forever (docs/design.md). A child's own
queue is dropped with it and a restarted child gets a new one. The learner waits on all
the queues' read ends at once.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import math
import os
import queue
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

import cloudpickle
import torch
import torch.multiprocessing as mp

from a3c.options import ConfigError, shared_memory_free
from a3c.transport.channel import ChildChannel, allocate_slots, slot_columns, slots_bytes
from a3c.transport.messages import CallResult, SlotRows, WorkerCall, WorkerCrashed
from a3c.transport.pool import (
    WorkerDied,
    WorkerInfo,
    WorkerPool,
    child_seed,
    messages_per_worker,
    queue_capacity,
)
from a3c.transport.worker import worker_main

if TYPE_CHECKING:
    from torch import nn

    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo

LIVENESS_CHECK_SECONDS = 0.5
AWAY_SECONDS = 2.0
"""A gap this long between two reads means the learner was away (a long update, a checkpoint
written, the process stopped): that time does not count against the workers' silence."""


@contextlib.contextmanager
def _main_script_left_out() -> Iterator[None]:
    """A spawned child runs the parent's main script again unless it has none. A script
    that is not a file (``python - < train.py``, code piped or generated) cannot be run
    again, and every child would die trying: its name is hidden while children start, so
    they start without it (what they receive is defined in importable modules)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None or os.path.exists(path):
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


FORK_SERVER_TENSORS = 200
"""The most shared tensors a child is forked with: the fork server gets their file
descriptors in one message, which Linux caps at 253 (multiprocessing refuses more than
about 250). A child of a net with more is spawned."""


def child_context(shared_tensors: int, cuda: bool) -> Any:
    """How children start: forked from a fork server that imported the worker's modules (torch
    among them) once, so a child starts in milliseconds instead of importing torch again.
    Spawned where the platform has no fork server, the child takes more than
    ``FORK_SERVER_TENSORS`` shared tensors, or the run is on the GPU (its children open CUDA
    contexts of their own, on the path every GPU run has taken). Both give a fresh
    interpreter's state: the server is itself spawned and forks before any thread exists in it."""
    if "forkserver" not in mp.get_all_start_methods() or shared_tensors > FORK_SERVER_TENSORS or cuda:
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(["a3c.transport.worker"])
    return context


def check_slots_fit(needed: int) -> None:
    """ConfigError, before any child or slot exists, where the children's slots would not fit
    in the shared memory free now (a queue of millions of messages, say)."""
    free = shared_memory_free()
    if free is not None and needed > free:
        raise ConfigError(f"the children's shared-memory slots need {needed / 2**30:.1f} GiB and "
                          f"{free / 2**30:.1f} GiB are free in /dev/shm and memory: lower --batch-size or --queue-size")


class ProcessPool(WorkerPool):
    """Spawned children running ``worker_main``, each with its own queue and slots."""

    def __init__(self, algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
                 version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()):
        super().__init__(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
        processes = config.processes
        self._args = (algorithm, config, net, version_counter)
        self._payload = algorithm.payload(config, env_info, net)
        # a child's shared tensors: the net's, a slot block per column, the version counter
        # and its wait-seconds tensor
        net_tensors = len(list(net.parameters())) + len(list(net.buffers()))
        self._context = child_context(net_tensors + len(slot_columns(self._payload)) + 2, config.cuda)
        capacity = queue_capacity(algorithm, config)
        self._queue_capacity = math.ceil(capacity / processes)
        self._queues: list = [None] * processes
        self._next_queue = 0
        self._salvaged: collections.deque = collections.deque()
        self.stop_event = self._context.Event()
        self._slot_count = messages_per_worker(algorithm, config)
        check_slots_fit(processes * slots_bytes(self._payload, self._slot_count))
        self._slots = [allocate_slots(self._payload, self._slot_count) for _ in range(processes)]
        self._wait_seconds = [torch.zeros((), dtype=torch.float64).share_memory_()
                              for _ in range(processes)]
        self._channels: list[ChildChannel | None] = [None] * processes
        self._processes: list = [None] * processes
        self._incarnations = [0] * processes
        self._tasks: list = [None] * processes
        self._env_task: Any = None
        self._next_liveness_check = 0.0
        self._last_heard = [0.0] * processes
        """When each child was started or last sent a message (time.monotonic)."""
        self._last_read = time.monotonic()
        self._closed = False
        self._call_ids = itertools.count()

    def start(self) -> None:
        for worker_id in range(len(self._processes)):
            self._start(worker_id)

    def _start(self, worker_id: int) -> None:
        incarnation = self._incarnations[worker_id]
        self._queues[worker_id] = self._context.Queue(maxsize=self._queue_capacity)
        self._tasks[worker_id] = self._context.Queue()
        if self._env_task is not None:
            self._tasks[worker_id].put(self._env_task)
        channel = ChildChannel(worker_id, incarnation, self._queues[worker_id], self.stop_event, self._payload,
                               self._slots[worker_id], self._slot_count,
                               self._context.BoundedSemaphore(self._slot_count),
                               self._wait_seconds[worker_id], self._tasks[worker_id])
        process = self._context.Process(
            target=worker_main, name=f"a3c-worker-{worker_id}", daemon=True,
            args=(worker_id, *self._args, channel, child_seed(self.base_seed, worker_id, incarnation),
                  self.registered, self.callbacks, dict(os.environ)),
        )
        with _main_script_left_out():
            process.start()
        self._last_heard[worker_id] = time.monotonic()
        self._channels[worker_id] = channel
        self._processes[worker_id] = process

    def restart(self, worker_id: int) -> None:
        """Replace a dead child with a fresh one: new envs, next seed, its own slots reused.

        A child that exited by itself flushed its queue on the way out: its records that
        name a slot are dropped (the new child writes over those slots), the rest (finished
        episodes, its crash report) are kept for ``get``. A child killed by a signal may
        have left a torn message, which would block the read, so its queue goes unread.
        """
        process = self._processes[worker_id]
        process.join(timeout=1.0)
        if process.is_alive():
            process.kill()
            process.join(timeout=5.0)
        if process.exitcode is not None and process.exitcode >= 0:
            self._salvaged.extend(message for message in self._drain(self._queues[worker_id])
                                  if not isinstance(message, SlotRows))
        self._discard_queue(self._queues[worker_id])
        self._discard_queue(self._tasks[worker_id])
        self._incarnations[worker_id] += 1
        self._start(worker_id)

    def call_workers(self, function: Callable[[Any], Any], timeout: float) -> list[CallResult]:
        call = WorkerCall(next(self._call_ids), cloudpickle.dumps(function))
        asked = [worker_id for worker_id, process in enumerate(self._processes) if process is not None]
        for worker_id in asked:
            self._tasks[worker_id].put(call)
        answers: dict[int, CallResult] = {}
        held: list[Any] = []
        deadline = time.monotonic() + timeout
        try:
            while len(answers) < len(asked):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"foreach_worker: workers {sorted(set(asked) - set(answers))} did not "
                                       f"answer in {timeout:g} s")
                message = self.get(timeout=0.5)
                if isinstance(message, CallResult) and message.call_id == call.call_id:
                    answers[message.worker_id] = message
                elif message is not None and not isinstance(message, CallResult):  # an older call's answer: dropped
                    held.append(message)
        finally:
            self._salvaged.extendleft(reversed(held))  # the learner takes them next, in order
        return list(answers.values())

    def set_env_task(self, task: Any) -> None:
        """Send every child ``task`` for its envs; children started later get it too."""
        self._env_task = task
        for tasks in self._tasks:
            if tasks is not None:
                tasks.put(task)

    def child_wait_seconds(self) -> float:
        """Seconds all children together have spent blocked on a full channel so far."""
        return float(sum(float(seconds) for seconds in self._wait_seconds))

    def queued(self) -> int:
        """Messages waiting in all the children's queues (approximate, as ``qsize`` is)."""
        return sum(messages.qsize() for messages in self._queues if messages is not None)

    def workers(self) -> list[WorkerInfo]:
        return [WorkerInfo(worker_id, process.pid, None, process.exitcode)
                for worker_id, process in enumerate(self._processes) if process is not None]

    def get(self, timeout: float = 1.0) -> Any | None:
        """The next message, or None after ``timeout`` seconds without a usable one.

        Raises WorkerDied when a child reported a crash or is found dead; the check runs
        at least every half second even while messages keep coming. A crash report from
        a child that was already restarted is returned as it is, for its traceback.
        """
        now = time.monotonic()
        if now - self._last_read > AWAY_SECONDS:  # the learner was away: the children's silence is not theirs
            self._last_heard = [heard + now - self._last_read for heard in self._last_heard]
        self._last_read = now
        if now >= self._next_liveness_check:
            self._next_liveness_check = now + LIVENESS_CHECK_SECONDS
            self.check_alive()
            self.check_heard_from(now)
        message = self._salvaged.popleft() if self._salvaged else self._next_message(timeout)
        self._last_read = time.monotonic()
        if message is None:
            self.check_alive()
            return None
        self._last_heard[message.worker_id] = self._last_read
        # a dead child's slot records went with its queue, so every slot record is current
        if isinstance(message, SlotRows):
            return self._channels[message.worker_id].take(message)
        if isinstance(message, WorkerCrashed) and message.incarnation == self._incarnations[message.worker_id]:
            process = self._processes[message.worker_id]
            process.join(timeout=5.0)
            raise WorkerDied(message.worker_id, process.exitcode, message.traceback, message.fatal)
        return message

    def _next_message(self, timeout: float) -> Any | None:
        """One message from the first ready queue, taking the queues in turn so that no
        child's messages wait behind another's; None after ``timeout`` with none ready."""
        # an mp.Queue's read end is a Connection, which connection.wait can watch
        ready = wait([messages._reader for messages in self._queues], timeout=timeout)
        for offset in range(len(self._queues)):
            messages = self._queues[(self._next_queue + offset) % len(self._queues)]
            if messages._reader in ready:
                self._next_queue = (self._next_queue + offset + 1) % len(self._queues)
                try:
                    return messages.get_nowait()
                except queue.Empty:  # another reader cannot exist; a partial message can
                    continue
        return None

    def check_alive(self) -> None:
        for worker_id, process in enumerate(self._processes):
            if process.exitcode is not None:
                raise WorkerDied(worker_id, process.exitcode)

    def check_heard_from(self, now: float) -> None:
        """WorkerDied for a live child that has sent nothing for ``--worker-timeout`` seconds
        with nothing of its own waiting to be read (a child blocked on its full queue is
        waiting for the learner, not stuck); ``restart`` kills it."""
        for worker_id, heard in enumerate(self._last_heard):
            silent = now - heard
            if silent > self.config.worker_timeout and self._queues[worker_id].empty():
                raise WorkerDied(worker_id, None, cause=(
                    f"worker {worker_id} (pid {self._processes[worker_id].pid}) sent nothing for {silent:.0f} s "
                    f"(--worker-timeout {self.config.worker_timeout:g}): taken for stuck and killed"))

    def message_ages(self) -> list[float]:
        """Seconds since each child last sent a message (or started), the learner's absences
        left out."""
        now = time.monotonic()
        away = max(0.0, now - self._last_read - AWAY_SECONDS)
        return [max(0.0, now - heard - away) for heard in self._last_heard]

    def kill(self) -> None:
        """SIGKILL every child at once: the way out when there is no time for ``close``."""
        for process in self._processes:
            if process is not None and process.is_alive():
                process.kill()

    def close(self, join_timeout: float = 5.0) -> None:
        """Ordered shutdown: stop event, drain while children leave, kill stragglers, close.

        Draining matters: a child cannot exit while its queue feeder still holds data the
        learner has not read. Calling it again does nothing.
        """
        if self._closed:
            return
        self._closed = True
        self.stop_event.set()
        deadline = time.monotonic() + join_timeout
        while time.monotonic() < deadline and any(p.is_alive() for p in self._processes if p):
            for messages in self._queues:
                if messages is not None:
                    self._drain(messages)
            for process in self._processes:
                if process is not None:
                    process.join(timeout=0.05)
        self.kill()
        for process in self._processes:
            if process is not None:
                process.join(timeout=5.0)
        for messages in self._queues + self._tasks:  # unread: a killed straggler may have torn one
            if messages is not None:
                self._discard_queue(messages)

    @staticmethod
    def _drain(messages: Any) -> list:
        """Everything queued now; a child cannot exit while its feeder still holds data."""
        drained = []
        try:
            while True:
                drained.append(messages.get_nowait())
        except (queue.Empty, OSError, EOFError):
            return drained

    @staticmethod
    def _discard_queue(messages: Any) -> None:
        messages.close()
        messages.cancel_join_thread()
