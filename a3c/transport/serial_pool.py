"""The serial backend of the worker pool: every worker's envs stepped in turn in the learner's
own process and thread, with the same acting code and algorithm sender as a child process.

Acting and learning take turns instead of running side by side, so it is for debugging and
tests rather than speed: a ``breakpoint()`` in an env or a worker-side callback stops there,
with this terminal's stdin, and a seed gives the same run every time, since the workers take
turns in a fixed order and the learner reads each message as soon as it is made. (RLlib's
local worker and Sample Factory's serial mode serve the same two purposes.)
"""
from __future__ import annotations

import collections
import contextlib
import os
import pickle
import time
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import cloudpickle

from a3c.lib.episodes import CallbackError
from a3c.lib.time_limit import TimeLimitExceeded, time_limit
from a3c.transport.messages import CallResult, EpisodeEnded, WorkerCall
from a3c.transport.pool import WorkerDied, WorkerInfo, WorkerPool, child_seed
from a3c.transport.worker import make_sender, make_vector_actor
from a3c.transport.worker_calls import call_in_worker

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.base import Algorithm, Sender
    from a3c.config import Config
    from a3c.env_runner import VectorActor
    from a3c.lib.envs import EnvInfo


def crossed(message: Any) -> Any:
    """``message`` pickled and read back, as it would cross a child's queue: a copy, and an
    error here for what a process could not send (a callback's custom metric, say)."""
    return pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


class SerialPool(WorkerPool):
    """``config.processes`` workers, each a ``VectorActor`` and its sender in this process;
    ``get`` steps them one vector step each, in turn, until one has something for the learner."""

    def __init__(self, algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
                 version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()):
        super().__init__(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
        self._payload = algorithm.payload(config, env_info, net)
        self._actors: list[VectorActor | None] = [None] * config.processes
        self._senders: list[Sender | None] = [None] * config.processes
        self._incarnations = [0] * config.processes
        self._ready: collections.deque = collections.deque()
        """Messages made and not yet taken, in the order they were made."""
        self._next_worker = 0
        self._env_task: Any = None

    def start(self) -> None:
        try:
            for worker_id in range(len(self._actors)):
                self._start(worker_id)
        except BaseException:
            self.close()
            raise

    def _start(self, worker_id: int) -> None:
        seed = child_seed(self.base_seed, worker_id, self._incarnations[worker_id])
        sender = make_sender(self.algorithm, self.config, self.net, lambda: int(self.version_counter),
                             lambda item: self._hand_over(worker_id, item))
        callbacks = cloudpickle.loads(self.callbacks) if self.callbacks else ()  # each worker its own copy
        actor = make_vector_actor(self.algorithm, self.config, sender.acting_net, sender.policy_version, seed,
                                  worker_id, callbacks)
        if self._env_task is not None:
            actor.set_task(self._env_task)
        self._actors[worker_id], self._senders[worker_id] = actor, sender

    def _hand_over(self, worker_id: int, item: Any) -> bool:
        """A sender's outbox: encode and check ``item`` as the payload declares and pickle it,
        as a child's channel does, so that what would fail on processes fails here too; the
        learner decodes its own copy (the actor reuses its arrays)."""
        columns, meta = crossed(self._payload.encode_checked(item))
        self._ready.append(self._payload.decode(worker_id, columns, meta))
        return True

    def get(self, timeout: float = 1.0) -> Any | None:
        """The next message, stepping the workers in turn until one is made; None once
        ``timeout`` seconds pass first (the next call goes on where this one stopped)."""
        deadline = time.monotonic() + timeout
        while not self._ready:
            if time.monotonic() > deadline:
                return None
            worker_id = self._next_worker
            self._next_worker = (worker_id + 1) % len(self._actors)
            self._step(worker_id)
        return self._ready.popleft()

    def _step(self, worker_id: int) -> None:
        """One vector step of a worker; WorkerDied, with the traceback, if it raises, and
        WorkerDied too if it takes longer than ``--worker-timeout`` (unless a debugger holds
        the process: a breakpoint in an env waits for the user)."""
        actor, sender = self._actors[worker_id], self._senders[worker_id]
        timeout = self.config.worker_timeout
        try:
            with time_limit(timeout):
                step = actor.step()
            if step.batch is not None:
                sender.send(step.batch)
            self._ready.extend(crossed(EpisodeEnded(worker_id, episode)) for episode in step.episodes)
        except TimeLimitExceeded:
            raise WorkerDied(worker_id, None, cause=(
                f"worker {worker_id} spent more than {timeout:g} s in one step of its envs (--worker-timeout "
                f"{timeout:g}): taken for stuck, its envs closed")) from None
        except CallbackError as error:
            raise WorkerDied(worker_id, None, str(error), fatal=True) from error
        except Exception as error:  # any failure is reported, as a child reports its crash
            raise WorkerDied(worker_id, None, traceback.format_exc()) from error

    def restart(self, worker_id: int) -> None:
        """A fresh worker in the dead one's place: new envs, the next seed of its stream. What
        it made before it died is whole, so it stays for the learner."""
        self._close_actor(worker_id)
        self._incarnations[worker_id] += 1
        self._start(worker_id)

    def call_workers(self, function: Callable[[Any], Any], timeout: float) -> list[CallResult]:
        call = WorkerCall(0, cloudpickle.dumps(function))  # pickled as a worker process would get it
        return [call_in_worker(call, worker_id, actor) for worker_id, actor in enumerate(self._actors)
                if actor is not None]

    def set_env_task(self, task: Any) -> None:
        self._env_task = task
        for actor in self._actors:
            if actor is not None:
                actor.set_task(task)

    def child_wait_seconds(self) -> float:
        """Zero: a worker steps only when the learner asks for its next message."""
        return 0.0

    def queued(self) -> int:
        return len(self._ready)

    def workers(self) -> list[WorkerInfo]:
        return [WorkerInfo(worker_id, os.getpid(), None, None)
                for worker_id, actor in enumerate(self._actors) if actor is not None]

    def kill(self) -> None:
        self.close()

    def close(self) -> None:
        """Close every worker's envs; calling it again does nothing."""
        for worker_id in range(len(self._actors)):
            self._close_actor(worker_id)

    def _close_actor(self, worker_id: int) -> None:
        actor, self._actors[worker_id] = self._actors[worker_id], None
        if actor is not None:
            with contextlib.suppress(Exception):  # a dead worker's envs may fail to close too
                actor.close()
