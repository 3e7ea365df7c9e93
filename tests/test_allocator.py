"""The allocator thresholds: a freed tensor's memory stays in the process for the next step."""
from __future__ import annotations

import subprocess
import sys

import pytest

from a3c.lib.allocator import ON_GLIBC, keep_freed_memory

# A fresh interpreter fills a 20 MB tensor, frees it and prints how many of its MiB are
# still resident: what the next step can reuse without faulting the pages in again
RETAINED_MIB_AFTER_FREE = """
import os, sys, torch
from a3c.lib.allocator import keep_freed_memory
torch.set_num_threads(1)  # no thread pool starting inside the measured span
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
before = resident_mib()
block = torch.empty(5 << 20).fill_(1.0)
del block
print(resident_mib() - before)
"""


def retained_mib(mode: str) -> float:
    result = subprocess.run([sys.executable, "-c", RETAINED_MIB_AFTER_FREE, mode], capture_output=True,
                            text=True, check=True)
    return float(result.stdout)


@pytest.mark.skipif(not ON_GLIBC, reason="the thresholds are glibc's")
def test_a_freed_block_stays_in_the_process_instead_of_going_back_to_the_kernel():
    # glibc's default unmaps a first 20 MB block on free (about 1 MiB stays: torch's own
    # first-use allocations); the fixed thresholds keep the block
    assert retained_mib("keep") - retained_mib("default") > 15


@pytest.mark.skipif(ON_GLIBC, reason="only other C libraries are left alone")
def test_other_c_libraries_are_left_alone():
    assert keep_freed_memory() is False
