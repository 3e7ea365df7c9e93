"""The acting side of the Ray backend: what runs on every node. A rollout actor holds its
own CPU copy of the net and its envs and steps them with the same code as a child process
(``make_vector_actor``); it imports neither the learner nor the trainer."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from a3c.algos.base import net_settings
from a3c.transport.channel import slots_per_child
from a3c.transport.worker import make_vector_actor
from lib.denormals import flush_denormals
from lib.experience import EpisodeResult, TransitionBatch

if TYPE_CHECKING:
    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from lib.envs import EnvInfo


BLOCKS_IN_FLIGHT = 2
"""Calls outstanding per actor: two, so that an actor steps while its last block travels."""


def block_steps(algorithm: Algorithm, config: Config) -> int:
    """Vector steps an actor takes per call: its share of the process backend's queue, split
    over ``BLOCKS_IN_FLIGHT`` blocks, so that the learner trains on transitions no older than
    with processes: larger blocks raise the policy lag (docs/scaling.md)."""
    return max(1, slots_per_child(algorithm, config) // BLOCKS_IN_FLIGHT)


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
    a child process."""

    def __init__(self, worker_id: int, algorithm: Algorithm, config: Config, env_info: EnvInfo, seed: int,
                 board: Any):
        torch.set_num_threads(1)
        flush_denormals()
        torch.manual_seed(seed)
        config = dataclasses.replace(config, cuda=False)  # actors act on their node's CPU
        self.board = board
        self.net = algorithm.build_net(env_info, net_settings(config))
        self.version = -1
        self._pull_weights()
        self.actor = make_vector_actor(algorithm, config, self.net, lambda: self.version, seed, worker_id)
        self.steps = block_steps(algorithm, config)
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

    def ready(self) -> bool:
        """Answers once the actor is built: its envs made, its weights fetched."""
        return True

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
