"""The benchmark's trainer window: running-clock rates around pauses, pausing a process
tree, following progress records, and a real trainer paused at its segment boundaries."""
import json
import subprocess
import sys
import time

import psutil
import pytest

from benchmarks.window import (
    ProgressFollower,
    _Segmenter,
    paused,
    run_trainer_window,
    window_figures,
)
from tests.helpers import alive
from tests.namespaces import scenario_processes
from tests.process_tree import workers


def _record(seconds: float, transitions: int, busy: float, wait: float, child_wait: float,
            lag_sum: float = 0.0, batches: int = 0) -> dict:
    return {"seconds": seconds, "unix_time": 1e9 + seconds, "mean_reward_100": None,
            "frames": 4 * transitions, "transitions": transitions, "policy_version": batches,
            "learner_busy_seconds": busy, "learner_wait_seconds": wait, "child_wait_seconds": child_wait,
            "policy_lag_sum": lag_sum, "policy_lag_batches": batches}


# Two segments with a pause (6 s, then 4 s) after records 1, 3 and 5, and 1 s of settling:
# after each pause the trainer writes a record at once (running 0.1 s later), and the
# segment starts at the next record, 5 s on; it ends at the first record 5 s after its start.
RECORDS = [
    _record(0.0, 0, 0.0, 0.0, 0.0),
    _record(5.0, 5_000, 4.5, 0.5, 0.2, 10.0, 5),        # warm-up over: pause, round
    _record(11.1, 5_100, 10.6, 0.5, 0.2, 10.5, 6),      # the learner was stopped mid-step
    _record(16.1, 10_100, 15.1, 1.0, 0.6, 22.0, 10),    # segment 1 starts
    _record(21.1, 15_100, 19.6, 1.5, 1.0, 30.0, 14),    # and ends: pause, round
    _record(25.2, 15_200, 19.6, 5.6, 1.0, 30.0, 14),    # the learner was stopped mid-wait
    _record(30.2, 19_200, 23.6, 6.6, 1.4, 36.0, 17),    # segment 2 starts
    _record(35.2, 23_700, 28.0, 7.2, 1.5, 40.0, 21),    # and ends: pause, round
]
PAUSES = [6.0, 4.0, 3.0]


def _segments(records: list[dict], pause_after: dict[int, float], warmup: float, segment_seconds: float,
              settle: float, segments: int) -> list[tuple[int, int]]:
    """Drive the segmenter as the follower does, with the pauses at the given records."""
    segmenter = _Segmenter(warmup, segments, segment_seconds, settle)
    paused_so_far = 0.0
    for index, record in enumerate(records):
        running = record["seconds"] - paused_so_far
        segmenter.record_read(index, running)
        if segmenter.boundary_due(running):
            assert index in pause_after, f"an unexpected pause after record {index}"
            segmenter.boundary_at(index, running)
            if settle == 0.0:
                segmenter.record_read(index, running)
            paused_so_far += pause_after[index]
        else:
            assert index not in pause_after, f"no pause after record {index}"
        if segmenter.done():
            break
    return segmenter.closed


def test_segments_start_after_the_settling_time_and_end_a_segment_later():
    pause_after = dict(zip([1, 4, 7], PAUSES))
    assert _segments(RECORDS, pause_after, warmup=5.0, segment_seconds=5.0, settle=1.0, segments=2) == [
        (3, 4), (6, 7)]


def test_without_pauses_the_segments_follow_each_other():
    records = [_record(5.0 * index, 1_000 * index, 4.5 * index, 0.5 * index, 0.0) for index in range(8)]
    assert _segments(records, {2: 0.0, 4: 0.0, 6: 0.0}, warmup=10.0, segment_seconds=10.0, settle=0.0,
                     segments=2) == [(2, 4), (4, 6)]


def test_every_figure_counts_the_segments_only():
    figures = window_figures(RECORDS, [(3, 4), (6, 7)], PAUSES)
    # records 3->4 and 6->7: 10 s, 9,500 transitions, the learner busy 4.5 + 4.4 s and
    # waiting 0.5 + 0.6 s, the children blocked 0.4 + 0.1 s, 8 + 4 lag over 4 + 4 batches
    assert figures["window_seconds"] == pytest.approx(10.0)
    assert figures["transitions_per_second"] == pytest.approx(950.0)
    assert figures["frames_per_second"] == pytest.approx(3_800.0)
    assert figures["learner_busy_fraction"] == pytest.approx(0.89)
    assert figures["learner_wait_fraction"] == pytest.approx(0.11)
    assert figures["child_wait_seconds_per_second"] == pytest.approx(0.05)
    assert figures["policy_lag"] == pytest.approx(12.0 / 8)
    assert figures["segment_transitions_per_second"] == pytest.approx([1_000.0, 900.0])
    assert figures["paused_seconds"] == PAUSES


def test_the_follower_returns_whole_records_only_and_each_once(tmp_path):
    run_dir = tmp_path / "run"
    follower = ProgressFollower(tmp_path)
    assert follower.new_records() == []  # the trainer has not made its folder yet
    run_dir.mkdir()
    progress = run_dir / "progress.jsonl"
    first, second = json.dumps({"seconds": 1.0}), json.dumps({"seconds": 2.0})
    progress.write_text(first + "\n" + second[:5])
    assert follower.new_records() == [{"seconds": 1.0}]
    with progress.open("a") as stream:
        stream.write(second[5:] + "\n")
    assert follower.new_records() == [{"seconds": 2.0}]
    assert follower.new_records() == []


@pytest.fixture
def parent_with_child():
    code = "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 10
    while not psutil.Process(process.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    assert len(tree) == 2
    yield tree
    for member in tree:
        member.kill()
    process.wait()


def test_paused_stops_the_whole_tree_and_resumes_it_even_when_the_body_raises(parent_with_child):
    with pytest.raises(KeyError), paused(parent_with_child[0].pid):
        assert [member.status() for member in parent_with_child] == [psutil.STATUS_STOPPED] * 2
        raise KeyError("the probe failed")
    assert psutil.STATUS_STOPPED not in [member.status() for member in parent_with_child]


def _descendants() -> list[psutil.Process]:
    """This process's descendants but multiprocessing's helpers (an earlier test's workers
    leave them running for good) and Ray's scenario (tests/namespaces.py)."""
    scenario = scenario_processes()
    return [child for child in workers(psutil.Process()) if child.pid not in scenario]


def _no_children_left() -> None:
    deadline = time.monotonic() + 10
    while _descendants() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _descendants() == []


@pytest.mark.timeout(120)
def test_a_real_trainer_is_paused_at_each_segment_boundary_and_stopped_after_the_last():
    boundary_states = []

    def at_boundary():
        boundary_states.append([member.status() for member in _descendants()])
        time.sleep(0.3)

    figures = run_trainer_window("tests.toy_envs:Paced-v0", warmup=0.5, window=2.0,
                                 extra_args=["--report-interval", "0.25"], at_boundary=at_boundary,
                                 segment_seconds=1.0, settle_seconds=0.25)
    assert len(boundary_states) == 3  # the window's start, middle and end
    assert all(states and set(states) == {psutil.STATUS_STOPPED} for states in boundary_states)
    assert len(figures["segment_transitions_per_second"]) == 2
    assert len(figures["paused_seconds"]) == 3 and min(figures["paused_seconds"]) >= 0.3
    # a segment ends at the first record 1 running second after it starts (how soon after
    # depends on the machine's load: no upper bound)
    assert figures["window_seconds"] >= 2.0
    assert figures["transitions_per_second"] > 0 and figures["settle_seconds"] == 0.25
    _no_children_left()


@pytest.mark.timeout(120)
def test_a_trainer_that_exits_before_its_window_is_reported_at_once():
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exited \(2\) before the window ended"):
        run_trainer_window("CartPole-v1", warmup=1.0, window=2.0, extra_args=["--lr", "-1"])
    assert time.monotonic() - started < 60
    _no_children_left()


# A benchmark process that pauses its trainer at the first boundary and stays there
PAUSED_FOREVER = """
import time
from benchmarks.window import exit_on_sigterm, run_trainer_window
exit_on_sigterm()
run_trainer_window("tests.toy_envs:Paced-v0", warmup=0.5, window=2.0, extra_args=[],
                   at_boundary=lambda: time.sleep(600))
"""


@pytest.mark.timeout(120)
def test_a_benchmark_stopped_with_sigterm_while_its_trainer_is_paused_leaves_no_process():
    benchmark = subprocess.Popen([sys.executable, "-c", PAUSED_FOREVER])
    deadline = time.monotonic() + 60
    while True:
        tree = psutil.Process(benchmark.pid).children(recursive=True)
        if tree and all(member.status() == psutil.STATUS_STOPPED for member in tree):
            break
        assert time.monotonic() < deadline, "the trainer was never paused"
        time.sleep(0.2)
    try:
        benchmark.terminate()
        assert benchmark.wait(timeout=60) == 128 + 15
        assert alive([member.pid for member in tree]) == []
    finally:  # a stopped tree left by a failure would outlive the test run
        for member in tree:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
