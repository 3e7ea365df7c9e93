"""The child process body: step a vector env with the shared net, send transitions."""
from __future__ import annotations

import copy
import gc
import os
import signal
import sys
import traceback
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from torch import nn

from a3c.actor import VectorActor
from a3c.channel import ChildChannel
from a3c.config import Config
from a3c.messages import EpisodeEnded, WorkerCrashed
from lib.allocator import keep_freed_memory
from lib.batch import TransitionBuffer
from lib.denormals import flush_denormals
from lib.dqn import actor_epsilons, epsilon_greedy
from lib.experience import TransitionBatch
from lib.gradients import flat_gradients, loss_gradients


def worker_main(worker_id: int, config: Config, net: nn.Module, version_counter: torch.Tensor,
                channel: ChildChannel, seed: int) -> None:
    """Entry point of a child; exits non-zero after reporting any exception it dies of.

    Ctrl-C and SIGTERM reach the whole process group; children ignore them and leave when
    the learner sets the stop event, so a half-written queue message never happens on a signal.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch.set_num_threads(1)
    keep_freed_memory()
    flush_denormals()
    try:
        collect(config, net, version_counter, channel, seed)
    except Exception:  # noqa: BLE001 - any failure must reach the learner before the child exits
        channel.put(WorkerCrashed(worker_id, channel.incarnation, traceback.format_exc()))
        sys.exit(1)
    # leaving sooner lets the learner's shutdown join sooner: the collection at interpreter
    # exit skips frozen objects (torch's among them); the queue still flushes as before
    gc.freeze()


class TransitionSender:
    """Data mode: act with the shared net, send every micro-batch of transitions as it comes."""

    def __init__(self, net: nn.Module, version_counter: torch.Tensor, channel: ChildChannel):
        self.acting_net = net
        self.version_counter = version_counter
        self.channel = channel

    def policy_version(self) -> int:
        return int(self.version_counter)

    def send(self, batch: TransitionBatch) -> bool:
        return self.channel.put_transitions(batch)


class GradientSender:
    """Grads mode: act with a private copy of the net, compute the loss gradient on each
    ``batch_size`` transitions, send it, then copy the shared weights again."""

    def __init__(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                 channel: ChildChannel, device: torch.device):
        self.config = config
        self.shared_net = net
        self.version_counter = version_counter
        self.channel = channel
        self.device = device
        self.acting_net = copy.deepcopy(net)
        self.buffer = TransitionBuffer(config.batch_size)
        self._version = 0
        self._pull_weights()

    def _pull_weights(self) -> None:
        self._version = int(self.version_counter)  # read first: the copy is at least this new
        self.acting_net.load_state_dict(self.shared_net.state_dict())

    def policy_version(self) -> int:
        return self._version

    def send(self, batch: TransitionBatch) -> bool:
        self.buffer.add(batch)
        while (transitions := self.buffer.pop_batch()) is not None:
            loss = loss_gradients(self.acting_net, transitions, self.config.loss_settings, self.device)
            sent = self.channel.put_gradient(flat_gradients(self.acting_net), self._version,
                                             len(transitions), loss)
            if not sent:
                return False
            self._pull_weights()
        return True


def env_epsilons(config: Config) -> np.ndarray:
    """The Ape-X epsilon of every env of every child, child 0's envs first."""
    return actor_epsilons(config.processes * config.envs_per_process, config.epsilon_base,
                          config.epsilon_alpha)


def off_policy_acting(config: Config, worker_id: int) -> dict:
    """For ``--algo dqn``: epsilon-greedy on the Q-values, this child's envs taking their
    share of the Ape-X epsilons of all envs, and last states sent for the learner's targets."""
    if config.algo != "dqn":
        return {}
    envs = config.envs_per_process
    mine = env_epsilons(config)[worker_id * envs:(worker_id + 1) * envs]
    mine = torch.as_tensor(mine, dtype=torch.float32)
    return {"choose_actions": partial(epsilon_greedy, epsilons=mine.to(config.device)),
            "send_last_states": True}


def make_vector_actor(config: Config, net: nn.Module, policy_version: Callable[[], int], seed: int,
                      worker_id: int) -> VectorActor:
    """Child ``worker_id``'s envs and acting, on either backend."""
    return VectorActor(config.env_id, config.envs_per_process, config.reward_steps, config.gamma, net,
                       policy_version, seed, config.bf16, config.clip_rewards,
                       **off_policy_acting(config, worker_id))


def collect(config: Config, net: nn.Module, version_counter: torch.Tensor, channel: ChildChannel,
            seed: int) -> None:
    """Act and send the transitions (or their gradients) and finished episodes until told
    to stop or orphaned."""
    parent_pid = os.getppid()
    torch.manual_seed(seed)
    if config.mode == "grads":
        sender = GradientSender(config, net, version_counter, channel, next(net.parameters()).device)
    else:
        sender = TransitionSender(net, version_counter, channel)
    actor = make_vector_actor(config, sender.acting_net, sender.policy_version, seed, channel.worker_id)
    try:
        while not channel.stop_event.is_set() and os.getppid() == parent_pid:
            task = channel.poll_task()
            if task is not None:
                actor.set_task(task)
            step = actor.step()
            if step.batch is not None and not sender.send(step.batch):
                return
            for episode in step.episodes:
                if not channel.put(EpisodeEnded(channel.worker_id, episode)):
                    return
    finally:
        actor.close()
