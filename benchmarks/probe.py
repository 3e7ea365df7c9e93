"""Probe the machine's limit: what one core does per second at each stage of the pipeline.

A transition is stepped once (env), inferred once (the child's forward pass, which also
gives its bootstrap value) and trained once (the learner's forward, backward, clip and
Adam at its batch size). With the three costs in core-seconds, a pipeline that keeps
every core busy on exactly that work trains at most ``cores / (sum of costs)``
transitions per second: the bound the trainer is measured against. The costs are those of
a core while every core runs the same stage, as every core is busy in such a pipeline;
the costs of one core with the others idle are kept beside them.

That bound lets any core do any stage. The trainer's processes cannot share work that way:
a child steps and infers on its core, the learner trains on its own, and the slower side
sets the pace. ``layout_cap`` gives that pace at the probed rates, so that a run below the
bound shows how much of the gap is the stages' imbalance on this machine at that hour and
how much the trainer's own.

Each stage is timed in several short rounds, interleaved with the others, and its median
round is kept: on a shared VM one stage's 2-second readings can move by a quarter within
half a minute, and the trainer's window sees the machine's typical
speed, not its best burst or worst dip. The benchmark takes one round at each boundary of
the trainer's window segments, with the trainer paused, for the same reason
(``benchmarks.window``).
"""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import numpy as np
import torch

from a3c.algos.a3c.learner import Learner
from a3c.algos.a3c.loss import LossSettings
from a3c.algos.a3c.settings import ATARI_PRESET
from a3c.lib.allocator import keep_freed_memory
from a3c.lib.denormals import flush_denormals
from a3c.lib.envs import describe_env, make_vector_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import build_net, evaluate
from a3c.transport.process_pool import child_context
from benchmarks.affinity import CAN_PIN, available_cores, pin_process, pinned_to_one_core


def rate(work, items_per_call: int, seconds: float) -> float:
    """Items per second of ``work()`` over about ``seconds``, after one warm-up call."""
    work()
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        work()
        calls += 1
    return calls * items_per_call / (time.perf_counter() - started)


def env_stage(env_id: str, num_envs: int) -> tuple[Callable[[], object], Callable[[], None]]:
    """One vector step of the children's envs, and how to close them."""
    envs = make_vector_env(env_id, num_envs)
    envs.reset(seed=0)
    return lambda: envs.step(envs.action_space.sample()), envs.close


def inference_stage(env_id: str, batch: int, bf16: bool = False,
                    conv: str = ATARI_PRESET.conv) -> Callable[[], object]:
    """One acting forward pass at the children's batch size."""
    env_info = describe_env(env_id)
    net = build_net(env_info, ATARI_PRESET.heads, conv)
    observations = torch.as_tensor(random_observations(env_info, batch))
    return lambda: evaluate(net, observations, bf16)


def training_stage(env_id: str, batch: int, bf16: bool = False,
                   conv: str = ATARI_PRESET.conv) -> Callable[[], object]:
    """One learner step (forward, loss, backward, clip, Adam) at the learner's batch size."""
    env_info = describe_env(env_id)
    learner = Learner(build_net(env_info, ATARI_PRESET.heads, conv), LossSettings(gamma=0.99, entropy_beta=0.01, bf16=bf16),
                      lr=1e-4, adam_eps=1e-3, clip_grad=0.1, device="cpu")
    rng = np.random.default_rng(0)
    transitions = TransitionBatch(
        states=random_observations(env_info, batch),
        actions=rng.integers(0, env_info.n_actions, batch), rewards=rng.normal(size=batch).astype(np.float32),
        dones=np.zeros(batch, bool), steps=np.full(batch, 4), last_values=np.zeros(batch, np.float32),
    )
    return lambda: learner.step(transitions)


def random_observations(env_info, batch: int) -> np.ndarray:
    shape = (batch, *env_info.observation_shape)
    if env_info.observation_dtype == "uint8":
        return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    return np.random.default_rng(0).normal(size=shape).astype(env_info.observation_dtype)


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread inside, as each stage runs in the trainer; the caller's count after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _bound(env_rate: float, inference_rate: float, training_rate: float) -> tuple[float, float]:
    """Core-seconds a transition costs at these per-core rates, and the transitions/s that
    every core working on nothing else gives."""
    core_seconds = 1 / env_rate + 1 / inference_rate + 1 / training_rate
    return core_seconds, (os.cpu_count() or 1) / core_seconds


def _built_stages(env_id: str, child_batch: int, learner_batch: int, bf16: bool,
                  conv: str) -> tuple[list[tuple[Callable[[], object], int]], Callable[[], None]]:
    """The three stages as (work, items per call), in the pipeline's order, and how to close
    them; built on one thread, as each runs in the trainer."""
    # every process that times the stages runs them with the trainer's memory and float modes
    keep_freed_memory()
    flush_denormals()
    with one_thread():
        env_step, close_envs = env_stage(env_id, child_batch)
        stages = [(env_step, child_batch), (inference_stage(env_id, child_batch, bf16, conv), child_batch),
                  (training_stage(env_id, learner_batch, bf16, conv), learner_batch)]
    return stages, close_envs


def _companion_main(settings: tuple[str, int, int, bool, str], seconds: float, core: int | None,
                    requests: Connection) -> None:
    """A process on another core that times the stage it is asked for and sends the rate
    back, until it gets None or its parent goes."""
    torch.set_num_threads(1)
    stages, close_envs = _built_stages(*settings)
    if core is not None:
        pin_process({core})
    requests.send("ready")
    try:
        while (stage := requests.recv()) is not None:
            work, items = stages[stage]
            requests.send(rate(work, items, seconds))
    except EOFError:
        pass
    finally:
        close_envs()


class LimitProbe:
    """The three stages, kept built so that rounds can be taken all through the window the
    bound is compared with: the bound then reflects the machine's speed during that window,
    not only before it (its speed drifted by 15-25% within minutes).

    Each stage is timed twice a round: on one core with the others idle, and on every core
    at once (one companion process per other core runs the same stage), the per-core rate
    then being the mean over the cores. The bound uses the second: a core can run a stage
    slower while the others work, and the pipeline keeps every core busy, so rates taken
    with the other cores idle overstate what the cores do together.
    ``bf16`` probes inference and training under bfloat16 autocast, as ``--bf16`` runs them."""

    def __init__(self, env_id: str, child_batch: int, learner_batch: int, seconds: float = 2.0,
                 bf16: bool = False, conv: str = ATARI_PRESET.conv):
        self.child_batch, self.learner_batch, self.seconds = child_batch, learner_batch, seconds
        self.bf16, self.conv = bf16, conv
        self._stages, self._close_envs = _built_stages(env_id, child_batch, learner_batch, bf16, conv)
        self.readings: list[list[float]] = [[] for _ in self._stages]
        """Per stage, each round's rate on one core with the others idle."""
        self.all_core_readings: list[list[float]] = [[] for _ in self._stages]
        """Per stage, each round's mean per-core rate with every core running it."""
        self.pinned_core: int | None = None
        """The core the rounds ran on; None where the OS cannot pin."""
        self._companions = self._start_companions((env_id, child_batch, learner_batch, bf16, conv))

    def _start_companions(self, settings: tuple[str, int, int, bool, str]) -> list[tuple[BaseProcess, Connection]]:
        """One companion per core other than the one ``measure`` pins this process to, started
        as the trainer's children are (``child_context``)."""
        context = child_context(shared_tensors=0, cuda=False)
        companions = []
        for core in available_cores()[:-1]:
            ours, theirs = context.Pipe()
            process = context.Process(target=_companion_main, daemon=True,
                                      args=(settings, self.seconds, core if CAN_PIN else None, theirs))
            process.start()
            theirs.close()
            companions.append((process, ours))
        for _, requests in companions:
            if requests.recv() != "ready":
                raise RuntimeError("a probe companion did not start")
        return companions

    def measure(self, rounds: int) -> None:
        """``rounds`` more interleaved rounds of every stage, one thread each, and the whole
        process on one core: the env's stepping thread shares it with the code that waits
        for its frames, as the scheduler keeps them in the trainer's busy children
        (``benchmarks.affinity``)."""
        with one_thread(), pinned_to_one_core() as core:
            self.pinned_core = core
            for _ in range(rounds):
                for stage, (work, items) in enumerate(self._stages):
                    self.readings[stage].append(rate(work, items, self.seconds))
                    for _, requests in self._companions:
                        requests.send(stage)
                    mine = rate(work, items, self.seconds)
                    theirs = [requests.recv() for _, requests in self._companions]
                    self.all_core_readings[stage].append(statistics.fmean([mine, *theirs]))

    def close(self) -> None:
        for process, requests in self._companions:
            requests.send(None)
            process.join(timeout=10.0)
            if process.is_alive():
                process.kill()
                process.join()
        self._close_envs()

    def limits(self) -> dict:
        """Per-core rates of the stages with every core busy (median of all rounds so far)
        and the bound they imply, each round's own bound in the order taken (how far the
        machine's speed moved); under "one_core", the same rates with the other cores idle."""
        all_core = _stage_limits(self.all_core_readings)
        return {
            **all_core,
            "round_bounds": round_bounds(all_core),
            "cores": os.cpu_count() or 1,
            "inference_batch": self.child_batch,
            "training_batch": self.learner_batch,
            "bf16": self.bf16,
            "conv": self.conv,
            "pinned_core": self.pinned_core,
            "rounds": len(self.readings[0]),
            "seconds_per_round": self.seconds,
            "one_core": _stage_limits(self.readings),
        }


def _stage_limits(readings: list[list[float]]) -> dict:
    """The median of each stage's readings, the cost of a transition and the bound."""
    env_rate, inference_rate, training_rate = (float(np.median(rates)) for rates in readings)
    core_seconds, bound = _bound(env_rate, inference_rate, training_rate)
    return {
        "env_steps_per_second_per_core": env_rate,
        "inference_samples_per_second_per_core": inference_rate,
        "training_samples_per_second_per_core": training_rate,
        "stage_readings": readings,
        "core_ms_per_transition": core_seconds * 1e3,
        "bound_transitions_per_second": bound,
    }


def round_bounds(limits: dict) -> list[float]:
    """The bound each round's three readings imply on their own, in the order taken."""
    return [_bound(*readings)[1] for readings in zip(*limits["stage_readings"])]


def _acting_rate_per_core(limits: dict) -> float:
    """Transitions/s one child makes on one core: an env step and an inference each."""
    return 1 / (1 / limits["env_steps_per_second_per_core"]
                + 1 / limits["inference_samples_per_second_per_core"])


def _training_rate(limits: dict, learner_threads: int) -> float:
    """Samples/s a learner on ``learner_threads`` threads trains, taken to scale with them."""
    return learner_threads * limits["training_samples_per_second_per_core"]


def layout_cap(limits: dict, children: int, learner_threads: int, cores: int | None = None) -> float:
    """Most trained transitions/s that ``children`` one-core children and a learner on
    ``learner_threads`` threads reach at the probed per-core rates: the slower side's rate.
    The learner's rate is taken to scale with its threads, so with more than one it is an
    upper bound. Where the processes outnumber the ``cores`` (this machine's by default)
    they share them, any core doing any stage, and the cap is the bound."""
    cores = cores or os.cpu_count() or 1
    if children + learner_threads > cores:
        core_seconds, _ = _bound(limits["env_steps_per_second_per_core"],
                                 limits["inference_samples_per_second_per_core"],
                                 limits["training_samples_per_second_per_core"])
        return cores / core_seconds
    return min(children * _acting_rate_per_core(limits), _training_rate(limits, learner_threads))


def side_speeds(limits: dict, run: dict, children: int, learner_threads: int) -> dict[str, float]:
    """Each side's rate inside a run, per second it did not wait on the other, as a share of
    its probed rate. A run below its layout's cap says which side fell short of the probe:
    the probe times each stage in a hot loop of its own while the trainer is paused, so a
    side slowed by the pipeline's own work (or the host between rounds) shows here."""
    rate = run["transitions_per_second"]
    learner_seconds = run["learner_busy_fraction"]
    children_seconds = children - run["child_wait_seconds_per_second"]
    return {
        "learner": rate / learner_seconds / _training_rate(limits, learner_threads),
        "children": rate / children_seconds / _acting_rate_per_core(limits),
    }
