"""The state at the best mean-100, for ``best.pt`` and for a rollback of a locked policy.

Why a rollback: a run that keeps training long after solving CartPole can, now and then,
drop within a second from a mean-100 near 500 to one near 10, with or without a restarted
child, and then lock into one action (docs/learning.md, "Training past the goal"). Once the
softmax has saturated, neither the policy gradient nor the entropy bonus moves it: both
vanish with the other actions' probabilities, so the run never comes back by itself. The
trainer then puts back the weights and optimizer state of its best mean-100, logs it and
goes on.

Why a copy in memory: the weights at the moment the best rose are the ones that earned it.
Written later (best.pt used to be written up to 10 s after the best rose), they may already
be the collapsed ones.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any

ENTROPY_FLOOR = 0.01
"""A policy whose mean entropy is below this share of the uniform policy's has locked."""
MIN_COPY_SECONDS = 1.0
"""At most one copy a second: the Pong net and its Adam state are 40 MB."""


def policy_locked(entropy: float | None, n_actions: int, mean_reward: float | None,
                  best: float | None, worst: float | None) -> bool:
    """True when the policy has saturated on one action (its mean entropy over the last
    interval below ``ENTROPY_FLOOR`` of uniform's) and its mean-100 has fallen more than
    half-way from its best back to its worst, so a deterministic policy that still plays
    well is left alone."""
    if entropy is None or mean_reward is None or best is None or worst is None or best <= worst:
        return False
    saturated = entropy < ENTROPY_FLOOR * math.log(n_actions)
    return saturated and mean_reward < best - 0.5 * (best - worst)


class BestState:
    """A copy of the checkpoint state taken when the best mean-100 rose (at most once every
    ``min_seconds``), and whether ``best.pt`` holds it yet."""

    def __init__(self, min_seconds: float = MIN_COPY_SECONDS):
        self.min_seconds = min_seconds
        self.state: dict[str, Any] | None = None
        self.written = True
        self._copied_at = -math.inf

    def offer(self, state: dict[str, Any], now: float | None = None, force: bool = False) -> bool:
        """Keep a copy of ``state`` (a checkpoint state, live tensors) unless one was taken
        less than ``min_seconds`` ago (``force``: all the same); True if it was kept."""
        now = time.monotonic() if now is None else now
        if not force and now - self._copied_at < self.min_seconds:
            return False
        self.state = copy.deepcopy(state)
        self.written = False
        self._copied_at = now
        return True
