"""``trainer.workers.foreach_worker(fn)`` where it lands: a worker calls ``fn`` with a view of
itself (RLlib's rollout worker as its users reach it: ``worker_index`` and ``foreach_env``)
before its next step, on every backend, and sends back what it returned or raised."""
from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import cloudpickle

from a3c.transport.messages import CallResult, WorkerCall

if TYPE_CHECKING:
    from a3c.env_runner import VectorActor


class WorkerView:
    """A worker as ``foreach_worker``'s function sees it: ``worker_index``, and
    ``foreach_env(fn)``, ``fn`` of each of its envs (the env itself, under gymnasium's wrappers,
    as a creator made it), their results in order."""

    def __init__(self, worker_index: int, actor: VectorActor):
        self.worker_index = worker_index
        self._actor = actor

    def foreach_env(self, function: Callable[[Any], Any]) -> list[Any]:
        envs = getattr(self._actor.envs, "envs", None)
        if envs is None:
            raise TypeError(f"foreach_env: {type(self._actor.envs).__name__} steps its envs as one vector, with no "
                            "env objects to hand out (Atari's and gymnasium's own vector envs, several agents)")
        return [function(env.unwrapped) for env in envs]


def call_in_worker(call: WorkerCall, worker_index: int, actor: VectorActor) -> CallResult:
    """Run ``call`` here: its result, or its traceback (the worker goes on either way)."""
    try:
        value = cloudpickle.loads(call.function)(WorkerView(worker_index, actor))
    except Exception:  # noqa: BLE001 - the user's function may fail any way; the caller gets how
        return CallResult(worker_index, call.call_id, error=traceback.format_exc())
    return CallResult(worker_index, call.call_id, value)


class WorkerCallError(RuntimeError):
    """``foreach_worker``'s function raised in a worker (its traceback in the message)."""


def results_of(calls: list[CallResult]) -> list[Any]:
    """The values of ``calls`` in worker order; WorkerCallError for the first that raised."""
    calls = sorted(calls, key=lambda call: call.worker_id)
    for call in calls:
        if call.error is not None:
            raise WorkerCallError(f"foreach_worker's function raised in worker {call.worker_id}:\n{call.error}")
    return [call.value for call in calls]
