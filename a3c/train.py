"""``train(config)``: start the children, learn from their transitions, stop and save."""
from __future__ import annotations

import dataclasses
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tensorboardX import SummaryWriter

from a3c.checkpoint import save_checkpoint
from a3c.config import Config
from a3c.learner import Learner, NonFiniteLoss, StepStats
from a3c.messages import EpisodeEnded, Transitions
from a3c.pool import WorkerDied, WorkerPool
from a3c.worker import worker_main
from lib.batch import TransitionBuffer
from lib.envs import describe_env
from lib.models import build_net
from lib.trackers import MeanTracker, ProgressReporter, RewardTracker

GET_TIMEOUT_SECONDS = 1.0


class Terminated(BaseException):
    """SIGTERM arrived; raised in the learner like KeyboardInterrupt is for SIGINT."""


@dataclass
class Counters:
    """How far the run has come; saved in checkpoints."""

    frames: int = 0
    transitions: int = 0
    episodes: int = 0
    optimizer_steps: int = 0


@dataclass
class TrainResult:
    """How a run ended. ``reason`` is one of: solved, frame_budget, interrupted, terminated,
    worker_died, non_finite."""

    reason: str
    counters: Counters
    seconds: float
    mean_reward: float | None
    run_dir: Path
    message: str = ""

    @property
    def exit_code(self) -> int:
        return {"solved": 0, "frame_budget": 0, "interrupted": 130, "terminated": 143}.get(self.reason, 1)


def run_name(config: Config) -> str:
    return f"{config.name}__{config.env_id.replace('/', '-')}__{config.seed}__{int(time.time())}"


def hyperparameter_table(config: Config) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in dataclasses.asdict(config).items())
    return "|parameter|value|\n|-|-|\n" + rows


def train(config: Config) -> TrainResult:
    """Run data-parallel A3C until solved, out of frames, interrupted or failed."""
    env_info = describe_env(config.env_id)
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    device = torch.device(config.device)
    net = build_net(env_info).to(device)
    net.share_memory()
    learner = Learner(net, config.lr, config.adam_eps, config.gamma, config.entropy_beta,
                      config.clip_grad, device)
    run_dir = Path(config.logdir) / run_name(config)
    writer = SummaryWriter(str(run_dir))
    writer.add_text("hyperparameters", hyperparameter_table(config))
    counters = Counters()
    rewards = RewardTracker(writer, config.stop_reward)
    print(f"run {run_dir} | {config.env_id} | {config.processes} processes x "
          f"{config.envs_per_process} envs | device {device}", flush=True)

    pool = WorkerPool(worker_main, (config, net), config.processes, config.queue_capacity, config.seed)
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
    progress = ProgressReporter(writer, config.report_interval)
    message = ""
    try:
        pool.start()
        reason = _learn(config, env_info.frames_per_step, pool, learner, writer, rewards, counters, progress)
    except KeyboardInterrupt:
        reason = "interrupted"
    except Terminated:
        reason = "terminated"
    except WorkerDied as exc:
        reason, message = "worker_died", str(exc)
        if exc.child_traceback:
            message += "\n" + exc.child_traceback.rstrip()
    except NonFiniteLoss as exc:
        reason, message = "non_finite", str(exc)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        pool.close()
    seconds = progress.elapsed()
    result = TrainResult(reason, counters, seconds, rewards.mean_reward, run_dir, message)
    if reason != "non_finite":
        save_checkpoint(run_dir / "checkpoint.pt", _checkpoint_state(config, learner, counters, rewards))
    _write_summary(result)
    writer.close()
    return result


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def _learn(config: Config, frames_per_step: int, pool: WorkerPool, learner: Learner,
           writer: SummaryWriter, rewards: RewardTracker, counters: Counters,
           progress: ProgressReporter) -> str:
    buffer = TransitionBuffer(config.batch_size)
    step_scalars = MeanTracker(writer)
    while True:
        message = pool.get(timeout=GET_TIMEOUT_SECONDS)
        if isinstance(message, EpisodeEnded):
            counters.episodes += 1
            if rewards.record(message.episode.reward, message.episode.length, counters.frames):
                return "solved"
        elif isinstance(message, Transitions):
            counters.transitions += len(message.batch)
            counters.frames += len(message.batch) * frames_per_step
            buffer.add(message.batch)
            while (batch := buffer.pop_batch()) is not None:
                _log_step(step_scalars, learner.step(batch), counters.frames)
                counters.optimizer_steps += 1
            if config.max_frames is not None and counters.frames >= config.max_frames:
                return "frame_budget"
        progress.maybe_report(counters.frames, counters.episodes, rewards.mean_reward)


def _log_step(step_scalars: MeanTracker, stats: StepStats, frame: int) -> None:
    for name, value in dataclasses.asdict(stats).items():
        group = "loss" if name.startswith("loss_") else "train"
        step_scalars.track(f"{group}/{name.removeprefix('loss_')}", value, frame)


def _checkpoint_state(config: Config, learner: Learner, counters: Counters,
                      rewards: RewardTracker) -> dict:
    return {
        "model": learner.net.state_dict(),
        "optimizer": learner.optimizer.state_dict(),
        "counters": dataclasses.asdict(counters),
        "recent_rewards": list(rewards.recent_rewards),
        "config": dataclasses.asdict(config),
        "torch_rng": torch.get_rng_state(),
    }


def _write_summary(result: TrainResult) -> None:
    summary = {
        "reason": result.reason,
        "seconds": round(result.seconds, 3),
        "mean_reward_100": result.mean_reward,
        **dataclasses.asdict(result.counters),
    }
    (result.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
