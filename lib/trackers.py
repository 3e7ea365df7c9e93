"""Trackers that turn a stream of numbers into TensorBoard scalars and console lines."""
from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

MEAN_WINDOW = 100


class ScalarWriter(Protocol):
    def add_scalar(self, tag: str, scalar_value: float, global_step: int) -> None: ...

    def add_histogram(self, tag: str, values: np.ndarray, global_step: int) -> None: ...


class RewardTracker:
    """Finished-episode returns: logs each one and the mean of the last 100.

    ``record`` returns True once a full window of 100 episodes averages at least
    ``stop_reward``; a mean over fewer episodes is logged but never ends a run. In a
    multi-agent env the reward is the team's, and each of ``agents`` gets its own return and
    mean of the last 100 (``episode/agent_reward/NAME``, ``episode/agent_reward_100/NAME``).
    """

    def __init__(self, writer: ScalarWriter, stop_reward: float | None,
                 recent_rewards: Iterable[float] = (), agents: Sequence[str] = ()):
        self.writer = writer
        self.agent_rewards = {agent: collections.deque(maxlen=MEAN_WINDOW) for agent in agents}
        self.stop_reward = stop_reward
        self.recent_rewards: collections.deque[float] = collections.deque(
            recent_rewards, maxlen=MEAN_WINDOW
        )
        self.recent_lengths: collections.deque[int] = collections.deque(maxlen=MEAN_WINDOW)
        self.custom: dict[str, collections.deque[float]] = {}
        """Each custom metric's values over the last ``MEAN_WINDOW`` episodes that recorded it."""
        self.best_mean_reward: float | None = None
        self.worst_mean_reward: float | None = None
        """The lowest mean over a full window (a run's level before it learned, or after a collapse)."""
        self.worst_spread = 0.0
        """The standard deviation of the single episodes' rewards in that window."""

    @property
    def mean_reward(self) -> float | None:
        return float(np.mean(self.recent_rewards)) if self.recent_rewards else None

    @property
    def window_full(self) -> bool:
        return len(self.recent_rewards) == MEAN_WINDOW

    @property
    def agent_means(self) -> dict[str, float]:
        """Each agent's mean return over its last 100 episodes (none before the first)."""
        return {agent: float(np.mean(window)) for agent, window in self.agent_rewards.items() if window}

    def record(self, reward: float, length: int, frame: int, agent_rewards: Sequence[float] = (),
               custom_metrics: Mapping[str, float] | None = None,
               hist_data: Mapping[str, Sequence[float]] | None = None) -> bool:
        """Log a finished episode (and the custom metrics and histograms its worker's callbacks
        recorded, under ``custom/``); True once the run is solved."""
        for name, value in (custom_metrics or {}).items():
            self.custom.setdefault(name, collections.deque(maxlen=MEAN_WINDOW)).append(float(value))
            self.writer.add_scalar(f"custom/{name}", float(value), frame)
        for name, values in (hist_data or {}).items():
            if len(values):
                self.writer.add_histogram(f"custom/{name}", np.asarray(values, dtype=np.float64), frame)
        for (agent, window), agent_reward in zip(self.agent_rewards.items(), agent_rewards):
            window.append(agent_reward)
            self.writer.add_scalar(f"episode/agent_reward/{agent}", agent_reward, frame)
            self.writer.add_scalar(f"episode/agent_reward_100/{agent}", float(np.mean(window)), frame)
        self.recent_rewards.append(reward)
        self.recent_lengths.append(length)
        mean_reward = self.mean_reward
        self.writer.add_scalar("episode/reward", reward, frame)
        self.writer.add_scalar("episode/reward_100", mean_reward, frame)
        self.writer.add_scalar("episode/length", length, frame)
        if self.window_full and (self.best_mean_reward is None or mean_reward > self.best_mean_reward):
            self.best_mean_reward = mean_reward
        if self.window_full and (self.worst_mean_reward is None or mean_reward < self.worst_mean_reward):
            self.worst_mean_reward = mean_reward
            self.worst_spread = float(np.std(self.recent_rewards))
        return self.solved

    def custom_summary(self) -> dict[str, float]:
        """RLlib's ``custom_metrics``: NAME_mean, NAME_min and NAME_max over the recent window."""
        summary = {}
        for name, values in self.custom.items():
            summary |= {f"{name}_mean": float(np.mean(values)), f"{name}_min": float(min(values)),
                        f"{name}_max": float(max(values))}
        return summary

    @property
    def solved(self) -> bool:
        return (self.stop_reward is not None and self.window_full
                and self.mean_reward >= self.stop_reward)


class MeanTracker:
    """Averages noisy per-step scalars over ``window`` values before writing them."""

    def __init__(self, writer: ScalarWriter, window: int = 10):
        self.writer = writer
        self.window = window
        self._values: dict[str, list[float]] = collections.defaultdict(list)

    def track(self, tag: str, value: float, frame: int) -> None:
        values = self._values[tag]
        values.append(float(value))
        if len(values) >= self.window:
            self.writer.add_scalar(tag, float(np.mean(values)), frame)
            values.clear()


class ProgressReporter:
    """One progress line per ``report`` (the caller's timer decides when), and frames/s logged."""

    def __init__(self, writer: ScalarWriter, say: Callable[[str], None], start_frame: int = 0):
        self.writer = writer
        self.say = say
        self.started = time.monotonic()
        self._last_time = self.started
        self._last_frame = start_frame

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def report(self, frame: int, episodes: int, mean_reward: float | None,
               agent_means: Mapping[str, float] | None = None, message_ages: Sequence[float] = ()) -> None:
        """Say the line and log the frames/s since the last report. ``agent_means``: each
        agent's mean-100 in a multi-agent env, shown after the team's; ``message_ages``:
        seconds since each worker's last message, where the backend watches them."""
        now = time.monotonic()
        speed = (frame - self._last_frame) / max(now - self._last_time, 1e-9)
        self._last_time, self._last_frame = now, frame
        self.writer.add_scalar("speed/frames_per_second", speed, frame)
        mean_text = "n/a" if mean_reward is None else f"{mean_reward:.2f}"
        if agent_means:
            mean_text += " (" + ", ".join(f"{agent} {mean:.2f}" for agent, mean in agent_means.items()) + ")"
        self.say(f"frames {frame:,} | episodes {episodes:,} | mean-100 reward {mean_text} | "
                 f"{speed:,.0f} frames/s | elapsed {format_seconds(now - self.started)}{ages_text(message_ages)}")


AGES_SHOWN = 8
"""Workers whose last message's age the progress line lists one by one; more, and it names the oldest."""


def ages_text(ages: Sequence[float]) -> str:
    """`` | last message 0.1, 0.4 s ago`` (one age a worker), or for many workers the oldest."""
    if not ages:
        return ""
    if len(ages) <= AGES_SHOWN:
        return " | last message " + ", ".join(f"{age:.1f}" for age in ages) + " s ago"
    oldest = max(range(len(ages)), key=ages.__getitem__)
    return f" | last message up to {ages[oldest]:.1f} s ago (worker {oldest})"


def format_seconds(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
