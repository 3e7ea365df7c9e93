"""The trainer's measured window, cut into segments with the trainer paused between them.

The window's rate is compared with a bound from probe rounds, and this VM's speed drifts
by 15-25% within minutes: rounds taken only before and after a minute-long window can see
a faster or slower machine than the one the window ran on. So the caller may take a probe round at every segment boundary while
the trainer's whole process tree is stopped (SIGSTOP, then SIGCONT), and the bound then
samples the machine all through the window.

A resumed trainer runs slower for a few seconds (its first report interval after a resume
about a tenth slower than the next), so after each pause the trainer runs ``settle`` seconds uncounted, and a segment counts from
its first report record after that to the first record ``segment_seconds`` later. No
counted interval holds a pause, so every figure comes from the same running seconds.
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
from pathlib import Path

import psutil

from a3c.lifecycle.load_meter import PROGRESS_FILE, window_rates

ROOT = Path(__file__).resolve().parents[1]
SEGMENT_SECONDS = 10.0
"""Counted running seconds between two probe rounds."""
SETTLE_SECONDS = 5.0
"""Running seconds after a pause before a segment starts counting."""
POLL_SECONDS = 0.01
RECORD_TIMEOUT_SECONDS = 120.0
"""Longest wait for the trainer's next record (start-up included) before giving up."""
STOP_SECONDS = 30.0


def _tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


class TreeMemory:
    """Samples the summed RSS and PSS of a process and all its descendants once a second,
    stamped with ``time.time()`` so that they line up with the run's progress records."""

    def __init__(self, pid: int):
        self.pid = pid
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
                processes = _tree(self.pid)
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


def _summed_intervals(intervals: list[tuple[dict, dict]]) -> dict:
    """The rates of one interval whose every counter is the sum of the given intervals'
    changes."""
    numeric = [key for key, value in intervals[0][0].items() if isinstance(value, (int, float))]
    totals = {key: sum(end[key] - start[key] for start, end in intervals) for key in numeric}
    return window_rates(dict.fromkeys(numeric, 0), totals)


def window_figures(records: list[dict], segments: list[tuple[int, int]], pauses: list[float]) -> dict:
    """Rates over the segments (each a pair of record indices, no pause inside) as if they
    ran back to back, and each segment's throughput."""
    intervals = [(records[start], records[end]) for start, end in segments]
    return {
        **_summed_intervals(intervals),
        "window_seconds": sum(end["seconds"] - start["seconds"] for start, end in intervals),
        "segment_transitions_per_second": [window_rates(start, end)["transitions_per_second"]
                                           for start, end in intervals],
        "paused_seconds": pauses,
    }


class _Segmenter:
    """Where the window's segments start and end, record by record, on the running clock
    (a record's clock less the pauses before it)."""

    def __init__(self, warmup: float, segments: int, segment_seconds: float, settle: float):
        self.segments, self.segment_seconds, self.settle = segments, segment_seconds, settle
        self.next_boundary: float | None = warmup
        """Running time of the next boundary (None while a segment waits to start)."""
        self.next_start: float | None = None
        self.open_start: int | None = None
        self.closed: list[tuple[int, int]] = []

    def done(self) -> bool:
        return len(self.closed) == self.segments

    def boundary_due(self, running: float) -> bool:
        return self.next_boundary is not None and running >= self.next_boundary

    def boundary_at(self, index: int, running: float) -> None:
        """A boundary after record ``index`` (where the trainer pauses, if it does): it
        closes the open segment, and the next one starts ``settle`` running seconds later."""
        if self.open_start is not None:
            self.closed.append((self.open_start, index))
            self.open_start = None
        self.next_boundary, self.next_start = None, running + self.settle

    def record_read(self, index: int, running: float) -> None:
        """Opens a segment at the first record past the settling time."""
        if self.next_start is not None and running >= self.next_start and not self.done():
            self.open_start, self.next_start = index, None
            self.next_boundary = running + self.segment_seconds


def _follow(process: subprocess.Popen, follower: ProgressFollower, segmenter: _Segmenter,
            at_boundary: Callable[[], None] | None) -> tuple[list[dict], list[float]]:
    """Read the trainer's records until its last segment closes, pausing it at each
    boundary with ``at_boundary()`` called inside the pause (no pause where it is None)."""
    records: list[dict] = []
    pauses: list[float] = []
    last_record = time.monotonic()
    while not segmenter.done():
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
        running = records[-1]["seconds"] - sum(pauses)
        segmenter.record_read(len(records) - 1, running)
        if not segmenter.boundary_due(running):
            continue
        if at_boundary is None:
            segmenter.boundary_at(len(records) - 1, running)
            segmenter.record_read(len(records) - 1, running)
            continue
        started = time.monotonic()
        with paused(process.pid):
            records += follower.new_records()  # written between the read and the stop
            running = records[-1]["seconds"] - sum(pauses)
            segmenter.boundary_at(len(records) - 1, running)
            at_boundary()
        pauses.append(time.monotonic() - started)
    return records, pauses


def stop_trainer(process: subprocess.Popen) -> None:
    """SIGTERM (the trainer stops its children and saves), then SIGKILL whatever is left."""
    if process.poll() is None:
        try:
            leftovers = _tree(process.pid)
        except psutil.NoSuchProcess:  # it exited since the poll
            leftovers = []
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
                       segment_seconds: float = SEGMENT_SECONDS, settle_seconds: float = SETTLE_SECONDS) -> dict:
    """``run_a3c.py`` for ``warmup`` seconds, then a ``window`` of counted running seconds in
    segments, with ``at_boundary()`` called while it is paused at each segment boundary (the
    window's start and end included) and ``settle_seconds`` uncounted after each pause;
    without ``at_boundary``, no pause and no settling. Rates from its progress records."""
    segments = max(1, round(window / segment_seconds))
    settle = settle_seconds if at_boundary is not None else 0.0
    segmenter = _Segmenter(warmup, segments, window / segments, settle)
    with tempfile.TemporaryDirectory() as logdir, tempfile.TemporaryFile() as output:
        command = [sys.executable, "run_a3c.py", "-n", "bench", "--env", env_id, "--logdir", logdir,
                   "--stop-reward", "1e9", *extra_args,
                   # only a safety net if this process dies: the window ends with a SIGTERM
                   "--max-seconds", str(warmup + window + (segments + 1) * (60 + settle) + 120)]
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)
        try:
            with TreeMemory(process.pid) as memory:
                records, pauses = _follow(process, ProgressFollower(Path(logdir)), segmenter, at_boundary)
        except BaseException:
            stop_trainer(process)
            output.seek(0)
            print(output.read()[-2000:].decode(errors="replace"), file=sys.stderr)
            raise
        stop_trainer(process)
        if process.returncode != -signal.SIGTERM and process.returncode != 128 + signal.SIGTERM:
            output.seek(0)
            raise RuntimeError(f"trainer failed ({process.returncode}):\n"
                               f"{output.read()[-2000:].decode(errors='replace')}")
    figures = window_figures(records, segmenter.closed, pauses)
    start, end = records[segmenter.closed[0][0]], records[segmenter.closed[-1][1]]
    return {"command": " ".join(command[1:]), **figures, "settle_seconds": settle,
            **memory.summary(start["unix_time"], end["unix_time"])}


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit, so that a benchmark told to stop while the trainer is
    paused resumes and stops it (``run_trainer_window``'s cleanup) instead of leaving a
    stopped process tree behind, which not even the trainer's --max-seconds would end."""
    def raise_exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, raise_exit)
