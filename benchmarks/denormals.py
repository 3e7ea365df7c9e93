"""What flushing denormals saves: the learner's Adam step on the Pong net, with and without.

The optimizer state is set up as a Pong run's was after ~800 steps (``a3c.lib.denormals``):
the weights and bias of a share of each layer's units (those that stopped firing) with
zero gradients and denormal first moments, the rest ordinary. Both modes step the same
state in the same process, one after the other, a few times over.
"""
from __future__ import annotations

import statistics
import time

import torch

from a3c.algos.a3c.settings import ATARI_PRESET
from a3c.algos.optimizer import make_adam
from a3c.lib.denormals import flush_denormals
from a3c.lib.envs import describe_env
from a3c.lib.models import build_net

DEAD_SHARE = 0.35
"""Share of each layer's units left dead: the Pong checkpoints at 150 and 200 s had 1.2-1.3
million of 3.3 million first moments denormal."""
DENORMAL_MOMENT = 1e-39
"""Stays denormal for the ~20 steps timed here (0.9 ** 20 * 1e-39 is still 1.2e-40)."""


def _dead_unit_state(env_id: str, seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer, dict]:
    """The net, its Adam after one ordinary step, and a copy of a state with dead units in it."""
    generator = torch.Generator().manual_seed(seed)
    net = build_net(describe_env(env_id), ATARI_PRESET.heads, ATARI_PRESET.conv)
    adam = make_adam(net, lr=1e-4, eps=1e-3)
    for parameter in net.parameters():
        parameter.grad = torch.randn(parameter.shape, generator=generator) * 1e-3
    adam.step()
    for parameter in net.parameters():  # a dead unit's weights and bias: one row a layer
        dead_units = torch.rand(parameter.shape[0], generator=generator) < DEAD_SHARE
        dead = dead_units.view(-1, *[1] * (parameter.dim() - 1)).expand_as(parameter)
        adam.state[parameter]["exp_avg"][dead] = DENORMAL_MOMENT
        parameter.grad[dead] = 0.0
    return net, adam, {parameter: {name: value.clone() for name, value in state.items()}
                       for parameter, state in adam.state.items()}


def _median_step_ms(adam: torch.optim.Optimizer, start: dict, steps: int) -> float:
    """Median ms of ``steps`` Adam steps taken from a fresh copy of ``start``."""
    for parameter, state in start.items():
        for name, value in state.items():
            adam.state[parameter][name].copy_(value)
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        adam.step()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def adam_with_and_without_flushing(env_id: str, rounds: int = 3, steps: int = 20) -> dict:
    """Median Adam step time with denormals computed and with them flushed, on one thread;
    leaves this thread flushing, as every process of the trainer and the benchmark does."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.set_flush_denormal(False)  # a flushing thread would write the denormals as zeros
        net, adam, start = _dead_unit_state(env_id)
        unflushed, flushed = [], []
        for _ in range(rounds):
            torch.set_flush_denormal(False)
            unflushed.append(_median_step_ms(adam, start, steps))
            if not flush_denormals():
                return {"supported": False}
            flushed.append(_median_step_ms(adam, start, steps))
    finally:
        flush_denormals()
        torch.set_num_threads(threads)
    parameters = sum(parameter.numel() for parameter in net.parameters())
    return {"supported": True, "parameters": parameters, "dead_share": DEAD_SHARE,
            "unflushed_ms": statistics.median(unflushed), "flushed_ms": statistics.median(flushed),
            "slowdown": statistics.median(unflushed) / statistics.median(flushed)}
