"""``train(config)``: start the children, learn from their transitions, stop and save."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tensorboardX import SummaryWriter

from a3c.channel import SlotLayout
from a3c.checkpoint import CheckpointError, check_matches, load_checkpoint, save_checkpoint
from a3c.config import Config, ConfigError
from a3c.learner import (
    GradientSteps,
    Learner,
    NonFiniteLoss,
    StepStats,
    TransitionSteps,
    new_version_counter,
)
from a3c.load import PROGRESS_FILE, LoadMeter
from a3c.messages import EpisodeEnded, Gradients, Transitions, WorkerCrashed
from a3c.pool import WorkerDied, WorkerPool
from a3c.signals import StopSignals
from a3c.worker import worker_main
from lib.allocator import keep_freed_memory
from lib.denormals import flush_denormals
from lib.envs import EnvInfo, describe_env
from lib.models import build_net
from lib.trackers import MeanTracker, ProgressReporter, RewardTracker

GET_TIMEOUT_SECONDS = 1.0
BEST_CHECK_SECONDS = 10.0


@dataclass
class Counters:
    """How far the run has come; saved in checkpoints and continued on resume."""

    frames: int = 0
    transitions: int = 0
    episodes: int = 0
    worker_restarts: int = 0
    """Over this invocation; the budget starts afresh on resume."""


@dataclass
class TrainResult:
    """How a run ended. ``reason`` is one of: solved, frame_budget, time_budget, interrupted,
    terminated, worker_died, non_finite."""

    reason: str
    counters: Counters
    seconds: float
    mean_reward: float | None
    run_dir: Path
    message: str = ""

    @property
    def exit_code(self) -> int:
        codes = {"solved": 0, "frame_budget": 0, "time_budget": 0, "interrupted": 130, "terminated": 143}
        return codes.get(self.reason, 1)


@dataclass
class Run:
    """The learner-side state of one run: what a checkpoint saves and resume restores."""

    config: Config
    learner: Learner
    rewards: RewardTracker
    counters: Counters
    run_dir: Path
    writer: SummaryWriter
    env_info: EnvInfo
    saved_best: float | None = None
    """The best mean-100 reward that ``best.pt`` was saved at."""

    def checkpoint_state(self) -> dict:
        return {
            "model": self.learner.net.state_dict(),
            "optimizer": self.learner.optimizer.state_dict(),
            "counters": dataclasses.asdict(self.counters),
            "policy_version": self.learner.policy_version,
            "recent_rewards": list(self.rewards.recent_rewards),
            "best_mean_reward": self.rewards.best_mean_reward,
            "config": dataclasses.asdict(self.config),
            "torch_rng": torch.get_rng_state(),
        }

    def save(self, name: str) -> Path:
        path = self.run_dir / name
        save_checkpoint(path, self.checkpoint_state())
        return path

    def save_best(self) -> None:
        """Write ``best.pt`` if the best mean-100 reward rose since it was last written."""
        best = self.rewards.best_mean_reward
        if best is not None and best != self.saved_best:
            self.save("best.pt")
            self.saved_best = best


def run_name(config: Config) -> str:
    return f"{config.name}__{config.env_id.replace('/', '-')}__{config.seed}__{int(time.time())}"


def hyperparameter_table(config: Config) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in dataclasses.asdict(config).items())
    return "|parameter|value|\n|-|-|\n" + rows


@dataclass
class SharedNet:
    """What the children need before they start, and the checkpoint it came from, if any."""

    net: torch.nn.Module
    version_counter: torch.Tensor
    env_info: EnvInfo
    restored: dict | None

    @property
    def transitions_done(self) -> int:
        return 0 if self.restored is None else self.restored["counters"]["transitions"]


def share_net(config: Config) -> SharedNet:
    """Build (or restore) the net in shared memory, and nothing the children do not need.

    This part is quick; the optimizer is not (constructing the first torch optimizer imports
    torch._dynamo, 1-2 s), so it is built while the children import and start their envs.
    A ``--resume`` file is read here, once; ConfigError if it cannot be resumed.
    """
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    torch.set_num_threads(config.learner_threads)
    keep_freed_memory()
    flush_denormals()  # before the net's first forward pass starts torch's threads
    device = torch.device(config.device)
    env_info = describe_env(config.env_id)
    net = build_net(env_info, config.heads).to(device)
    version_counter = new_version_counter()
    restored = None
    if config.resume is not None:
        try:
            restored = load_checkpoint(config.resume, map_location=device)
            check_matches(restored, config.env_id, net)
        except CheckpointError as exc:
            raise ConfigError(f"--resume: {exc}") from exc
        net.load_state_dict(restored["model"])
        version_counter.fill_(restored["policy_version"])
        torch.set_rng_state(restored["torch_rng"])
    net.share_memory()
    return SharedNet(net, version_counter, env_info, restored)


def make_run_dir(config: Config) -> Path:
    """The run's directory, created now (a resumed run's is the checkpoint's); ConfigError
    with the system's reason when it cannot be, before any child exists."""
    if config.resume is not None:
        return Path(config.resume).resolve().parent
    run_dir = Path(config.logdir) / run_name(config)
    try:
        run_dir.mkdir(parents=True)
    except OSError as exc:
        raise ConfigError(f"--logdir {config.logdir!r}: cannot create {run_dir.name} "
                          f"({exc.strerror or exc})") from exc
    return run_dir


def start_run(config: Config, shared: SharedNet, run_dir: Path) -> Run:
    """The learner-side state around the shared net: optimizer, counters, writer."""
    learner = Learner(shared.net, config.loss_settings, config.lr, config.adam_eps, config.clip_grad,
                      torch.device(config.device), shared.version_counter, lr_warmup=config.lr_warmup)
    counters, recent_rewards, best = Counters(), [], None
    if shared.restored is not None:
        state = shared.restored
        learner.optimizer.load_state_dict(state["optimizer"])
        counters = Counters(**{**state["counters"], "worker_restarts": 0})
        recent_rewards, best = state["recent_rewards"], state["best_mean_reward"]
    writer = SummaryWriter(str(run_dir))
    writer.add_text("hyperparameters", hyperparameter_table(config), counters.frames)
    rewards = RewardTracker(writer, config.stop_reward, recent_rewards)
    rewards.best_mean_reward = best
    return Run(config, learner, rewards, counters, run_dir, writer, shared.env_info, saved_best=best)


def train(config: Config) -> TrainResult:
    """Run A3C (data- or gradient-parallel, per ``config.mode``) until solved, out of
    frames or time, interrupted or failed.

    Every ending saves ``checkpoint.pt`` except a non-finite loss, which keeps the last
    good one; ``summary.json`` says how the run ended.
    """
    shared = share_net(config)
    run_dir = make_run_dir(config)
    pool = WorkerPool(worker_main, (config, shared.net, shared.version_counter),
                      config.processes, config.queue_capacity, config.seed + shared.transitions_done,
                      slot_layout(config, shared.env_info, shared.net))
    message = ""
    with StopSignals(partial(_exit_now, pool)) as signals:
        try:
            pool.start()  # children take seconds to import and start: the learner is built meanwhile
            run = start_run(config, shared, run_dir)
            print(f"run {run.run_dir} | {config.env_id} | {config.processes} processes x "
                  f"{config.envs_per_process} envs | mode {config.mode} | device {config.device}"
                  + (f" | resumed at frame {run.counters.frames:,}" if config.resume else ""), flush=True)
            progress = ProgressReporter(run.writer, config.report_interval, start_frame=run.counters.frames)
            reason = _learn(run, pool, progress, signals)
            if reason in ("interrupted", "terminated"):
                print(f"{reason}: stopping the children and saving the checkpoint "
                      "(a second Ctrl-C or SIGTERM leaves at once, without it)", flush=True)
        except WorkerDied as exc:
            reason = "worker_died"
            message = f"{_describe_death(exc)}; no restarts left ({config.max_worker_restarts} allowed)"
        except NonFiniteLoss as exc:
            reason, message = "non_finite", f"{exc}; kept the last good checkpoint"
        finally:
            signals.stopping = True
            pool.close()
        if reason != "non_finite":
            run.save("checkpoint.pt")
            run.save_best()
    result = TrainResult(reason, run.counters, progress.elapsed(), run.rewards.mean_reward,
                         run.run_dir, message)
    _write_summary(result)
    run.writer.close()
    return result


def slot_layout(config: Config, env_info: EnvInfo, net: torch.nn.Module) -> SlotLayout:
    """Data mode: room for the most transitions one vector step can emit; grads mode: one
    flat gradient."""
    if config.mode == "grads":
        parameters = sum(parameter.numel() for parameter in net.parameters())
        return SlotLayout((parameters,), "float32", rows=1, slots=config.slots_per_child)
    return SlotLayout(env_info.observation_shape, env_info.observation_dtype,
                      rows=config.envs_per_process * config.reward_steps,
                      slots=config.slots_per_child)


def _exit_now(pool: WorkerPool, exit_code: int) -> None:
    """A second Ctrl-C or SIGTERM: kill the children and leave without saving.

    The last checkpoint on disk stays readable, since checkpoints are replaced by rename.
    """
    pool.kill()
    print("second interrupt: children killed, exiting without the final checkpoint",
          file=sys.stderr, flush=True)
    os._exit(exit_code)


def _describe_death(died: WorkerDied) -> str:
    text = str(died)
    if died.child_traceback:
        text += "\n" + died.child_traceback.rstrip()
    return text


def _replace_worker(run: Run, pool: WorkerPool, died: WorkerDied) -> None:
    """Restart the dead child while the budget lasts; past it, let WorkerDied end the run."""
    if run.counters.worker_restarts >= run.config.max_worker_restarts:
        raise died
    run.counters.worker_restarts += 1
    print(f"{_describe_death(died)}; restarting it "
          f"({run.counters.worker_restarts} of {run.config.max_worker_restarts} restarts)",
          file=sys.stderr, flush=True)
    pool.restart(died.worker_id)
    run.writer.add_scalar("workers/restarts", run.counters.worker_restarts, run.counters.frames)


def _learn(run: Run, pool: WorkerPool, progress: ProgressReporter, signals: StopSignals) -> str:
    config, counters, rewards = run.config, run.counters, run.rewards
    frames_per_step = run.env_info.frames_per_step
    if config.mode == "grads":
        steps = GradientSteps(run.learner, config.grad_batch, config.max_policy_lag)
    else:
        steps = TransitionSteps(run.learner, config.batch_size)
    step_scalars = MeanTracker(run.writer)
    load = LoadMeter(run.writer, run.run_dir / PROGRESS_FILE)
    load.record(counters.frames, counters.transitions, run.learner.policy_version, 0.0,
                rewards.mean_reward)  # the zero point the first interval's rates start from
    deadline = None if config.max_seconds is None else time.monotonic() + config.max_seconds
    next_save = time.monotonic() + config.save_every
    next_best_check = time.monotonic() + BEST_CHECK_SECONDS
    while signals.reason is None:
        waiting_since = time.monotonic()
        try:
            message = pool.get(timeout=GET_TIMEOUT_SECONDS)
        except WorkerDied as died:
            _replace_worker(run, pool, died)
            continue
        working_since = time.monotonic()
        load.waited(working_since - waiting_since)
        if isinstance(message, WorkerCrashed):
            print(f"traceback of worker {message.worker_id}'s earlier crash:\n"
                  f"{message.traceback.rstrip()}", file=sys.stderr, flush=True)
        elif isinstance(message, EpisodeEnded):
            counters.episodes += 1
            if rewards.record(message.episode.reward, message.episode.length, counters.frames):
                return "solved"
        elif isinstance(message, (Transitions, Gradients)):
            transitions = len(message.batch) if isinstance(message, Transitions) else message.transitions
            counters.transitions += transitions
            counters.frames += transitions * frames_per_step
            for stats in steps.consume(message):
                _log_step(run.writer, step_scalars, stats, counters.frames)
                load.trained(stats.policy_lag, stats.policy_entropy)
            if config.max_frames is not None and counters.frames >= config.max_frames:
                return "frame_budget"
        now = time.monotonic()
        load.worked(now - working_since)
        if deadline is not None and now >= deadline:
            return "time_budget"
        if now >= next_save:
            run.save("checkpoint.pt")
            next_save = now + config.save_every
        if now >= next_best_check:
            next_best_check = now + BEST_CHECK_SECONDS
            run.save_best()
        if progress.maybe_report(counters.frames, counters.episodes, rewards.mean_reward):
            load.record(counters.frames, counters.transitions, run.learner.policy_version,
                        pool.child_wait_seconds(), rewards.mean_reward)
            if isinstance(steps, GradientSteps):
                run.writer.add_scalar("train/dropped_gradients", steps.dropped, counters.frames)
    return signals.reason


def _log_step(writer: SummaryWriter, step_scalars: MeanTracker, stats: StepStats, frame: int) -> None:
    """Every step's scalars as means of 10 steps; a sampled step's diagnostics as they are."""
    for name, value in dataclasses.asdict(stats).items():
        if value is None or name == "diagnostics":
            continue
        group = "loss" if name.startswith("loss_") else "train"
        step_scalars.track(f"{group}/{name.removeprefix('loss_')}", value, frame)
    for name, value in (stats.diagnostics or {}).items():
        writer.add_scalar(f"diagnostics/{name}", value, frame)


def _write_summary(result: TrainResult) -> None:
    summary = {
        "reason": result.reason,
        "seconds": round(result.seconds, 3),
        "mean_reward_100": result.mean_reward,
        **dataclasses.asdict(result.counters),
    }
    (result.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
