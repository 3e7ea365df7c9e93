"""Schedules of a setting over the frames trained on, pure so that settings can check them
before any process starts: ``--lr-schedule``'s piecewise-linear factors of the rate, and
``--epsilon-schedule``'s linear fall of DQN's exploration."""
from __future__ import annotations

import bisect
import itertools
import math

LrSchedule = tuple[tuple[int, float], ...]
"""Points (frames, factor of the learning rate), in order of frames."""


def parse_lr_schedule(text: str) -> LrSchedule:
    """``--lr-schedule``'s "FRAMES:FACTOR,..." as points; frames may be written 4.5e6 and may
    repeat (a step). Empty text: no schedule. Raises ValueError on anything else."""
    if not text.strip():
        return ()
    points = []
    for item in text.split(","):
        frames_text, sep, factor_text = item.partition(":")
        if not sep:
            raise ValueError(f"{item.strip()!r} is not FRAMES:FACTOR")
        frames, factor = float(frames_text), float(factor_text)
        if not (math.isfinite(frames) and frames >= 0 and frames == int(frames)):
            raise ValueError(f"frames {frames_text.strip()!r} are not a whole number of at least 0")
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"factor {factor_text.strip()!r} is not above 0")
        points.append((int(frames), factor))
    if any(later[0] < earlier[0] for earlier, later in itertools.pairwise(points)):
        raise ValueError("the frames must not fall from one point to the next")
    return tuple(points)


def scheduled(points: LrSchedule, frames: int) -> float:
    """The factor at ``frames``: the first point's before it, linear between two points, the
    last point's after it (1 without points). At a repeated frame count the later point holds."""
    if not points:
        return 1.0
    i = bisect.bisect_right(points, frames, key=lambda point: point[0]) - 1  # the last point at or before
    if i < 0:
        return points[0][1]
    if i == len(points) - 1:
        return points[i][1]
    (start, low), (end, high) = points[i], points[i + 1]
    return low + (high - low) * (frames - start) / (end - start)


EpsilonSchedule = tuple[float, float, int]
"""(initial epsilon, final epsilon, frames over which it falls linearly)."""


def parse_epsilon_schedule(text: str) -> EpsilonSchedule | None:
    """``--epsilon-schedule``'s "INITIAL,FINAL,FRAMES"; empty text: none. ValueError on anything else."""
    if not text.strip():
        return None
    parts = text.split(",")
    if len(parts) != 3:
        raise ValueError(f"{text!r} is not INITIAL,FINAL,FRAMES")
    initial, final, frames = float(parts[0]), float(parts[1]), float(parts[2])
    if not (0.0 <= final <= 1.0 and 0.0 <= initial <= 1.0):
        raise ValueError("the epsilons must be within [0, 1]")
    if not (math.isfinite(frames) and frames > 0 and frames == int(frames)):
        raise ValueError(f"frames {parts[2].strip()!r} are not a whole number above 0")
    return initial, final, int(frames)


def epsilon_at(schedule: EpsilonSchedule, frames: float) -> float:
    """The epsilon after ``frames`` frames: linear from the initial to the final one, then held."""
    initial, final, span = schedule
    return final + (initial - final) * max(0.0, 1.0 - frames / span)
