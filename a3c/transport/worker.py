"""The child process body: step a vector env with the shared net, send what the algorithm
sends (transitions, or A3C's gradients). Imports the acting side only."""
from __future__ import annotations

import gc
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import cloudpickle
import torch
from torch import nn

from a3c.env_runner import VectorActor
from a3c.lib.allocator import keep_freed_memory
from a3c.lib.denormals import flush_denormals
from a3c.lib.envs import run_frames_per_step
from a3c.lib.episodes import CallbackError
from a3c.lib.experience import TransitionBatch
from a3c.lib.registrations import install_registrations
from a3c.transport.channel import ChildChannel
from a3c.transport.messages import EpisodeEnded, WorkerCall, WorkerCrashed
from a3c.transport.worker_calls import call_in_worker

if TYPE_CHECKING:
    from a3c.algos.base import Algorithm, Outbox, Sender
    from a3c.config import Config


def worker_main(worker_id: int, algorithm: Algorithm, config: Config, net: nn.Module,
                version_counter: torch.Tensor, channel: ChildChannel, seed: int, registered: bytes | None,
                callbacks: bytes | None = None, environment: Mapping[str, str] | None = None) -> None:
    """Entry point of a child; exits non-zero after reporting any exception it dies of.

    Ctrl-C and SIGTERM reach the whole process group; children ignore them and leave when
    the learner sets the stop event, so a half-written queue message never happens on a signal.
    A child whose learner died without setting it (SIGKILL) leaves too, dropping what its
    queue still holds. ``registered`` are the envs and models registered in the learner, ``callbacks``
    the user's callbacks with worker-side hooks; one of those raising ends the run (fatal).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if environment is not None:
        os.environ.clear()
        os.environ.update(environment)
    torch.set_num_threads(1)
    keep_freed_memory()
    flush_denormals()
    try:
        install_registrations(registered)
        collect(algorithm, config, net, version_counter, channel, seed,
                cloudpickle.loads(callbacks) if callbacks else ())
    except CallbackError as error:
        channel.put(WorkerCrashed(worker_id, channel.incarnation, str(error), fatal=True))
        sys.exit(1)
    except Exception:  # noqa: BLE001 - any failure must reach the learner before the child exits
        channel.put(WorkerCrashed(worker_id, channel.incarnation, traceback.format_exc()))
        sys.exit(1)
    finally:
        if channel.orphaned():
            channel.abandon()
    # leaving sooner lets the learner's shutdown join sooner: the collection at interpreter
    # exit skips frozen objects (torch's among them); the queue still flushes as before
    gc.freeze()


class TransitionSender:
    """Act with the shared net, send every micro-batch of transitions as it comes: the
    transport's sender, for every algorithm that sends its transitions as they are."""

    def __init__(self, net: nn.Module, policy_version: Callable[[], int], outbox: Outbox):
        self.acting_net = net
        self.policy_version = policy_version
        self.outbox = outbox

    def send(self, batch: TransitionBatch) -> bool:
        return self.outbox(batch)


def make_sender(algorithm: Algorithm, config: Config, net: nn.Module, policy_version: Callable[[], int],
                outbox: Outbox) -> Sender:
    """The algorithm's sender where it has one, else ``TransitionSender``; on every backend."""
    return algorithm.make_sender(config, net, policy_version, outbox) or TransitionSender(net, policy_version, outbox)


def make_vector_actor(algorithm: Algorithm, config: Config, net: nn.Module,
                      policy_version: Callable[[], int], seed: int, worker_id: int,
                      callbacks: Sequence[Any] = ()) -> VectorActor:
    """Child ``worker_id``'s envs and acting, on either backend."""
    return VectorActor(config.env_recipe, config.envs_per_process, config.reward_steps, config.gamma, net,
                       policy_version, seed, config.bf16, config.clip_rewards, worker_index=worker_id,
                       life_loss=config.life_loss,
                       random_steps=-(-config.random_frames // run_frames_per_step(config)), callbacks=callbacks,
                       **algorithm.acting_options(config, worker_id))


def collect(algorithm: Algorithm, config: Config, net: nn.Module, version_counter: torch.Tensor,
            channel: ChildChannel, seed: int, callbacks: Sequence[Any] = ()) -> None:
    """Act and send the transitions (or what the algorithm makes of them) and finished
    episodes until told to stop or orphaned."""
    torch.manual_seed(seed)
    sender = make_sender(algorithm, config, net, lambda: int(version_counter), channel.put_item)
    actor = make_vector_actor(algorithm, config, sender.acting_net, sender.policy_version, seed,
                              channel.worker_id, callbacks)
    try:
        while not channel.stopped():
            for task in channel.poll_tasks():
                if isinstance(task, WorkerCall):
                    channel.put(call_in_worker(task, channel.worker_id, actor))
                else:
                    actor.set_task(task)
            step = actor.step()
            if step.batch is not None and not sender.send(step.batch):
                return
            for episode in step.episodes:
                if not channel.put(EpisodeEnded(channel.worker_id, episode)):
                    return
    finally:
        actor.close()
