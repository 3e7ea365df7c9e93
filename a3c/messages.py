"""What children send the learner through the queue: plain picklable records of numpy data."""
from __future__ import annotations

from dataclasses import dataclass

from lib.experience import EpisodeResult, TransitionBatch


@dataclass
class Transitions:
    """The n-step transitions one child's vector step produced."""

    worker_id: int
    batch: TransitionBatch


@dataclass
class EpisodeEnded:
    """One finished episode of one child's envs (the reference's TotalReward)."""

    worker_id: int
    episode: EpisodeResult


@dataclass
class WorkerCrashed:
    """A child's last word: the traceback of the exception that ends it."""

    worker_id: int
    traceback: str
