"""The trainer's measured window, cut into segments with the trainer paused between them.

The window's rate is compared with a bound from probe rounds, and this VM's speed drifts
by 15-25% within minutes: rounds taken only before and after a minute-long window can see
a faster or slower machine than the one the window ran on (over eight runs on one host,
each side's in-window rate against its probe ranged from 67% to 99%, both sides rising and
falling together). So the caller may take a probe round at every segment boundary while
the trainer's whole process tree is stopped (SIGSTOP, then SIGCONT), and the bound then
samples the machine all through the window.

Rates count running time only: a record's clock, less the pauses before it. A wait or a
step that a pause cuts in two counts the pause as its own, so the learner's busy and
waiting seconds and the children's blocked seconds come from the report intervals that
hold no pause. The trainer writes a record as soon as it resumes (its report interval has
passed on the wall clock), so those intervals cover nearly all of the running time.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import psutil

from a3c.load import PROGRESS_FILE, window_rates

ROOT = Path(__file__).resolve().parents[1]
SEGMENT_SECONDS = 10.0
"""Running seconds of the window between two probe rounds."""
POLL_SECONDS = 0.01
RECORD_TIMEOUT_SECONDS = 120.0
"""Longest wait for the trainer's next record (start-up included) before giving up."""
STOP_SECONDS = 30.0


class TreeMemory:
    """Samples the summed RSS and PSS of a process and all its descendants once a second,
    stamped with ``time.time()`` so that they line up with the run's progress records."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:  # noqa: PYI034 - Self needs Python 3.11
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            rss = pss = 0
            try:
                processes = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for process in processes:
                try:
                    memory = process.memory_full_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                rss += memory.rss
                pss += getattr(memory, "pss", memory.rss)
            self.samples.append((time.time(), rss, pss))

    def summary(self, window_start: float, window_end: float) -> dict:
        """Peaks over the whole run; RSS at the first and last sample inside the window."""
        if not self.samples:
            return {}
        in_window = [s for s in self.samples if window_start <= s[0] <= window_end] or self.samples
        mib = 2**20
        return {
            "peak_rss_mib": max(rss for _, rss, _ in self.samples) / mib,
            "peak_pss_mib": max(pss for _, _, pss in self.samples) / mib,
            "window_start_rss_mib": in_window[0][1] / mib,
            "window_end_rss_mib": in_window[-1][1] / mib,
        }


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _wait_until_stopped(processes: list[psutil.Process]) -> None:
    """A SIGSTOP takes effect after ``kill`` returns; wait until it has (1 s at most)."""
    deadline = time.monotonic() + 1.0
    for process in processes:
        try:
            while process.status() != psutil.STATUS_STOPPED and time.monotonic() < deadline:
                time.sleep(0.001)
        except psutil.NoSuchProcess:
            continue


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """A process and all its descendants stopped inside, running again after, even if the
    body raised: the learner first, so that it starts no child while the rest stop."""
    stopped = []
    try:
        for process in _tree(pid):
            try:
                process.suspend()
            except psutil.NoSuchProcess:
                continue
            stopped.append(process)
        _wait_until_stopped(stopped)
        yield
    finally:
        for process in stopped:
            try:
                process.resume()
            except psutil.NoSuchProcess:
                pass


class ProgressFollower:
    """The records a running trainer appends to ``progress.jsonl`` under ``logdir``, as
    they come; a line still being written waits for its end."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self._path: Path | None = None
        self._offset = 0
        self._partial = b""

    def new_records(self) -> list[dict]:
        if self._path is None:
            self._path = next(self.logdir.glob(f"*/{PROGRESS_FILE}"), None)
            if self._path is None:
                return []
        with self._path.open("rb") as stream:
            stream.seek(self._offset)
            data = self._partial + stream.read()
        self._offset += len(data) - len(self._partial)
        *lines, self._partial = data.split(b"\n")
        return [json.loads(line) for line in lines if line]


def running_records(records: list[dict], pauses: dict[int, float]) -> list[dict]:
    """The records with ``seconds`` on the running clock: less every pause taken before each
    was written. ``pauses`` maps a record's index to the pause taken right after it."""
    shifted, paused_so_far = [], 0.0
    for index, record in enumerate(records):
        shifted.append(record | {"seconds": record["seconds"] - paused_so_far})
        paused_so_far += pauses.get(index, 0.0)
    return shifted


def _summed_intervals(intervals: list[tuple[dict, dict]]) -> dict:
    """One interval whose every counter is the sum of the given intervals' changes."""
    numeric = [key for key, value in intervals[0][0].items() if isinstance(value, (int, float))]
    totals = {key: sum(end[key] - start[key] for start, end in intervals) for key in numeric}
    return window_rates(dict.fromkeys(numeric, 0), totals)


def window_figures(records: list[dict], marks: list[int], pauses: dict[int, float]) -> dict:
    """The window from record ``marks[0]`` to ``marks[-1]``, with a pause after any record
    in ``pauses``: throughput and policy lag over the whole window's running time, the time
    split over the intervals without a pause, and each segment's throughput."""
    running = running_records(records, pauses)
    whole = window_rates(running[marks[0]], running[marks[-1]])
    unpaused = [(running[index], running[index + 1]) for index in range(marks[0], marks[-1])
                if index not in pauses]
    between_pauses = _summed_intervals(unpaused) if unpaused else whole
    time_split = ("learner_busy_fraction", "learner_wait_fraction", "child_wait_seconds_per_second")
    return {
        **whole, **{key: between_pauses[key] for key in time_split},
        "window_seconds": running[marks[-1]]["seconds"] - running[marks[0]]["seconds"],
        "between_pauses": between_pauses,
        "between_pauses_seconds": sum(end["seconds"] - start["seconds"] for start, end in unpaused),
        "segment_transitions_per_second": [window_rates(running[start], running[end])["transitions_per_second"]
                                           for start, end in pairwise(marks)],
        "paused_seconds": [pauses[index] for index in sorted(pauses)],
    }


def _follow(process: subprocess.Popen, follower: ProgressFollower, boundaries: list[float],
            at_boundary: Callable[[], None] | None) -> tuple[list[dict], list[int], dict[int, float]]:
    """Read the trainer's records until one passes the last boundary on the running clock,
    with ``at_boundary()`` called inside a pause at the first record past each boundary."""
    records: list[dict] = []
    marks: list[int] = []
    pauses: dict[int, float] = {}
    last_record = time.monotonic()
    while len(marks) < len(boundaries):
        if process.poll() is not None:
            raise RuntimeError(f"the trainer exited ({process.returncode}) before the window ended")
        new = follower.new_records()
        if not new:
            if time.monotonic() - last_record > RECORD_TIMEOUT_SECONDS:
                raise RuntimeError(f"no progress record from the trainer in {RECORD_TIMEOUT_SECONDS:.0f} s")
            time.sleep(POLL_SECONDS)
            continue
        last_record = time.monotonic()
        records += new
        paused_so_far = sum(pauses.values())
        if records[-1]["seconds"] - paused_so_far < boundaries[len(marks)]:
            continue
        if at_boundary is None:
            marks.append(len(records) - 1)
            continue
        started = time.monotonic()
        with paused(process.pid):
            records += follower.new_records()  # written between the read and the stop
            marks.append(len(records) - 1)
            at_boundary()
        pauses[len(records) - 1] = time.monotonic() - started
    return records, marks, pauses


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (the trainer stops its children and saves), then SIGKILL whatever is left."""
    if process.poll() is None:
        leftovers = _tree(process.pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        for leftover in leftovers:
            try:
                leftover.kill()
            except psutil.NoSuchProcess:
                pass
        process.wait()


def run_trainer_window(env_id: str, warmup: float, window: float, extra_args: list[str],
                       at_boundary: Callable[[], None] | None = None,
                       segment_seconds: float = SEGMENT_SECONDS) -> dict:
    """``run_a3c.py`` for ``warmup`` seconds, then a ``window`` of running seconds in
    segments, with ``at_boundary()`` called while it is paused at each segment boundary (the
    window's start and end included); rates over the window from its progress records."""
    segments = max(1, round(window / segment_seconds))
    boundaries = [warmup + window * index / segments for index in range(segments + 1)]
    with tempfile.TemporaryDirectory() as logdir, tempfile.TemporaryFile() as output:
        command = [sys.executable, "run_a3c.py", "-n", "bench", "--env", env_id, "--logdir", logdir,
                   "--stop-reward", "1e9", *extra_args,
                   # only a safety net if this process dies: the window ends with a SIGTERM
                   "--max-seconds", str(warmup + window + (segments + 1) * 60 + 120)]
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)
        try:
            with TreeMemory(process.pid) as memory:
                records, marks, pauses = _follow(process, ProgressFollower(Path(logdir)), boundaries, at_boundary)
        except BaseException:
            _stop(process)
            output.seek(0)
            print(output.read()[-2000:].decode(errors="replace"), file=sys.stderr)
            raise
        _stop(process)
        if process.returncode != -signal.SIGTERM and process.returncode != 128 + signal.SIGTERM:
            output.seek(0)
            raise RuntimeError(f"trainer failed ({process.returncode}):\n"
                               f"{output.read()[-2000:].decode(errors='replace')}")
    figures = window_figures(records, marks, pauses)
    start, end = records[marks[0]], records[marks[-1]]
    return {"command": " ".join(command[1:]), **figures, **memory.summary(start["unix_time"], end["unix_time"])}
