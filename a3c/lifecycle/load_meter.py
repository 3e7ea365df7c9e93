"""Where the time goes: the learner's busy and waiting seconds, workers' blocked seconds,
and policy lag, logged per report interval to TensorBoard and to ``progress.jsonl``.

``progress.jsonl`` holds cumulative figures, one JSON object per line, so any window of
a run (the benchmark's, say) is the difference of two lines.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from a3c.lib.trackers import ScalarWriter
from a3c.lifecycle.disk import writing
from a3c.lifecycle.strict_json import strict_dumps

PROGRESS_FILE = "progress.jsonl"


def read_progress(run_dir: Path) -> list[dict]:
    """The cumulative records of a run's ``progress.jsonl``, oldest first."""
    return [json.loads(line) for line in (run_dir / PROGRESS_FILE).read_text().splitlines()]


class LoadMeter:
    """Accumulates the learner's time split and the policy lag of the batches it trained."""

    def __init__(self, writer: ScalarWriter, path: Path):
        self.writer = writer
        self.path = path
        self.started = time.monotonic()
        self.learner_wait_seconds = 0.0
        self.learner_busy_seconds = 0.0
        self.lag_sum = 0.0
        self.lag_batches = 0
        self.entropy_sum = 0.0
        self.entropy_batches = 0
        self._previous: dict | None = None
        self.last_rates: dict[str, float | None] = {}
        """The rates over the last interval between two records."""

    def waited(self, seconds: float) -> None:
        self.learner_wait_seconds += seconds

    def worked(self, seconds: float) -> None:
        self.learner_busy_seconds += seconds

    def trained(self, policy_lag: float | None, policy_entropy: float | None) -> None:
        """One step's lag and its policy's entropy (None for a Q-learner, which has none)."""
        if policy_lag is not None:
            self.lag_sum += policy_lag
            self.lag_batches += 1
        if policy_entropy is not None:
            self.entropy_sum += policy_entropy
            self.entropy_batches += 1

    def record(self, frame: int, transitions: int, policy_version: int,
               child_wait_seconds: float, mean_reward: float | None,
               custom_metrics: dict[str, float] | None = None) -> dict:
        """Append the cumulative figures (and the callbacks' custom metrics, where there are
        any) to ``progress.jsonl``; log the interval's rates."""
        snapshot = {
            "seconds": round(time.monotonic() - self.started, 3),
            "unix_time": round(time.time(), 3),
            "mean_reward_100": mean_reward,
            "frames": frame,
            "transitions": transitions,
            "policy_version": policy_version,
            "learner_wait_seconds": round(self.learner_wait_seconds, 3),
            "learner_busy_seconds": round(self.learner_busy_seconds, 3),
            "child_wait_seconds": round(child_wait_seconds, 3),
            "policy_lag_sum": round(self.lag_sum, 3),
            "policy_lag_batches": self.lag_batches,
            "policy_entropy_sum": round(self.entropy_sum, 3),
            "policy_entropy_batches": self.entropy_batches,
        }
        if custom_metrics:
            snapshot["custom_metrics"] = custom_metrics
        with writing(self.path), self.path.open("a") as stream:
            stream.write(strict_dumps(snapshot) + "\n")
        if self._previous is not None:
            self.last_rates = window_rates(self._previous, snapshot)
            for tag, value in self.last_rates.items():
                if value is not None:
                    self.writer.add_scalar(f"perf/{tag}", value, frame)
        self._previous = snapshot
        return snapshot


def window_rates(start: dict, end: dict) -> dict[str, float]:
    """Rates over the window between two ``progress.jsonl`` records."""
    seconds = max(end["seconds"] - start["seconds"], 1e-9)
    batches = end["policy_lag_batches"] - start["policy_lag_batches"]
    entropy_batches = end.get("policy_entropy_batches", 0) - start.get("policy_entropy_batches", 0)
    return {
        "transitions_per_second": (end["transitions"] - start["transitions"]) / seconds,
        "frames_per_second": (end["frames"] - start["frames"]) / seconds,
        "learner_busy_fraction": (end["learner_busy_seconds"] - start["learner_busy_seconds"]) / seconds,
        "learner_wait_fraction": (end["learner_wait_seconds"] - start["learner_wait_seconds"]) / seconds,
        "child_wait_seconds_per_second": (end["child_wait_seconds"] - start["child_wait_seconds"]) / seconds,
        "policy_lag": (end["policy_lag_sum"] - start["policy_lag_sum"]) / batches if batches else 0.0,
        "policy_entropy": ((end["policy_entropy_sum"] - start["policy_entropy_sum"]) / entropy_batches
                           if entropy_batches else None),
    }
