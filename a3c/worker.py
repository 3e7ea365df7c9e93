"""The child process body: step a vector env with the shared net, send transitions."""
from __future__ import annotations

import os
import queue
import signal
import sys
import traceback
from functools import partial

import torch
from torch import nn

from a3c.config import Config
from a3c.messages import EpisodeEnded, Transitions, WorkerCrashed
from lib.envs import make_env, make_vector_env
from lib.experience import NStepAccumulator
from lib.models import sample_actions

PUT_POLL_SECONDS = 0.1


def worker_main(worker_id: int, config: Config, net: nn.Module, messages, stop_event, seed: int) -> None:
    """Entry point of a child; exits non-zero after reporting any exception it dies of.

    Ctrl-C and SIGTERM reach the whole process group; children ignore them and leave when
    the learner sets ``stop_event``, so a half-written queue message never happens on a signal.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch.set_num_threads(1)
    try:
        collect(worker_id, config, net, messages, stop_event, seed)
    except Exception:  # noqa: BLE001 - any failure must reach the learner before the child exits
        put_until_stopped(messages, WorkerCrashed(worker_id, traceback.format_exc()), stop_event)
        sys.exit(1)


def collect(worker_id: int, config: Config, net: nn.Module, messages, stop_event, seed: int) -> None:
    """Act, accumulate n-step transitions, and put them until told to stop or orphaned."""
    parent_pid = os.getppid()
    device = next(net.parameters()).device
    torch.manual_seed(seed)
    envs = make_vector_env(partial(make_env, config.env_id), config.envs_per_process)
    accumulator = NStepAccumulator(config.envs_per_process, config.reward_steps, config.gamma)
    observations, _ = envs.reset(seed=seed)
    try:
        while not stop_event.is_set() and os.getppid() == parent_pid:
            actions = sample_actions(net, torch.as_tensor(observations).to(device)).cpu().numpy()
            next_observations, rewards, terminated, truncated, infos = envs.step(actions)
            batch, episodes = accumulator.step(
                observations, actions, rewards, terminated, truncated, next_observations, infos
            )
            if batch is not None and not put_until_stopped(messages, Transitions(worker_id, batch), stop_event):
                return
            for episode in episodes:
                if not put_until_stopped(messages, EpisodeEnded(worker_id, episode), stop_event):
                    return
            observations = next_observations
    finally:
        envs.close()


def put_until_stopped(messages, message, stop_event) -> bool:
    """Put, waiting while the queue is full; False if told to stop first."""
    while not stop_event.is_set():
        try:
            messages.put(message, timeout=PUT_POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False
