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
    paused,
    run_trainer_window,
    running_records,
    window_figures,
)


def _record(seconds: float, transitions: int, busy: float, wait: float, child_wait: float,
            lag_sum: float = 0.0, batches: int = 0) -> dict:
    return {"seconds": seconds, "unix_time": 1e9 + seconds, "mean_reward_100": None,
            "frames": 4 * transitions, "transitions": transitions, "optimizer_steps": batches,
            "learner_busy_seconds": busy, "learner_wait_seconds": wait, "child_wait_seconds": child_wait,
            "policy_lag_sum": lag_sum, "policy_lag_batches": batches}


# A window of two segments: a 6 s pause after record 1 and a 4 s pause after record 3 (the
# window's start is record 1, its end record 5). After each pause the trainer writes a record
# at once; the learner was stopped inside a wait the first time and inside a step the second,
# so those intervals count the pause as waiting or busy.
RECORDS = [
    _record(0.0, 0, 0.0, 0.0, 0.0),
    _record(5.0, 5_000, 4.5, 0.5, 0.2, 10.0, 5),
    _record(11.1, 5_100, 4.6, 6.5, 0.2, 10.0, 5),    # 0.1 s of running after a 6 s pause
    _record(16.1, 10_100, 9.1, 7.0, 0.6, 22.0, 10),
    _record(20.2, 10_200, 13.2, 7.0, 0.6, 22.0, 10),  # 0.1 s of running after a 4 s pause
    _record(25.2, 14_200, 17.2, 8.0, 1.0, 30.0, 14),
]
PAUSES = {1: 6.0, 3: 4.0}


def test_a_records_running_clock_leaves_out_every_pause_before_it():
    running = [record["seconds"] for record in running_records(RECORDS, PAUSES)]
    assert running == pytest.approx([0.0, 5.0, 5.1, 10.1, 10.2, 15.2])
    assert [record["transitions"] for record in running_records(RECORDS, PAUSES)] == [
        record["transitions"] for record in RECORDS]


def test_throughput_counts_running_time_and_the_time_split_skips_intervals_with_a_pause():
    figures = window_figures(RECORDS, marks=[1, 3, 5], pauses=PAUSES)
    assert figures["window_seconds"] == pytest.approx(10.2)
    assert figures["transitions_per_second"] == pytest.approx(9_200 / 10.2)
    assert figures["frames_per_second"] == pytest.approx(4 * 9_200 / 10.2)
    assert figures["segment_transitions_per_second"] == pytest.approx([5_100 / 5.1, 4_100 / 5.1])
    assert figures["paused_seconds"] == [6.0, 4.0]
    # records 2->3 and 4->5: 10 s, the learner busy 4.5 + 4.0 s and waiting 0.5 + 1.0 s
    assert figures["between_pauses_seconds"] == pytest.approx(10.0)
    assert figures["learner_busy_fraction"] == pytest.approx(8.5 / 10.0)
    assert figures["learner_wait_fraction"] == pytest.approx(1.5 / 10.0)
    assert figures["child_wait_seconds_per_second"] == pytest.approx(0.8 / 10.0)
    assert figures["between_pauses"]["transitions_per_second"] == pytest.approx(9_000 / 10.0)
    # policy lag is per batch, not per second: the whole window's batches
    assert figures["policy_lag"] == pytest.approx(20.0 / 9)


def test_without_pauses_the_time_split_is_the_whole_windows():
    records = RECORDS[:2] + [_record(10.0, 10_000, 9.0, 1.0, 0.3, 20.0, 10)]
    figures = window_figures(records, marks=[0, 2], pauses={})
    assert figures["learner_busy_fraction"] == pytest.approx(0.9)
    assert figures["between_pauses"] == pytest.approx({key: figures[key] for key in figures["between_pauses"]})
    assert figures["segment_transitions_per_second"] == pytest.approx([1_000.0])


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


def _no_children_left() -> None:
    deadline = time.monotonic() + 10
    while psutil.Process().children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert psutil.Process().children(recursive=True) == []


@pytest.mark.timeout(120)
def test_a_real_trainer_is_paused_at_each_segment_boundary_and_stopped_after_the_last():
    boundary_states = []

    def at_boundary():
        tree = psutil.Process().children(recursive=True)
        boundary_states.append([member.status() for member in tree])
        time.sleep(0.5)

    figures = run_trainer_window("CartPole-v1", warmup=1.0, window=3.0,
                                 extra_args=["--report-interval", "0.25"], at_boundary=at_boundary,
                                 segment_seconds=1.5)
    assert len(boundary_states) == 3  # the window's start, middle and end
    assert all(states and set(states) == {psutil.STATUS_STOPPED} for states in boundary_states)
    assert len(figures["segment_transitions_per_second"]) == 2
    assert len(figures["paused_seconds"]) == 3 and min(figures["paused_seconds"]) >= 0.5
    # a segment ends at the first record past its boundary on the running clock
    assert 3.0 <= figures["window_seconds"] < 3.0 + 2 * 0.25 + 0.5
    assert figures["transitions_per_second"] > 0
    assert figures["between_pauses_seconds"] > 0.8 * figures["window_seconds"]
    _no_children_left()


@pytest.mark.timeout(120)
def test_a_trainer_that_exits_before_its_window_is_reported_at_once():
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exited \(2\) before the window ended"):
        run_trainer_window("CartPole-v1", warmup=1.0, window=2.0, extra_args=["--lr", "-1"])
    assert time.monotonic() - started < 60
    _no_children_left()
