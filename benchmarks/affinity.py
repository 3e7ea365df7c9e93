"""Pin the probe's process to one core: every thread it has now, and every one it starts later.

Why: ale-py's vector env steps its envs on a thread of its own, and the code that acts on
the frames waits for it every step. With the other core idle, the scheduler often runs that
thread there, and each step's hand-over then crosses cores: a probe left free reads the
scheduler's placement, not the core, and its env stage reads up to a third low.

The trainer does not pin: with every core busy the scheduler keeps the two threads together,
and pinning a running trainer gained nothing (docs/performance.md).

Linux only: elsewhere nothing is pinned and the calls say so.
"""
from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from contextlib import contextmanager

CAN_PIN = hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")
"""Whether this OS lets a process set the cores of each of its threads."""


def available_cores() -> list[int]:
    """The cores this process may run on: its affinity mask (a container's cpuset narrows it)
    where the OS has one, else every core."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def pin_process(cores: Collection[int]) -> bool:
    """Restrict every thread of this process to ``cores``; threads started afterwards inherit
    the mask of the thread that starts them. False, and nothing done, where pinning is not
    possible."""
    if not CAN_PIN:
        return False
    for thread in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(thread), cores)
        except ProcessLookupError:  # the thread ended since the listing
            continue
    return True


@contextmanager
def pinned_to_one_core() -> Iterator[int | None]:
    """The process on one of its cores inside (that core is yielded; None where pinning is not
    possible), on the cores it had before after."""
    before = available_cores()
    core = before[-1]
    try:  # restored even if pinning stopped part-way through the threads
        yield core if pin_process({core}) else None
    finally:
        pin_process(before)
