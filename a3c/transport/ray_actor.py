"""The acting side of the Ray backend: what runs on every node. A rollout actor holds its
own CPU copy of the net and its envs and steps them with the same code and the same
algorithm sender as a child process (``make_vector_actor``, ``make_sender``); what the sender
hands over leaves as the columns its algorithm's payload declares. It imports neither the
learner nor the trainer."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cloudpickle
import numpy as np
import torch

from a3c.algos.base import net_settings
from a3c.lib.columns import concatenate_columns
from a3c.lib.denormals import flush_denormals
from a3c.lib.experience import EpisodeResult
from a3c.lib.registrations import install_registrations
from a3c.transport.messages import CallResult, WorkerCall
from a3c.transport.pool import messages_per_worker
from a3c.transport.worker import make_sender, make_vector_actor
from a3c.transport.worker_calls import call_in_worker

if TYPE_CHECKING:
    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo


BLOCKS_IN_FLIGHT = 2
"""Calls outstanding per actor: two, so that an actor steps while its last block travels."""


def block_steps(algorithm: Algorithm, config: Config) -> int:
    """Vector steps an actor takes per call: its share of the process backend's queue, split
    over ``BLOCKS_IN_FLIGHT`` blocks, so that the learner trains on transitions no older than
    with processes: larger blocks raise the policy lag (docs/scaling.md)."""
    return max(1, messages_per_worker(algorithm, config) // BLOCKS_IN_FLIGHT)


@dataclass
class Block:
    """What one call of an actor returns."""

    items: list[tuple[dict[str, np.ndarray], Any]]
    """What the sender handed over, as the payload's columns and meta; items without meta
    (transitions) joined into one."""
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
                 board: Any, registered: bytes | None = None, callbacks: bytes | None = None):
        torch.set_num_threads(1)
        install_registrations(registered)
        flush_denormals()
        torch.manual_seed(seed)
        config = dataclasses.replace(config, cuda=False)  # actors act on their node's CPU
        self.board = board
        self.worker_id = worker_id
        self.net = algorithm.build_net(env_info, net_settings(config))
        self.version = -1
        self._pull_weights()
        self.payload = algorithm.payload(config, env_info, self.net)
        self._items: list[tuple[dict[str, np.ndarray], Any]] = []
        self.sender = make_sender(algorithm, config, self.net, lambda: self.version, self._hand_over)
        self.actor = make_vector_actor(algorithm, config, self.sender.acting_net, self.sender.policy_version, seed,
                                       worker_id, cloudpickle.loads(callbacks) if callbacks else ())
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

    def _hand_over(self, item: Any) -> bool:
        """The sender's outbox: encode and check ``item`` as the payload declares, keep it for the block."""
        self._items.append(self.payload.encode_checked(item))
        return True

    def _block_items(self) -> list[tuple[dict[str, np.ndarray], Any]]:
        """The items of this call, those without meta joined into one set of columns."""
        items, self._items = self._items, []
        plain = [columns for columns, meta in items if meta is None]
        joined = [(concatenate_columns(plain), None)] if plain else []
        return joined + [(columns, meta) for columns, meta in items if meta is not None]

    def ready(self) -> bool:
        """Answers once the actor is built: its envs made, its weights fetched."""
        return True

    def call(self, call: WorkerCall) -> CallResult:
        """``foreach_worker``'s function, with this actor as its worker."""
        return call_in_worker(call, self.worker_id, self.actor)

    def sample(self, task: Any = None) -> Block:
        """``steps`` vector steps with the newest weights; ``task``, if given, for the envs."""
        idle = time.monotonic() - self._idle_since
        self._pull_weights()
        if task is not None:
            self.actor.set_task(task)
        episodes = []
        for _ in range(self.steps):
            step = self.actor.step()
            if step.batch is not None:
                self.sender.send(step.batch)
            episodes += step.episodes
        self._idle_since = time.monotonic()
        return Block(self._block_items(), episodes, idle, self.node_id)
