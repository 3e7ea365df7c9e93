"""Shared test helpers: toy-env configs and a pool of real workers."""
from __future__ import annotations

import time
from pathlib import Path

import psutil
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from a3c.algos import get_algorithm
from a3c.config import Config
from a3c.lib.envs import describe_env
from a3c.lib.models import build_net
from a3c.transport.process_pool import ProcessPool


def toy_config(env: str = "tests.toy_envs:Counting-v0", **overrides) -> Config:
    settings = {"name": "test", "env_id": env, "processes": 2, "envs_per_process": 1,
                "batch_size": 8, "reward_steps": 3, "gamma": 0.5, "lr": 1e-3, "learner_threads": 1,
                "entropy_beta": 0.01, "clip_grad": 1.0, "adam_eps": 1e-3, "value_weight": 1.0, "lr_warmup": 0,
                "return_lambda": 1.0, "heads": "separate",
                "bf16": False, "lr_decay_frames": 0, "entropy_decay_frames": 0,
                "stop_reward": None}
    settings.update(overrides)
    return Config(**settings)


def toy_pool(config: Config, net: torch.nn.Module | None = None) -> ProcessPool:
    """A pool of real children on ``config``'s toy env, acting with ``net`` (in shared
    memory) or a fresh net of seed 0."""
    torch.manual_seed(0)
    env_info = describe_env(config.env_id)
    if net is None:
        net = build_net(env_info)
    net.share_memory()
    version_counter = torch.zeros((), dtype=torch.int64).share_memory_()
    return ProcessPool(get_algorithm(config.algo), config, env_info, net, version_counter, config.seed)


def pids(pool: ProcessPool) -> list[int]:
    return [worker.pid for worker in pool.workers()]


def receive(pool: ProcessPool, count: int, timeout: float = 60.0) -> list:
    """The next ``count`` messages, failing the test if they take longer than ``timeout``."""
    messages, deadline = [], time.monotonic() + timeout
    while len(messages) < count:
        assert time.monotonic() < deadline, f"only {len(messages)} of {count} messages arrived"
        message = pool.get(timeout=0.5)
        if message is not None:
            messages.append(message)
    return messages


def alive(pids, grace: float = 5.0) -> list[str]:
    """The processes among ``pids`` still running after ``grace`` seconds, with their command.

    The grace covers multiprocessing's resource tracker, which leaves once it reads EOF
    from its (already exited) parent.
    """
    deadline = time.monotonic() + grace
    while True:
        running = []
        for pid in pids:
            try:
                process = psutil.Process(pid)
                if process.status() != psutil.STATUS_ZOMBIE:
                    running.append(f"{pid}: {' '.join(process.cmdline())[:200]}")
            except psutil.NoSuchProcess:
                pass
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def only_run_dir(logdir: Path) -> Path:
    (run_dir,) = logdir.iterdir()
    return run_dir


def scalars(run_dir: Path) -> EventAccumulator:
    events = EventAccumulator(str(run_dir))
    events.Reload()
    return events
