"""What children send the learner through the queue: small picklable records.

Large columns do not travel in these records: a child writes them into a shared-memory
slot (see ``a3c.transport.channel``) and sends ``SlotRows`` naming the slot; the pool hands
the learner the message its algorithm's payload decodes from the columns read back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from a3c.lib.experience import EpisodeResult


@dataclass
class SlotRows:
    """A worker's message in transit: its large columns' ``rows`` rows are in ``slot``, its
    other columns in ``columns``, and ``meta`` is what its payload keeps beside them. No
    incarnation is needed: a dead child's records go with its queue."""

    worker_id: int
    slot: int
    rows: int
    columns: dict[str, np.ndarray]
    meta: Any = None


@dataclass
class EpisodeEnded:
    """One finished episode of one child's envs (the reference's TotalReward)."""

    worker_id: int
    episode: EpisodeResult


@dataclass
class WorkerCrashed:
    """A child's last word: the traceback of the exception that ends it."""

    worker_id: int
    incarnation: int
    traceback: str
    fatal: bool = False
    """The user's callback raised: the run ends instead of restarting the worker."""


@dataclass
class WorkerCall:
    """A function of the user's (``trainer.workers.foreach_worker``), pickled by value, that a
    worker calls with itself before its next step."""

    call_id: int
    function: bytes


@dataclass
class CallResult:
    """What a worker's call of ``WorkerCall`` returned, or the traceback it raised."""

    worker_id: int
    call_id: int
    value: Any = None
    error: str | None = None
