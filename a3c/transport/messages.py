"""What children send the learner through the queue: small picklable records.

Large arrays do not travel in these records: a child writes observation rows (states, and
last states for an off-policy learner) or its flat gradient (A3C's grads mode) into a shared-memory slot (see ``a3c.transport.channel``) and sends
``SlotTransitions`` or ``SlotGradients`` naming the slot; the pool hands the learner
``Transitions`` or ``Gradients`` with the arrays read back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.experience import EpisodeResult, TransitionBatch
from lib.gradients import LossStats


@dataclass
class Transitions:
    """The n-step transitions one child's vector step produced, as the learner sees them."""

    worker_id: int
    batch: TransitionBatch

    @property
    def transitions(self) -> int:
        """Agent steps: a row each, or one per agent where a row holds every agent's (MADDPG)."""
        return int(self.batch.actions.size)


@dataclass
class SlotTransitions:
    """Transitions in transit: the states' rows are in ``slot``, followed by the last
    states' when the batch has them (off-policy learners bootstrap from them); every other
    column (the per-row policy versions among them) is in ``columns``. No incarnation is
    needed: a dead child's records go with its queue."""

    worker_id: int
    slot: int
    columns: dict[str, np.ndarray | None]
    with_last_states: bool = False


@dataclass
class Gradients:
    """One child's gradient of the loss on its own batch, as the learner sees it (grads mode)."""

    worker_id: int
    gradient: np.ndarray
    """All parameter gradients, flat, in ``parameters()`` order."""
    policy_version: int
    """The optimizer step of the weights the gradient was computed with."""
    transitions: int
    loss: LossStats


@dataclass
class SlotGradients:
    """A gradient in transit: the vector is in ``slot``; the rest is as in ``Gradients``."""

    worker_id: int
    slot: int
    policy_version: int
    transitions: int
    loss: LossStats


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
