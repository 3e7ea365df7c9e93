"""Denormal flushing: the slowdown it prevents, every trainer process having it, and the
benchmark that times it."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from torch import nn

from a3c.algos import get_algorithm
from a3c.algos.optimizer import make_adam
from a3c.algos.payloads import Transitions
from a3c.lib.denormals import flush_denormals
from a3c.lib.envs import describe_env
from a3c.lifecycle.run import share_net
from benchmarks.denormals import _dead_unit_state, adam_with_and_without_flushing
from benchmarks.probe import LimitProbe
from benchmarks.report import _denormals_section
from tests.helpers import receive, toy_config, toy_pool
from tests.toy_envs import FloatModeEnv

SMALLEST_NORMAL = float(np.finfo(np.float32).tiny)
PONG = "PongNoFrameskip-v4"


def half_smallest_normal() -> float:
    """0.0 where this thread flushes denormals, 5.9e-39 where it does not."""
    return float(torch.tensor(SMALLEST_NORMAL) * 0.5)


@pytest.fixture
def flushing():
    """Flushing off to begin with (the mode belongs to the thread, and so outlives a test),
    then switched on by the code under test, and off again afterwards."""
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU has no mode that flushes denormals")
    assert half_smallest_normal() > 0.0
    yield
    torch.set_flush_denormal(False)


def first_moments_of_a_dead_unit(steps: int) -> torch.Tensor:
    """Adam's first moment of weights that got one gradient and then only zeros, as the
    weights of a ReLU unit that stopped firing do."""
    layer = nn.Linear(4, 4, bias=False)
    adam = make_adam(layer, lr=1e-3, eps=1e-3)
    layer.weight.grad = torch.full_like(layer.weight, 1e-3)
    adam.step()
    layer.weight.grad = torch.zeros_like(layer.weight)
    for _ in range(steps):
        adam.step()
    return adam.state[layer.weight]["exp_avg"]


def test_adam_leaves_denormal_moments_behind_a_dead_unit_unless_flushed(flushing):
    # 1e-4 * 0.9**800 is 5e-41: below the smallest normal, above the smallest denormal
    unflushed = first_moments_of_a_dead_unit(800)
    assert ((unflushed > 0) & (unflushed < SMALLEST_NORMAL)).all()  # checked before flushing
    assert flush_denormals()
    assert (first_moments_of_a_dead_unit(800) == 0).all()


def test_threads_started_after_flushing_flush_too(flushing):
    assert flush_denormals()
    in_new_thread = []
    thread = threading.Thread(target=lambda: in_new_thread.append(half_smallest_normal()))
    thread.start()
    thread.join()
    assert half_smallest_normal() == 0.0
    assert in_new_thread == [0.0]


def test_the_learner_process_flushes(flushing):
    config = toy_config()
    share_net(config, get_algorithm("a3c"), describe_env(config.env_id))
    assert half_smallest_normal() == 0.0


@pytest.mark.timeout(120)
def test_children_flush_in_the_thread_that_steps_their_envs(flushing):
    pool = toy_pool(toy_config("tests.toy_envs:FloatMode-v0", processes=1))
    pool.start()
    try:
        (message,) = receive(pool, 1)
        while not isinstance(message, Transitions):
            (message,) = receive(pool, 1)
    finally:
        pool.close()
    assert (message.batch.states == 0.0).all()
    # the same env reset here, where flushing is off, gives the denormal
    here, _ = FloatModeEnv().reset()
    assert (here > 0.0).all()


def test_the_probe_times_its_stages_flushing_as_the_trainer_runs_them(flushing):
    LimitProbe("CartPole-v1", child_batch=8, learner_batch=16, seconds=0.05).close()
    assert half_smallest_normal() == 0.0


def test_the_benchmark_kills_whole_units_and_leaves_the_thread_flushing(flushing):
    net, _, start = _dead_unit_state(PONG)
    dead_rows = 0
    for parameter in net.parameters():
        moments = start[parameter]["exp_avg"].reshape(len(parameter), -1)
        denormal = (moments != 0) & (moments.abs() < SMALLEST_NORMAL)
        zero_gradient = parameter.grad.reshape(len(parameter), -1) == 0
        # a unit's weights are all dead or all alive, and dead ones get no gradient
        assert (denormal.all(dim=1) | ~denormal.any(dim=1)).all()
        assert torch.equal(denormal, zero_gradient)
        dead_rows += int(denormal.all(dim=1).sum())
    assert dead_rows > 0
    figures = adam_with_and_without_flushing(PONG, rounds=1, steps=2)
    assert half_smallest_normal() == 0.0
    assert figures["supported"] and figures["parameters"] == sum(p.numel() for p in net.parameters())


def test_the_report_gives_both_step_times_and_their_ratio():
    section = "\n".join(_denormals_section({"supported": True, "parameters": 3_293_863, "dead_share": 0.35,
                                             "unflushed_ms": 22.14, "flushed_ms": 2.46, "slowdown": 9.0}))
    assert "(3,293,863 parameters), with 35% of each layer's units dead" in section
    assert "22.1 ms computing the denormals, 2.5 ms flushing them" in section
    assert "**9.0x**" in section
    assert "no mode" in "\n".join(_denormals_section({"supported": False}))
