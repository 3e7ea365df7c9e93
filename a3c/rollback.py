"""The state at the best mean-100, for ``best.pt`` and for a rollback of a locked policy.

Why a rollback: a run that keeps training long after reaching its goal (CartPole's 475)
can, now and then,
drop within a second from a mean-100 near 500 to one near 10, with or without a restarted
child, and then lock into one action (docs/learning.md, "Training past the goal"). Once the
softmax has saturated, neither the policy gradient nor the entropy bonus moves it: both
vanish with the other actions' probabilities, so the run never comes back by itself. The
trainer then puts back the weights and optimizer state of its best mean-100, logs it and
goes on.

Why a copy in memory, taken at every rise: the weights at the moment the best rose are the
ones that earned it. Written later (best.pt used to be written up to 10 s after the best
rose), they may already be the collapsed ones.

Not only after the goal: Pong runs also lock on the way up and stay at the floor
(docs/learning.md, "Training past the goal"). Right at the start there is nothing to roll
back to: the best and worst mean-100 lie close together, and a locked policy would get
near-initial weights back. So the guard waits until the best has climbed part of the way
from the worst to the goal.
"""
from __future__ import annotations

import copy
import math
from typing import Any

ENTROPY_FLOOR = 0.01
"""A policy whose mean entropy is below this share of the uniform policy's has locked."""

CLIMB_BEFORE_GUARD = 0.25
"""The share of the way from the worst mean-100 to the goal the best must have climbed
before a locked policy is rolled back."""


def policy_locked(entropy: float | None, n_actions: int, mean_reward: float | None,
                  best: float | None, worst: float | None, goal: float | None) -> bool:
    """True when the best mean-100 has climbed ``CLIMB_BEFORE_GUARD`` of the way from the
    worst to ``goal``, the policy has saturated on one action (its mean entropy over the
    last interval below ``ENTROPY_FLOOR`` of uniform's) and its mean-100 has fallen more
    than half-way from its best back to its worst, so a deterministic policy that still
    plays well is left alone."""
    if entropy is None or mean_reward is None or best is None or worst is None or best <= worst:
        return False
    if goal is None or best < worst + CLIMB_BEFORE_GUARD * (goal - worst):
        return False
    saturated = entropy < ENTROPY_FLOOR * math.log(n_actions)
    return saturated and mean_reward < best - 0.5 * (best - worst)


class BestState:
    """A copy of the checkpoint state taken at the latest rise of the best mean-100, and
    whether ``best.pt`` holds it yet. A copy of the Pong net and its Adam state (20 MB)
    takes a few milliseconds, and the best rises at most a few times a second."""

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.written = True

    def offer(self, state: dict[str, Any]) -> None:
        """Keep a copy of ``state`` (a checkpoint state, live tensors)."""
        self.state = copy.deepcopy(state)
        self.written = False
