"""The learner's event loop while the workers act: one message at a time to the handler of
its type, the timers between messages (checkpoint, best.pt, the progress report), and the
reason to end when one arises. The ``Trainer`` owns one and drives it a ``train()``
iteration at a time; what the loop has to say goes through the run's ``Reporter``."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from a3c.algos.base import train_batch_of
from a3c.lib.episodes import SampleBatchView
from a3c.lib.hook_call import call_hook
from a3c.lib.trackers import MeanTracker, ProgressReporter
from a3c.lifecycle.callbacks import Callback
from a3c.lifecycle.load_meter import PROGRESS_FILE, LoadMeter
from a3c.lifecycle.reporter import Reporter
from a3c.lifecycle.rollback import policy_locked
from a3c.lifecycle.run import Run
from a3c.transport.messages import CallResult, EpisodeEnded, WorkerCrashed
from a3c.transport.pool import WorkerDied, WorkerPool

if TYPE_CHECKING:
    from a3c.lifecycle.trainer import Trainer

GET_TIMEOUT_SECONDS = 1.0
BEST_CHECK_SECONDS = 10.0


class Timers:
    """Actions due every so many seconds; ``run_due`` runs each whose time has come, in the
    order they were registered."""

    def __init__(self) -> None:
        self._timers: list[list[Any]] = []  # [next due, period, action]

    def every(self, seconds: float, action: Callable[[], None]) -> None:
        self._timers.append([time.monotonic() + seconds, seconds, action])

    def run_due(self, now: float) -> None:
        for timer in self._timers:
            if now >= timer[0]:
                timer[0] = now + timer[1]
                timer[2]()


class StepMeans:
    """The mean of each of a step's figures (loss terms, lag, ...) over one iteration; None
    for a figure no step of the iteration had."""

    def __init__(self, kind: type) -> None:
        names = [field.name for field in dataclasses.fields(kind) if field.name != "diagnostics"]
        self.sums = dict.fromkeys(names, 0.0)
        self.counts = dict.fromkeys(names, 0)

    def add(self, stats: Any) -> None:
        for name in self.sums:
            value = getattr(stats, name)
            if value is not None:
                self.sums[name] += value
                self.counts[name] += 1

    def means(self) -> dict[str, float | None]:
        return {name: self.sums[name] / self.counts[name] if self.counts[name] else None
                for name in self.sums}


class EventLoop:
    """Handles the workers' messages for ``trainer``'s run ``run`` from ``pool``.

    ``goal`` is the mean-100 the rollback guard measures a climb against (None: no goal);
    ``save_checkpoint`` and ``save_best`` are the trainer's, run by the timers. ``trainer``
    is what the callbacks are handed."""

    def __init__(self, trainer: Trainer, run: Run, pool: WorkerPool, callbacks: Sequence[Callback],
                 reporter: Reporter, goal: float | None, save_checkpoint: Callable[[], object],
                 save_best: Callable[[], None]):
        self.trainer, self.run, self.pool = trainer, run, pool
        self.config = run.config
        self.callbacks = callbacks
        self.reporter = reporter
        self.goal = goal
        self.progress = ProgressReporter(run.writer, reporter.info, start_frame=run.counters.frames)
        self.step_scalars = MeanTracker(run.writer)
        self.load = LoadMeter(run.writer, run.run_dir / PROGRESS_FILE)
        self.load.record(run.counters.frames, run.counters.transitions, run.learner.policy_version,
                         0.0, run.rewards.mean_reward)  # the zero point of the first rates
        self.handlers: dict[type, Callable[[Any, StepMeans], str | None]] = {
            WorkerCrashed: self._on_crash, EpisodeEnded: self._on_episode,
            CallResult: lambda message, step_means: None}  # a call's answer that came too late
        """Any other message is rows for the learner, as its algorithm's payload decoded them."""
        self.timers = Timers()
        self.timers.every(self.config.save_every, save_checkpoint)
        self.timers.every(BEST_CHECK_SECONDS, save_best)
        self.timers.every(self.config.report_interval, self._report)

    def turn(self, step_means: StepMeans) -> str | None:
        """Take one message (or none within a second), hand it to its handler, then run the
        timers that are due; a reason to end, if any."""
        waiting_since = time.monotonic()
        try:
            message = self.pool.get(timeout=GET_TIMEOUT_SECONDS)
        except WorkerDied as died:
            self._replace_worker(died)
            message = None
        working_since = time.monotonic()
        self.load.waited(working_since - waiting_since)
        reason = None if message is None else self.handlers.get(type(message), self._on_rows)(message, step_means)
        self.load.worked(time.monotonic() - working_since)
        self.timers.run_due(time.monotonic())
        return reason

    # the handlers
    def _on_crash(self, message: WorkerCrashed, step_means: StepMeans) -> None:
        if message.fatal:  # found dead (and restarted) before its report was read: still the run's end
            raise WorkerDied(message.worker_id, None, message.traceback, fatal=True)
        self.reporter.warning(f"traceback of worker {message.worker_id}'s earlier crash:\n"
                              f"{message.traceback.rstrip()}")

    def _on_episode(self, message: EpisodeEnded, step_means: StepMeans) -> str | None:
        run = self.run
        run.counters.episodes += 1
        best_before = run.rewards.best_mean_reward
        episode = message.episode
        solved = run.rewards.record(episode.reward, episode.length, run.counters.frames, episode.agent_rewards,
                                    episode.custom_metrics, episode.hist_data)
        if run.rewards.best_mean_reward != best_before:
            run.offer_best()
        for callback in self.callbacks:
            call_hook(callback.on_episode_result, {"trainer": self.trainer, "algorithm": self.trainer,
                                                   "episode": episode}, (self.trainer, episode))
        return "solved" if solved else None

    def _on_rows(self, message: Any, step_means: StepMeans) -> str | None:
        """A payload's message: it says how many ``transitions`` (agent steps) it carries."""
        run = self.run
        run.counters.transitions += message.transitions
        run.counters.frames += message.transitions * run.env_info.frames_per_step
        for stats in run.learner.consume(message, run.counters.frames, run.counters.episodes):
            if self.callbacks:
                rows = train_batch_of(stats)
                train_batch = None if rows is None else SampleBatchView(rows)
            for callback in self.callbacks:
                figures = dataclasses.asdict(stats)
                call_hook(callback.on_learn_on_batch, {
                    "trainer": self.trainer, "algorithm": self.trainer, "policy": self.trainer.net,
                    "train_batch": train_batch, "result": figures}, (self.trainer, figures))
            self._log_step(stats)
            step_means.add(stats)
            self.load.trained(stats.policy_lag, getattr(stats, "policy_entropy", None))
        if self.config.max_frames is not None and run.counters.frames >= self.config.max_frames:
            return "frame_budget"
        return None

    # the timers' and the handlers' helpers
    def _report(self) -> None:
        """The progress line, the load figures, the rollback guard and the learner's figures."""
        run = self.run
        ages = self.pool.message_ages()
        self.progress.report(run.counters.frames, run.counters.episodes, run.rewards.mean_reward,
                             run.rewards.agent_means, ages)
        self.load.record(run.counters.frames, run.counters.transitions, run.learner.policy_version,
                         self.pool.child_wait_seconds(), run.rewards.mean_reward, run.rewards.custom_summary())
        for name, value in run.rewards.custom_summary().items():
            run.writer.add_scalar(f"custom_metrics/{name}", value, run.counters.frames)
        for worker_id, age in enumerate(ages):
            run.writer.add_scalar(f"workers/last_message_seconds/{worker_id}", age, run.counters.frames)
        self._roll_back_if_locked()
        self.log_scalars()

    def log_scalars(self) -> None:
        """The report's TensorBoard scalars that follow the frames (the random-action flag, the
        learner's own, such as the scheduled epsilon); the trainer calls it once more at the
        run's end, so that the last value logged is the last frame's, not the last report's."""
        run = self.run
        if self.config.random_frames:
            run.writer.add_scalar("train/random_actions", float(run.counters.frames < self.config.random_frames),
                                  run.counters.frames)
        run.learner.log_interval(run.writer, run.counters.frames)

    def _roll_back_if_locked(self) -> None:
        """A policy locked into one action after a collapse gets the best weights back."""
        run, rewards = self.run, self.run.rewards
        entropy = self.load.last_rates.get("policy_entropy")
        if not run.env_info.discrete:  # the floor is set for one Categorical's uniform entropy
            return
        if not (self.config.collapse_rollback and run.best_state.state is not None and policy_locked(
                entropy, run.env_info.n_actions, rewards.mean_reward, rewards.best_mean_reward,
                rewards.worst_mean_reward, self.goal, rewards.worst_spread)):
            return
        frame = run.roll_back()
        self.reporter.warning(
            f"the policy locked into one action (entropy {entropy:.4f} nats, mean-100 "
            f"{rewards.mean_reward:.2f}, best {rewards.best_mean_reward:.2f}): weights and "
            f"optimizer put back to those of frame {frame:,} ({run.counters.rollbacks} so far)")
        run.writer.add_scalar("train/rollbacks", run.counters.rollbacks, run.counters.frames)

    def _replace_worker(self, died: WorkerDied) -> None:
        """Restart the dead worker while the budget lasts; past it, let WorkerDied end the run."""
        run = self.run
        if died.fatal or run.counters.worker_restarts >= self.config.max_worker_restarts:
            raise died
        run.counters.worker_restarts += 1
        self.reporter.warning(f"{describe_death(died)}; restarting it "
                              f"({run.counters.worker_restarts} of {self.config.max_worker_restarts} restarts)")
        self.pool.restart(died.worker_id)
        run.writer.add_scalar("workers/restarts", run.counters.worker_restarts, run.counters.frames)

    def _log_step(self, stats: Any) -> None:
        """Every step's scalars as means of 10 steps; a sampled step's diagnostics as they are."""
        frame = self.run.counters.frames
        for name, value in dataclasses.asdict(stats).items():
            if value is None or name == "diagnostics":
                continue
            group = "loss" if name.startswith("loss_") else "train"
            self.step_scalars.track(f"{group}/{name.removeprefix('loss_')}", value, frame)
        for name, value in (getattr(stats, "diagnostics", None) or {}).items():
            self.run.writer.add_scalar(f"diagnostics/{name}", value, frame)


def describe_death(died: WorkerDied) -> str:
    """A dead worker's one-line cause, with its traceback when it sent one."""
    text = str(died)
    if died.child_traceback:
        text += "\n" + died.child_traceback.rstrip()
    return text
