"""The state at the best mean-100, for ``best.pt`` and for a rollback of a locked policy.

Why a rollback: a run that keeps training long after reaching its goal (CartPole's 475)
can, now and then,
drop within a second from a mean-100 near 500 to one near 10, with or without a restarted
worker, and then lock into one action (docs/learning.md, "Training past the goal"). Once the
softmax has saturated, neither the policy gradient nor the entropy bonus moves it: both
vanish with the other actions' probabilities, so the run never comes back by itself. The
trainer then puts back the weights and optimizer state of its best mean-100, logs it and
goes on.

Why a copy in memory, taken at every rise: the weights at the moment the best rose are the
ones that earned it. Written later (best.pt used to be written up to 10 s after the best
rose), they may already be the collapsed ones.

Not only after the goal: Pong runs also lock on the way up and stay at the floor
(docs/learning.md, "Training past the goal"), and so do games that have no goal reward.
Right at the start there is nothing to roll back to: the best and worst mean-100 lie close
together, and a locked policy would get near-initial weights back. So the guard waits until
the best has climbed part of the way from the worst to the goal, or, without a goal, well
beyond the noise of the worst mean-100.
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

SPREADS_BEFORE_GUARD = 2.0
"""Without a goal: the climb the best must have made, in standard deviations of the single
episodes that made the worst mean-100 (also at least ``CLIMB_BEFORE_GUARD`` of the worst's
size), so that the noise of a mean-100 at the start never arms the guard."""


def climbed(best: float, worst: float, goal: float | None, worst_spread: float) -> bool:
    """Whether the best mean-100 has climbed far enough from the worst for a rollback to give
    back weights worth having: ``CLIMB_BEFORE_GUARD`` of the way to ``goal``; without a goal
    (an Atari game but Pong, a user's env), ``SPREADS_BEFORE_GUARD`` times ``worst_spread``
    and ``CLIMB_BEFORE_GUARD`` of ``|worst|``, whichever is more."""
    if goal is not None:
        return best >= worst + CLIMB_BEFORE_GUARD * (goal - worst)
    return best - worst >= max(SPREADS_BEFORE_GUARD * worst_spread, CLIMB_BEFORE_GUARD * abs(worst))


def policy_locked(entropy: float | None, n_actions: int, mean_reward: float | None,
                  best: float | None, worst: float | None, goal: float | None,
                  worst_spread: float = 0.0) -> bool:
    """True when the best mean-100 has ``climbed`` from the worst, the policy has saturated
    on one action (its mean entropy over the last interval below ``ENTROPY_FLOOR`` of
    uniform's) and its mean-100 has fallen more than half-way from its best back to its
    worst, so a deterministic policy that still plays well is left alone."""
    if entropy is None or mean_reward is None or best is None or worst is None or best <= worst:
        return False
    if not climbed(best, worst, goal, worst_spread):
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
