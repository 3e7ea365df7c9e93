"""Pinning reaches every thread of the process, old and new, and the context undoes it."""
import os
import threading

import pytest

from benchmarks.affinity import CAN_PIN, available_cores, pin_process, pinned_to_one_core

pytestmark = pytest.mark.skipif(not CAN_PIN or len(available_cores()) < 2,
                                reason="needs thread affinity and two cores to tell pinned from free")


@pytest.fixture
def restore_cores():
    cores = available_cores()
    yield cores
    pin_process(cores)


class _Idle(threading.Thread):
    """A thread that waits until released, so its mask can be read while it lives."""

    def __init__(self):
        super().__init__(daemon=True)
        self.release = threading.Event()

    def run(self):
        self.release.wait()

    def cores(self) -> set[int]:
        return os.sched_getaffinity(self.native_id)


def test_pinning_reaches_threads_started_before_and_after(restore_cores):
    target = {restore_cores[0]}
    older = _Idle()
    older.start()
    pin_process(target)
    newer = _Idle()
    newer.start()
    try:
        assert os.sched_getaffinity(0) == target
        assert older.cores() == target
        assert newer.cores() == target
    finally:
        older.release.set()
        newer.release.set()


def test_one_core_inside_the_context_and_all_of_them_after(restore_cores):
    worker = _Idle()
    worker.start()
    try:
        with pinned_to_one_core() as core:
            assert core in restore_cores
            assert os.sched_getaffinity(0) == {core} and worker.cores() == {core}
        assert os.sched_getaffinity(0) == set(restore_cores) and worker.cores() == set(restore_cores)
    finally:
        worker.release.set()
