"""The Ray backend of the worker pool (``--backend ray``): the calls of ``WorkerPool``, with
the children as Ray actors (``a3c.transport.ray_actor``) on any node; this side runs on the driver.

- **Weights.** The learner's net goes into the object store once per version (``ray.put``
  when the pool finds it newer than the last published), and a ``WeightBoard`` actor on the
  driver's node holds the newest reference. At the start of each block an actor asks the
  board which version is newest and fetches the weights only when it holds an older one.
- **Experience.** An actor steps its envs ``block_steps`` times a call and returns the
  transitions and finished episodes as one block of numpy arrays through the object store.
  Each actor has at most ``BLOCKS_IN_FLIGHT`` calls outstanding: the next is sent only when
  a finished block is taken, so a learner that falls behind holds the actors back, as the
  bounded queues do with processes.
- **Faults.** An actor that dies, alone or with its node, fails its outstanding calls:
  ``get`` raises WorkerDied and ``restart`` puts a new actor in its place on any node with
  a free CPU (actors are spread over the nodes). An actor that sends nothing for
  ``--worker-timeout`` seconds (no block of its done and unread) is taken for stuck and
  replaced the same way; one that
  cannot start (no free CPU) is named within seconds.
- **Before any actor.** Every node must run this driver's code; the learner's CPUs on the
  driver's node are held by a seat actor; the actors need as many CPUs as there are
  (``--ray-actor-resource``: on the nodes that carry that custom resource only).
"""
from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import cloudpickle
import numpy as np
import torch

from a3c.options import ConfigError
from a3c.transport.messages import CallResult, EpisodeEnded, WorkerCall
from a3c.transport.pool import WorkerDied, WorkerInfo, WorkerPool, child_seed
from a3c.transport.ray_actor import BLOCKS_IN_FLIGHT, RolloutActor, WeightBoard
from a3c.transport.ray_cluster import (
    actor_cpus,
    check_same_code,
    connect,
    disconnect,
    hold_learner_cpus,
)

if TYPE_CHECKING:
    from torch import nn

    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.lib.columns import Payload
    from a3c.lib.envs import EnvInfo

CLOSE_SECONDS = 5.0
PENDING_SECONDS = 10.0
"""An actor not built after this long is named, with the cluster's free CPUs."""


class RayWorkerPool(WorkerPool):
    """``config.processes`` rollout actors, each needing one CPU, spread over the cluster's
    nodes; the learner on the driver reads their blocks as messages, in the order they
    finish."""

    def __init__(self, algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
                 version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()):
        super().__init__(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
        self._payload = algorithm.payload(config, env_info, net)
        self._actors: list[Any] = [None] * config.processes
        self._nodes: list[str | None] = [None] * config.processes
        """The node each actor's last block came from."""
        self._incarnations = [0] * config.processes
        self._task_due: list[Any] = [None] * config.processes
        self._env_task: Any = None
        self._calls: dict[Any, int] = {}
        """Outstanding calls (object references) and their actors, oldest first."""
        self._ready: collections.deque = collections.deque()
        self._idle_seconds = 0.0
        self._published = -1
        self._board: Any = None
        self._seat: Any = None
        self._building: dict[Any, int] = {}
        """``ready`` calls of actors not yet built, and their actors."""
        self._started_at = [0.0] * config.processes
        self._last_block_at: list[float | None] = [None] * config.processes
        """When each actor was built or last sent a block (None while it is being built)."""
        self._named_pending: set[int] = set()
        self._started_here = False
        self._closed = False

    @classmethod
    def check_payload(cls, algorithm: Algorithm, config: Config, payload: Payload) -> None:
        """Actors send blocks of several vector steps: a payload whose messages may not wait
        for one another cannot travel here."""
        if not payload.may_wait:
            raise ConfigError(f"--backend ray sends each actor's messages in blocks of several vector steps, "
                              f"and --algo {config.algo}'s must each reach the learner as it is made "
                              f"({algorithm.describe(config)}): use --backend mp or serial")

    def start(self) -> None:
        """Join or start Ray, check the cluster, hold the learner's CPUs, start the actors;
        ConfigError (before any actor) for another node's code or too few CPUs."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        config = self.config
        cpus = max(os.cpu_count() or 1, config.processes + config.learner_threads)
        self._started_here = connect(config.ray_address, cpus)
        try:
            if config.ray_address is not None:
                check_same_code()
            self._seat = hold_learner_cpus(config.learner_threads)
            held = config.learner_threads if self._seat is not None else 0
            available = actor_cpus(config.ray_actor_resource, held)
            if config.processes > available:
                where = (f"the nodes with the resource {config.ray_actor_resource!r} have"
                         if config.ray_actor_resource else "the cluster has")
                raise ConfigError(f"--processes {config.processes} needs {config.processes} CPUs for actors "
                                  f"and {where} {available:g} besides the learner's {held}")
        except BaseException:
            self._shut_down(wait_seconds=0.0)
            raise
        here = ray.get_runtime_context().get_node_id()
        self._board = ray.remote(WeightBoard).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()
        self._actor_class = ray.remote(RolloutActor)
        self._publish(force=True)
        for worker_id in range(len(self._actors)):
            self._start(worker_id)

    def _start(self, worker_id: int, avoid: str | None = None) -> None:
        seed = child_seed(self.base_seed, worker_id, self._incarnations[worker_id])
        resources = {} if self.config.ray_actor_resource is None else {self.config.ray_actor_resource: 0.001}
        actor = self._actor_class.options(
            num_cpus=1, resources=resources, max_restarts=0,
            scheduling_strategy=self._placement(worker_id, avoid),
        ).remote(worker_id, self.algorithm, self.config, self.env_info, seed, self._board, self.registered,
                 self.callbacks)
        self._actors[worker_id] = actor
        self._building[actor.ready.remote()] = worker_id
        self._started_at[worker_id], self._last_block_at[worker_id] = time.monotonic(), None
        self._named_pending.discard(worker_id)
        self._nodes[worker_id] = None
        self._task_due[worker_id] = self._env_task
        for _ in range(BLOCKS_IN_FLIGHT):
            self._call(worker_id)

    def _watch(self) -> None:
        """Note the actors built since the last look; name one still not built after
        ``PENDING_SECONDS`` (once); WorkerDied for a built one that sent no block for
        ``--worker-timeout`` seconds."""
        import ray

        now = time.monotonic()
        if self._building:
            built, _ = ray.wait(list(self._building), num_returns=len(self._building), timeout=0)
            for call in built:
                self._last_block_at[self._building.pop(call)] = now
        for worker_id in set(self._building.values()) - self._named_pending:
            if now - self._started_at[worker_id] > PENDING_SECONDS:
                self._named_pending.add(worker_id)
                free = ray.available_resources().get("CPU", 0)
                print(f"worker {worker_id}'s actor has waited {PENDING_SECONDS:g} s to start: the cluster "
                      f"has {free:g} free CPU(s) and each actor needs 1", file=sys.stderr, flush=True)
        timeout = self.config.worker_timeout
        for worker_id, last in enumerate(self._last_block_at):
            if last is not None and now - last > timeout and not self._block_waiting(worker_id):
                raise WorkerDied(worker_id, None, cause=(
                    f"worker {worker_id}'s actor sent nothing for {now - last:.0f} s (--worker-timeout {timeout:g}): "
                    "taken for stuck and killed"))

    def _block_waiting(self, worker_id: int) -> bool:
        """Whether a block of the actor's is done and not yet read: the learner was away,
        the actor was not."""
        import ray

        calls = [call for call, owner in self._calls.items() if owner == worker_id]
        ready, _ = ray.wait(calls, num_returns=len(calls), timeout=0) if calls else ([], [])
        return bool(ready)

    def message_ages(self) -> list[float]:
        """Seconds since each built actor's last block (0 while it is being built)."""
        now = time.monotonic()
        return [0.0 if last is None else now - last for last in self._last_block_at]

    def _call(self, worker_id: int) -> None:
        task, self._task_due[worker_id] = self._task_due[worker_id], None
        self._calls[self._actors[worker_id].sample.remote(task)] = worker_id

    def _publish(self, force: bool = False) -> None:
        """Put the learner's weights into the object store if they are newer than the last
        published: every version, since an actor acting on older weights than a process
        child would (which reads the learner's own) made CartPole collapse and relearn."""
        import ray

        version = int(self.version_counter)
        if not force and version <= self._published:
            return
        arrays = {name: tensor.detach().cpu().numpy() for name, tensor in self.net.state_dict().items()}
        self._board.publish.remote(version, [ray.put(arrays)])
        self._published = version

    def get(self, timeout: float = 1.0) -> Any | None:
        """The next message (what the payload decodes, or EpisodeEnded), or None after ``timeout`` seconds
        without one; WorkerDied when an actor's call failed (the actor, or its node, is gone)."""
        import ray

        if self._ready:
            return self._ready.popleft()
        self._publish()
        self._watch()
        done, _ = ray.wait(list(self._calls), num_returns=1, timeout=timeout)
        if not done:
            return None
        worker_id = self._calls.pop(done[0])
        try:
            block = ray.get(done[0])
        except ray.exceptions.RayError as exc:
            raise WorkerDied(worker_id, None, str(exc), fatal="CallbackError" in str(exc)) from exc
        self._call(worker_id)
        self._last_block_at[worker_id] = time.monotonic()
        self._nodes[worker_id] = block.node_id
        self._idle_seconds += block.idle_seconds
        for columns, meta in block.items:  # copied out of the object store, which it would keep pinned
            self._ready.append(self._payload.decode(worker_id, {name: np.array(array) for name, array in columns.items()},
                                                    meta))
        self._ready.extend(EpisodeEnded(worker_id, episode) for episode in block.episodes)
        return self._ready.popleft() if self._ready else None

    def restart(self, worker_id: int) -> None:
        """A new actor in a dead one's place (next seed of its stream), on another node if
        there is one; the dead one's calls are dropped."""
        import ray

        ray.kill(self._actors[worker_id], no_restart=True)
        self._calls = {call: owner for call, owner in self._calls.items() if owner != worker_id}
        self._building = {call: owner for call, owner in self._building.items() if owner != worker_id}
        self._incarnations[worker_id] += 1
        self._start(worker_id, avoid=self._nodes[worker_id])

    @staticmethod
    def _placement(worker_id: int, avoid: str | None) -> Any:
        """Actors spread over the nodes; a replacement goes to a node other than ``avoid``
        (where its predecessor died, and which Ray may take half a minute to declare dead),
        preferred, not required: it spills to any node with a free CPU when that one has
        none (plain soft affinity would wait for that node's CPU for good), and a one-node
        cluster still takes it."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        others = sorted(node["NodeID"] for node in ray.nodes() if node["Alive"] and node["NodeID"] != avoid
                        and node["Resources"].get("CPU", 0) >= 1)
        if avoid is None or not others:
            return "SPREAD"
        return NodeAffinitySchedulingStrategy(others[worker_id % len(others)], soft=True,
                                              _spill_on_unavailable=True)

    def call_workers(self, function: Callable[[Any], Any], timeout: float) -> list[CallResult]:
        """Each actor's answer, after the blocks it was already asked for (an actor takes its
        calls in order); those blocks wait for the learner as before."""
        import ray

        packed = cloudpickle.dumps(function)
        calls = [actor.call.remote(WorkerCall(0, packed)) for actor in self._actors if actor is not None]
        try:
            return ray.get(calls, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise TimeoutError(f"foreach_worker: the actors did not answer in {timeout:g} s") from None

    def set_env_task(self, task: Any) -> None:
        """Every actor hands ``task`` to its envs with its next call; new actors get it too."""
        self._env_task = task
        self._task_due = [task] * len(self._actors)

    def child_wait_seconds(self) -> float:
        """Seconds the actors together sat idle waiting for the learner to take a block."""
        return self._idle_seconds

    def queued(self) -> int:
        return len(self._ready)

    def workers(self) -> list[WorkerInfo]:
        """Each actor's node: the one its last block came from (None before its first)."""
        return [WorkerInfo(worker_id, None, node, None) for worker_id, node in enumerate(self._nodes)]

    def kill(self) -> None:
        """Kill every actor and the board at once; a Ray started for this run stops with them."""
        self._shut_down(wait_seconds=0.0)

    def close(self) -> None:
        """Let the calls in flight finish (a few seconds at most), then kill every actor and
        the board; a Ray started for this run stops with them. Calling it again does nothing."""
        self._shut_down(wait_seconds=CLOSE_SECONDS)

    def _shut_down(self, wait_seconds: float) -> None:
        import ray

        if self._closed:
            return
        self._closed = True
        if wait_seconds > 0 and self._calls:
            ray.wait(list(self._calls), num_returns=len(self._calls), timeout=wait_seconds)
        self._calls.clear()
        for actor in [*self._actors, self._board, self._seat]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        disconnect(self._started_here)
