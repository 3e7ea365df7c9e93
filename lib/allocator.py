"""Keep freed tensor memory in the process, so that a step does not fault it back in.

With its default, dynamic thresholds glibc's malloc can hand large freed blocks (a step's
activations and gradients, megabytes each) back to the kernel, and the next step's
allocations then fault the same pages in again, zero-filled. Whether that happens depends
on the order of a process's allocations, so a process may run several percent slower by
chance (docs/performance.md has the figures). The PyTorch CPU tuning guide's answer is to
preload jemalloc or tcmalloc; two fixed glibc thresholds give the same reuse with nothing
to install, and the same in every process.
"""
from __future__ import annotations

import ctypes
import platform

# from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20
"""Blocks below this come from the heap, where freed ones are reused: the largest a Pong step
allocates at batch 128 is its 14 MB float input. 32 MiB is the most every glibc accepts."""
TRIM_THRESHOLD_BYTES = 1 << 30
"""Free memory at the heap's top is kept up to this much instead of being handed back."""
ON_GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
"""Whether this process's C library is glibc, the only one whose thresholds are set."""


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for this process; False (and nothing done) on other C libraries.

    Fixed thresholds turn off glibc's dynamic adjustment, which is what lets a step's blocks
    swing between the heap and fresh mappings.
    """
    if not ON_GLIBC:
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
