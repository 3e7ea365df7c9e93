"""The worker pool on a Ray cluster (``--backend ray``): the calls of ``WorkerPool`` (start,
get, restart, set_env_task, close, kill), with the children as Ray actors on any node.

- **Weights.** The learner's net goes into the object store once per version (``ray.put``
  when the pool finds it newer than the last published), and a ``WeightBoard`` actor on the
  driver's node holds the newest reference. At the start of each block an actor asks the
  board which version is newest and fetches the weights only when it holds an older one.
- **Experience.** An actor steps its envs ``block_steps`` times a call and returns the
  transitions and finished episodes as one block of numpy arrays through the object store.
  Each actor has at most ``blocks_in_flight`` calls outstanding: the next is sent only when
  a finished block is taken, so a learner that falls behind holds the actors back, as the
  bounded queues do with processes.
- **Faults.** An actor that dies, alone or with its node, fails its outstanding calls:
  ``get`` raises WorkerDied and ``restart`` puts a new actor in its place on any node with
  a free CPU (actors are spread over the nodes).
"""
from __future__ import annotations

import collections
import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from a3c.config import Config
from a3c.messages import EpisodeEnded, Transitions
from a3c.pool import WorkerDied, child_seed
from a3c.ray_cluster import connect, disconnect
from a3c.run import make_net
from a3c.worker import make_vector_actor
from lib.denormals import flush_denormals
from lib.envs import EnvInfo
from lib.experience import EpisodeResult, TransitionBatch


def block_steps(config: Config) -> int:
    """Vector steps an actor takes per call: enough for one learner batch, so a call's cost
    (about a millisecond) is spread over a batch of transitions."""
    return max(1, math.ceil(config.batch_size / config.envs_per_process))


def blocks_in_flight(config: Config) -> int:
    """Calls outstanding per actor: as many transitions as a child's queue share holds on
    the process backend, and at least two, so an actor steps while its last block travels."""
    queued = config.slots_per_child * config.envs_per_process
    return max(2, math.ceil(queued / (block_steps(config) * config.envs_per_process)))


@dataclass
class Block:
    """What one call of an actor returns."""

    batch: TransitionBatch | None
    episodes: list[EpisodeResult]
    idle_seconds: float
    """Time the actor sat without a call before this one: it waited on the learner."""
    node_id: str


class WeightBoard:
    """The newest published weights: a version and a reference into the object store (kept
    in a list, so that Ray hands it over as a reference rather than fetching it)."""

    def __init__(self) -> None:
        self.version = -1
        self.weights: list = []

    def publish(self, version: int, weights: list) -> None:
        if version > self.version:
            self.version, self.weights = version, weights

    def latest(self) -> tuple[int, list]:
        return self.version, self.weights


class RolloutActor:
    """One child on Ray: its own CPU copy of the net, its envs, and the same acting code as
    a child process (``make_vector_actor``)."""

    def __init__(self, worker_id: int, config: Config, env_info: EnvInfo, seed: int, board: Any):
        torch.set_num_threads(1)
        flush_denormals()
        torch.manual_seed(seed)
        config = dataclasses.replace(config, cuda=False)  # actors act on their node's CPU
        self.board = board
        self.net = make_net(config, env_info)
        self.version = -1
        self._pull_weights()
        self.actor = make_vector_actor(config, self.net, lambda: self.version, seed, worker_id)
        self.steps = block_steps(config)
        self._idle_since = time.monotonic()
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()

    def _pull_weights(self) -> None:
        import ray

        version, weights = ray.get(self.board.latest.remote())
        if version > self.version:
            arrays = ray.get(weights[0])
            self.net.load_state_dict({name: torch.from_numpy(np.array(array)) for name, array in arrays.items()})
            self.version = version

    def sample(self, task: Any = None) -> Block:
        """``steps`` vector steps with the newest weights; ``task``, if given, for the envs."""
        idle = time.monotonic() - self._idle_since
        self._pull_weights()
        if task is not None:
            self.actor.set_task(task)
        batches, episodes = [], []
        for _ in range(self.steps):
            step = self.actor.step()
            if step.batch is not None:
                batches.append(step.batch)
            episodes += step.episodes
        self._idle_since = time.monotonic()
        return Block(TransitionBatch.concatenate(batches) if batches else None, episodes, idle, self.node_id)


class RayWorkerPool:
    """``config.processes`` rollout actors, each needing one CPU, spread over the cluster's
    nodes; the learner on the driver reads their blocks as messages, in the order they
    finish."""

    def __init__(self, config: Config, env_info: EnvInfo, net: nn.Module, version_counter: torch.Tensor,
                 base_seed: int):
        self._config = config
        self._env_info = env_info
        self._net = net
        self._version_counter = version_counter
        self._base_seed = base_seed
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
        self._started_here = False
        self._closed = False

    def start(self) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._started_here = connect(self._config.ray_address, max(os.cpu_count() or 1, self._config.processes))
        here = ray.get_runtime_context().get_node_id()
        self._board = ray.remote(WeightBoard).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()
        self._actor_class = ray.remote(RolloutActor)
        self._publish(force=True)
        for worker_id in range(len(self._actors)):
            self._start(worker_id)

    def _start(self, worker_id: int, avoid: str | None = None) -> None:
        seed = child_seed(self._base_seed, worker_id, self._incarnations[worker_id])
        self._actors[worker_id] = self._actor_class.options(
            num_cpus=1, max_restarts=0, scheduling_strategy=self._placement(worker_id, avoid),
        ).remote(worker_id, self._config, self._env_info, seed, self._board)
        self._nodes[worker_id] = None
        self._task_due[worker_id] = self._env_task
        for _ in range(blocks_in_flight(self._config)):
            self._call(worker_id)

    def _call(self, worker_id: int) -> None:
        task, self._task_due[worker_id] = self._task_due[worker_id], None
        self._calls[self._actors[worker_id].sample.remote(task)] = worker_id

    def _publish(self, force: bool = False) -> None:
        """Put the learner's weights into the object store if they are newer than the last
        published: every version, since an actor acting on older weights than a process
        child would (which reads the learner's own) made CartPole collapse and relearn."""
        import ray

        version = int(self._version_counter)
        if not force and version <= self._published:
            return
        arrays = {name: tensor.detach().cpu().numpy() for name, tensor in self._net.state_dict().items()}
        self._board.publish.remote(version, [ray.put(arrays)])
        self._published = version

    def get(self, timeout: float = 1.0) -> Any | None:
        """The next message (Transitions or EpisodeEnded), or None after ``timeout`` seconds
        without one; WorkerDied when an actor's call failed (the actor, or its node, is gone)."""
        import ray

        if self._ready:
            return self._ready.popleft()
        self._publish()
        done, _ = ray.wait(list(self._calls), num_returns=1, timeout=timeout)
        if not done:
            return None
        worker_id = self._calls.pop(done[0])
        try:
            block = ray.get(done[0])
        except ray.exceptions.RayError as exc:
            raise WorkerDied(worker_id, None, str(exc)) from exc
        self._call(worker_id)
        self._nodes[worker_id] = block.node_id
        self._idle_seconds += block.idle_seconds
        if block.batch is not None:  # copied out of the object store, which it would keep pinned
            self._ready.append(Transitions(worker_id, block.batch.copy()))
        self._ready.extend(EpisodeEnded(worker_id, episode) for episode in block.episodes)
        return self._ready.popleft() if self._ready else None

    def restart(self, worker_id: int) -> None:
        """A new actor in a dead one's place (next seed of its stream), on another node if
        there is one; the dead one's calls are dropped."""
        import ray

        ray.kill(self._actors[worker_id], no_restart=True)
        self._calls = {call: owner for call, owner in self._calls.items() if owner != worker_id}
        self._incarnations[worker_id] += 1
        self._start(worker_id, avoid=self._nodes[worker_id])

    @staticmethod
    def _placement(worker_id: int, avoid: str | None) -> Any:
        """Actors spread over the nodes; a replacement goes to a node other than ``avoid``
        (where its predecessor died, and which Ray may take half a minute to declare dead),
        preferred, not required, so that a one-node cluster still takes it."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        others = sorted(node["NodeID"] for node in ray.nodes() if node["Alive"] and node["NodeID"] != avoid
                        and node["Resources"].get("CPU", 0) >= 1)
        if avoid is None or not others:
            return "SPREAD"
        return NodeAffinitySchedulingStrategy(others[worker_id % len(others)], soft=True)

    def set_env_task(self, task: Any) -> None:
        """Every actor hands ``task`` to its envs with its next call; new actors get it too."""
        self._env_task = task
        self._task_due = [task] * len(self._actors)

    def child_wait_seconds(self) -> float:
        """Seconds the actors together sat idle waiting for the learner to take a block."""
        return self._idle_seconds

    def queued(self) -> int:
        return len(self._ready)

    def node_ids(self) -> list[str | None]:
        """The node each actor's last block came from (None before its first)."""
        return list(self._nodes)

    def kill(self) -> None:
        self.close()

    def close(self) -> None:
        """Kill every actor and the board; a Ray started for this run stops with them.
        Calling it again does nothing."""
        import ray

        if self._closed:
            return
        self._closed = True
        self._calls.clear()
        for actor in [*self._actors, self._board]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        disconnect(self._started_here)
