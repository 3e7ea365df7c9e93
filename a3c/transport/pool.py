"""The worker pool: the one interface between the trainer and where the children run.

Three backends implement it with the same constructor and calls: processes on this machine
(``a3c.transport.process_pool``), Ray actors on a cluster (``a3c.transport.ray_pool``) and
the workers stepped in turn in the learner's process (``a3c.transport.serial_pool``);
``a3c.transport.backends.make_pool`` chooses once, from ``--backend``. The trainer sees:

- ``start``; ``get`` (the next message, never blocking for long, WorkerDied when a child is
  gone); ``restart`` (a fresh child in a dead one's place); ``set_env_task`` (curriculum: a
  task every child hands its envs);
- ``child_wait_seconds`` (time the children waited on the learner), ``queued`` (messages
  waiting), ``workers`` (where each child runs);
- ``close`` (ordered: children stop, what they sent is drained) and ``kill`` (at once).
"""
from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cloudpickle

from a3c.lib.registrations import shipped_registrations

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.lib.columns import Payload
    from a3c.lib.envs import EnvInfo
    from a3c.transport.messages import CallResult


class WorkerDied(RuntimeError):
    """A child exited while the run still needed it."""

    def __init__(self, worker_id: int, exitcode: int | None, child_traceback: str | None = None,
                 fatal: bool = False, cause: str | None = None):
        self.worker_id = worker_id
        self.exitcode = exitcode
        self.child_traceback = child_traceback
        self.fatal = fatal
        """A user's callback raised in the worker: restarting it would only raise again."""
        detail = f" with exit code {exitcode}" if exitcode is not None else ""
        super().__init__(cause or f"worker {worker_id} died{detail}")


@dataclass(frozen=True)
class WorkerInfo:
    """Where one child runs: its process id (processes) or node id (Ray, None before its
    first block), and its exit code once it has ended (negative: the signal)."""

    worker_id: int
    pid: int | None
    node_id: str | None
    exitcode: int | None


def queue_capacity(algorithm: Algorithm, config: Config) -> int:
    """Messages in flight over all workers, on either backend: ``--queue-size``, else enough for
    the algorithm's ``transitions_ahead`` and two per worker. Smaller and the learner waits on
    workers that wait on it: with fewer than a batch of transitions in flight, collecting
    and learning take turns."""
    if config.queue_size:
        return config.queue_size
    messages = -(-algorithm.transitions_ahead(config) // algorithm.transitions_per_message(config))
    return max(2 * config.processes, messages)


def messages_per_worker(algorithm: Algorithm, config: Config) -> int:
    """Messages one worker may have in flight: its share of ``queue_capacity``, at least one
    (a child's slots; a Ray actor's vector steps over its blocks in flight)."""
    return max(1, -(-queue_capacity(algorithm, config) // config.processes))


def child_seed(base_seed: int, worker_id: int, incarnation: int) -> int:
    """Each child its own seed stream; a restarted child moves one step along its stream."""
    return base_seed + 1000 * (worker_id + 1) + incarnation


class WorkerPool(abc.ABC):
    """``config.processes`` children acting with ``net`` (shared: the learner trains it) for
    ``algorithm``; ``version_counter`` counts the learner's steps."""

    @classmethod
    def check_payload(cls, algorithm: Algorithm, config: Config, payload: Payload) -> None:
        """ConfigError, before any worker starts, where this transport cannot carry ``payload``
        (the one ``algorithm`` declares for ``config``); every payload travels by default."""

    def __init__(self, algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
                 version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()):
        self.algorithm = algorithm
        self.config = config
        self.env_info = env_info
        self.net = net
        self.version_counter = version_counter
        self.base_seed = base_seed
        self.registered = shipped_registrations()
        """The envs and models the user registered, for workers that never ran the user's script."""
        self.callbacks = cloudpickle.dumps(list(callbacks)) if callbacks else None
        """The callbacks with worker-side hooks, pickled by value: each worker runs its own copy."""

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def get(self, timeout: float = 1.0) -> Any | None:
        """The next message (what the algorithm's payload decodes, EpisodeEnded, WorkerCrashed
        of an earlier incarnation), or None after ``timeout`` seconds without one; WorkerDied."""

    @abc.abstractmethod
    def restart(self, worker_id: int) -> None:
        """A fresh child in the dead one's place, on the next seed of its stream."""

    @abc.abstractmethod
    def set_env_task(self, task: Any) -> None:
        """Every child hands ``task`` to its envs; children started later get it too."""

    @abc.abstractmethod
    def call_workers(self, function: Callable[[Any], Any], timeout: float) -> list[CallResult]:
        """``function`` called by every worker with a view of itself
        (``a3c.transport.worker_calls``) before its next step, pickled by value: what each
        returned or raised; TimeoutError where one has not answered in ``timeout`` seconds.
        Messages that arrive meanwhile wait for the learner, in order."""

    @abc.abstractmethod
    def child_wait_seconds(self) -> float:
        """Seconds all children together have waited on the learner so far."""

    def message_ages(self) -> list[float]:
        """Seconds since each worker last sent a message, where the backend watches them
        (``--worker-timeout``); empty where it does not."""
        return []

    @abc.abstractmethod
    def queued(self) -> int:
        """Messages sent and not yet taken (approximate)."""

    @abc.abstractmethod
    def workers(self) -> list[WorkerInfo]: ...

    @abc.abstractmethod
    def kill(self) -> None:
        """End every child now, without waiting: the way out when there is no time for ``close``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Ordered shutdown; calling it again does nothing."""
