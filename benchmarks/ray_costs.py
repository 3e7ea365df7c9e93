"""What one Ray actor spends per transition, and what one learner can take: the figures
behind docs/scaling.md's table of how many actor hosts one learner can feed.

An actor steps its envs, infers once per vector step (one thread each, as in the trainer),
and returns blocks through the object store: pickled out of band by Ray, copied into the
store, read by the driver. Once per block it fetches the newest weights when they changed.
Each of these is timed here on its own: the stages with the probe's code, the block and
weight transfers between this driver and an actor of a local Ray (one node: a transfer
between hosts adds the network's time for the same bytes, counted apart in the table).
"""
from __future__ import annotations

import pickle
import time

import numpy as np

from a3c.algos import get_algorithm
from a3c.config import make_config
from a3c.lib.envs import describe_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import build_net
from a3c.transport.ray_actor import Block, block_steps
from benchmarks.probe import (
    env_stage,
    inference_stage,
    one_thread,
    random_observations,
    rate,
    training_stage,
)

ROUNDS = 20


class Receiver:
    """A Ray actor that takes an object from the store and answers with its size."""

    def take(self, value: object) -> int:
        return len(pickle.dumps(value, protocol=5))

    def nothing(self) -> int:
        return 0


def _block(env_id: str, rows: int) -> Block:
    """A block of ``rows`` A3C transitions with the env's observations."""
    info = describe_env(env_id)
    rng = np.random.default_rng(0)
    batch = TransitionBatch(states=random_observations(info, rows), actions=rng.integers(0, info.n_actions, rows),
                            rewards=rng.normal(size=rows).astype(np.float32), dones=np.zeros(rows, bool),
                            steps=np.full(rows, 4), last_values=np.zeros(rows, np.float32),
                            policy_versions=np.zeros(rows, np.int64))
    return Block(batch, [], 0.0, "node")


def _seconds_each(work, rounds: int = ROUNDS) -> float:
    """Median seconds of ``work()`` over ``rounds`` calls after one warm-up call."""
    work()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def measure(env_id: str = "PongNoFrameskip-v4", seconds: float = 3.0) -> dict:
    """The per-transition costs of an actor at the Atari defaults, and the learner's rates."""
    import ray
    import torch

    from a3c.transport.ray_cluster import connect, disconnect

    config = make_config(env=env_id, backend="ray")
    envs, batch = config.envs_per_process, config.batch_size
    rows = block_steps(get_algorithm("a3c"), config) * envs
    with one_thread():
        step, close = env_stage(env_id, envs)
        env_rate = rate(step, envs, seconds)
        close()
        inference_rate = rate(inference_stage(env_id, envs), envs, seconds)
        training_one_thread = rate(training_stage(env_id, batch), batch, seconds)
    training_all_threads = rate(training_stage(env_id, batch), batch, seconds)
    block = _block(env_id, rows)
    pickled = pickle.dumps(block, protocol=5)
    serialize = _seconds_each(lambda: pickle.loads(pickle.dumps(block, protocol=5)))
    net = build_net(describe_env(env_id), config.heads, config.conv)
    weights = {name: tensor.numpy() for name, tensor in net.state_dict().items()}
    started_here = connect(None, 2)
    try:
        receiver = ray.remote(Receiver).options(num_cpus=0).remote()
        empty_call = _seconds_each(lambda: ray.get(receiver.nothing.remote()))
        block_trip = _seconds_each(lambda: ray.get(receiver.take.remote(ray.put(block)))) - empty_call
        weights_trip = _seconds_each(lambda: ray.get(receiver.take.remote(ray.put(weights)))) - empty_call
    finally:
        disconnect(started_here)
    per_transition_ms = {
        "env_step": 1000 / env_rate,
        "inference": 1000 / inference_rate,
        "serialization": 1000 * serialize / rows,
        "object_store": 1000 * max(block_trip, 0.0) / rows,
        "call": 1000 * empty_call / rows,
        "weights": 1000 * max(weights_trip, 0.0) / rows,
    }
    return {
        "env_id": env_id, "envs_per_actor": envs, "block_transitions": rows, "learner_batch": batch,
        "block_bytes": len(pickled), "weight_bytes": sum(array.nbytes for array in weights.values()),
        "per_transition_ms": per_transition_ms,
        "actor_transitions_per_second": 1000 / sum(per_transition_ms.values()),
        "learner_transitions_per_second": {"one_thread": training_one_thread,
                                           f"{torch.get_num_threads()}_threads": training_all_threads},
    }

