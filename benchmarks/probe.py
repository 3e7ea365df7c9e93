"""Probe the machine's limit: what one core does per second at each stage of the pipeline.

A transition is stepped once (env), inferred once (the child's forward pass, which also
gives its bootstrap value) and trained once (the learner's forward, backward, clip and
Adam at its batch size). With the three costs in core-seconds, a pipeline that keeps
every core busy on exactly that work trains at most ``cores / (sum of costs)``
transitions per second: the bound the trainer is measured against.
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from a3c.learner import Learner
from lib.envs import describe_env, make_vector_env
from lib.experience import TransitionBatch
from lib.models import build_net, evaluate


def _rate(work, items_per_call: int, seconds: float) -> float:
    """Items per second of ``work()`` over about ``seconds``, after one warm-up call."""
    work()
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        work()
        calls += 1
    return calls * items_per_call / (time.perf_counter() - started)


def env_steps_per_second(env_id: str, num_envs: int, seconds: float) -> float:
    envs = make_vector_env(env_id, num_envs)
    envs.reset(seed=0)
    try:
        return _rate(lambda: envs.step(envs.action_space.sample()), num_envs, seconds)
    finally:
        envs.close()


def inference_samples_per_second(env_id: str, batch: int, seconds: float) -> float:
    env_info = describe_env(env_id)
    net = build_net(env_info)
    observations = torch.as_tensor(_random_observations(env_info, batch))
    return _rate(lambda: evaluate(net, observations), batch, seconds)


def training_samples_per_second(env_id: str, batch: int, seconds: float) -> float:
    env_info = describe_env(env_id)
    learner = Learner(build_net(env_info), lr=1e-4, adam_eps=1e-3, gamma=0.99, entropy_beta=0.01,
                      clip_grad=0.1, device="cpu")
    rng = np.random.default_rng(0)
    transitions = TransitionBatch(
        states=_random_observations(env_info, batch),
        actions=rng.integers(0, env_info.n_actions, batch), rewards=rng.normal(size=batch).astype(np.float32),
        dones=np.zeros(batch, bool), steps=np.full(batch, 4), last_values=np.zeros(batch, np.float32),
    )
    return _rate(lambda: learner.step(transitions), batch, seconds)


def _random_observations(env_info, batch: int) -> np.ndarray:
    shape = (batch, *env_info.observation_shape)
    if env_info.observation_dtype == "uint8":
        return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    return np.random.default_rng(0).normal(size=shape).astype(env_info.observation_dtype)


def probe_limits(env_id: str, child_batch: int, learner_batch: int, seconds: float = 5.0) -> dict:
    """Per-core rates of the three stages (one thread each) and the bound they imply."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env_rate = env_steps_per_second(env_id, child_batch, seconds)
        inference_rate = inference_samples_per_second(env_id, child_batch, seconds)
        training_rate = training_samples_per_second(env_id, learner_batch, seconds)
    finally:
        torch.set_num_threads(threads)
    cores = os.cpu_count() or 1
    core_seconds = 1 / env_rate + 1 / inference_rate + 1 / training_rate
    return {
        "cores": cores,
        "env_steps_per_second_per_core": env_rate,
        "inference_samples_per_second_per_core": inference_rate,
        "inference_batch": child_batch,
        "training_samples_per_second_per_core": training_rate,
        "training_batch": learner_batch,
        "core_ms_per_transition": core_seconds * 1e3,
        "bound_transitions_per_second": cores / core_seconds,
    }
