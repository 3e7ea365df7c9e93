"""``trainer.workers``: RLlib's worker set as its users reach it, to call a function in every
worker (child process, Ray actor or serial worker) and have each call another on its envs,
the notes' curriculum: ``trainer.workers.foreach_worker(lambda worker: worker.foreach_env(
lambda env: env.set_phase(phase)))``."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from a3c.transport.worker_calls import WorkerView, results_of

if TYPE_CHECKING:
    from a3c.lifecycle.trainer import Trainer

CALL_TIMEOUT = 60.0
"""Seconds every worker has to answer a call by default: it answers before its next step."""


class WorkerSet:
    """The trainer's workers, started with the run if they are not yet."""

    def __init__(self, trainer: Trainer):
        self._trainer = trainer

    def foreach_worker(self, function: Callable[[WorkerView], Any], timeout: float = CALL_TIMEOUT) -> list[Any]:
        """``function(worker)`` in every worker before its next step (``worker.worker_index``,
        ``worker.foreach_env(fn)``), pickled by value: what each returned, in worker order.
        A function that raises in a worker is ``WorkerCallError`` here, with its traceback,
        and the workers go on; TimeoutError where one has not answered in ``timeout`` seconds."""
        self._trainer._start()
        return results_of(self._trainer._pool.call_workers(function, timeout))

    def foreach_env(self, function: Callable[[Any], Any], timeout: float = CALL_TIMEOUT) -> list[list[Any]]:
        """``function(env)`` on every env of every worker: each worker's results."""
        return self.foreach_worker(lambda worker: worker.foreach_env(function), timeout)
