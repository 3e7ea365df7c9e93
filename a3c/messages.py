"""What children send the learner through the queue: small picklable records.

Observation rows do not travel in these records: a child writes them into a shared-memory
slot (see ``a3c.channel``) and sends ``SlotTransitions`` naming the slot; the pool hands
the learner ``Transitions`` with the rows read back.
"""
from __future__ import annotations

from dataclasses import dataclass

from lib.experience import EpisodeResult, TransitionBatch


@dataclass
class Transitions:
    """The n-step transitions one child's vector step produced, as the learner sees them."""

    worker_id: int
    batch: TransitionBatch


@dataclass
class SlotTransitions:
    """Transitions in transit: ``batch.states`` is None, its rows are in ``slot``.

    ``incarnation`` tells a restarted child's messages from its predecessor's, whose slots
    the new child reuses; ``policy_version`` is the optimizer step of the weights that chose
    the oldest action in the batch.
    """

    worker_id: int
    incarnation: int
    slot: int
    batch: TransitionBatch
    policy_version: int


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
