"""The pieces settings are made of, shared by the run's ``Config`` and every algorithm's own
settings: ``option`` (a dataclass field that is also a flag), ``ConfigError``, the
hyperparameters every algorithm has (``Preset``) and the process layout for a core count.

Nothing here imports torch, makes an env or asks the machine: building a Config is pure.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any


class ConfigError(ValueError):
    """A setting that cannot work; the message is one line for the user."""


def option(help: str, default: Any = MISSING, *, flag: str | None = None, short: str | None = None,
           choices: Sequence[str] | None = None, at_least: float | None = None,
           above: float | None = None, at_most: float | None = None, family: bool = False) -> Any:
    """A dataclass field that is also a setting: ``--flag`` (the field's name with dashes
    unless ``flag`` is given), the keyword of the same name with underscores, its help, its
    choices and bounds. ``family``: unset means the value the algorithm gives the env's
    family (see ``a3c.config.make_config``)."""
    metadata = {"help": help, "flag": flag, "short": short, "choices": choices, "at_least": at_least,
                "above": above, "at_most": at_most, "family": family}
    return field(default=default, metadata=metadata)


CORES = os.cpu_count() or 1


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them in /proc/cpuinfo; empty elsewhere."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def available_memory() -> int | None:
    """Bytes the kernel can give without swapping (MemAvailable); None where it does not say."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def shared_memory_free() -> int | None:
    """Bytes that shared tensors can still take: the free space of /dev/shm, where they live,
    and no more than the memory available; None where neither says."""
    try:
        stat = os.statvfs("/dev/shm")
        shm = stat.f_bavail * stat.f_frsize
    except OSError:
        shm = None
    known = [value for value in (shm, available_memory()) if value is not None]
    return min(known) if known else None


CPU_BF16 = bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})
"""The CPU has bfloat16 instructions (AVX512-BF16 or AMX): there bfloat16 autocast runs the
Atari net's passes faster (docs/performance.md, "bfloat16")."""


@dataclass(frozen=True)
class Preset:
    """Hyperparameters every algorithm has, tuned per env family by each algorithm."""

    processes: int = option("workers stepping envs: child processes, or Ray actors with "
                            "--backend ray", at_least=1, family=True)
    envs_per_process: int = option("envs each worker steps in lockstep (one inference per vector step)",
                                   at_least=1, family=True)
    learner_threads: int = option("torch threads of the learner process", at_least=1, family=True)
    batch_size: int = option("transitions per optimizer step (grads mode: per worker's gradient)",
                             at_least=1, family=True)
    reward_steps: int = option("n of the n-step return", at_least=1, family=True)
    gamma: float = option("discount factor", above=0.0, at_most=1.0, family=True)
    lr: float = option("Adam's learning rate", above=0.0, family=True)
    clip_grad: float = option("maximum global gradient norm", above=0.0, family=True)
    adam_eps: float = option("Adam's epsilon: far above the gradients' RMS it turns Adam into "
                             "SGD at lr / eps", above=0.0, family=True)


def process_layout(cores: int, envs_in_total: int) -> dict[str, int]:
    """Processes, envs and learner threads for ``cores``: the learner gets its own core(s)
    and the workers the rest, so no process waits for a core another one holds.

    Measured on 2 cores (docs/performance.md): one worker plus a one-thread learner beats two
    or four workers and a learner with torch's default threads, on Pong and on CartPole.
    On more cores the learner takes a quarter of them; that part is not measured.
    """
    learner_threads = 1 if cores <= 4 else cores // 4
    processes = max(1, cores - learner_threads)
    return {"processes": processes, "envs_per_process": max(8, envs_in_total // processes),
            "learner_threads": learner_threads}
