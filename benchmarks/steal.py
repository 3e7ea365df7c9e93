"""CPU steal: the share of this machine's CPU time the hypervisor gave to other guests.

On a shared VM a neighbour's load shows up as steal, and every rate in the benchmark drops
with it (a Pong run under 19% steal trained a third slower), so each part records the
steal it ran under, read from ``/proc/stat``. The same counters, read over a short wait
before the benchmark starts, say how busy other processes keep this machine's own cores.
"""
from __future__ import annotations

import time
from pathlib import Path

PROC_STAT = Path("/proc/stat")
STEAL_COLUMN = 8  # user nice system idle iowait irq softirq steal: the eighth counter
IDLE_COLUMNS = (4, 5)  # idle and iowait: the fourth and fifth counters
BUSY_WARNING = 0.1
"""Other processes' share of the cores before a run from which its seconds are called shared."""


def cpu_counters() -> list[int] | None:
    """The aggregate ``cpu`` line's counters in clock ticks, or None off Linux."""
    try:
        first_line = PROC_STAT.read_text().splitlines()[0]
    except OSError:
        return None
    return [int(field) for field in first_line.split()[1:]]


class StealMeter:
    """``with StealMeter() as steal: ...`` then ``steal.fraction``: steal over the block,
    as a fraction of all CPU time, and ``steal.busy``: the fraction this machine's processes
    ran (neither idle nor stolen); both None where ``/proc/stat`` is not available."""

    def __init__(self) -> None:
        self.fraction: float | None = None
        self.busy: float | None = None
        self._start: list[int] | None = None

    def __enter__(self) -> StealMeter:  # noqa: PYI034 - Self needs Python 3.11
        self._start = cpu_counters()
        return self

    def __exit__(self, *exc_info: object) -> None:
        end = cpu_counters()
        if self._start is None or end is None:
            return
        # guest time (columns 9-10) is already counted in user and nice
        deltas = [after - before for before, after in zip(self._start[:STEAL_COLUMN], end[:STEAL_COLUMN])]
        total = sum(deltas)
        self.fraction = deltas[STEAL_COLUMN - 1] / total if total else 0.0
        idle = sum(deltas[column - 1] for column in IDLE_COLUMNS)
        self.busy = (total - idle - deltas[STEAL_COLUMN - 1]) / total if total else 0.0


def busy_before(seconds: float = 2.0) -> float | None:
    """The share of all cores that other processes kept busy over ``seconds`` of waiting:
    near 0 on a quiet machine, 0.5 when another job holds one of two cores."""
    with StealMeter() as meter:
        time.sleep(seconds)
    return meter.busy
