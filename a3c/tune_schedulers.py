"""Tune's trial schedulers for ``a3c.sweep --scheduler``: ASHA stops trials that trail early,
population-based training (PBT) copies the leaders' weights and settings into the laggards
and perturbs them. Pure at import: Ray Tune is imported when a scheduler is made."""
from __future__ import annotations

from typing import Any

from a3c.options import ConfigError

SCHEDULERS = ("fifo", "asha", "pbt")
"""``fifo``: every trial runs to its own end (Tune's default)."""


def make_scheduler(name: str, grid: dict[str, list[Any]], metric: str, mode: str, interval: int,
                   quantile: float) -> Any | None:
    """Tune's scheduler ``name`` ranking trials by ``metric`` (``mode`` max or min) over
    ``training_iteration``: None for fifo; ASHA, whose first rung is at ``interval`` iterations
    (then 3x, 9x, ...: a trial below the rung's top third stops there); PBT, which every
    ``interval`` iterations gives each trial in the bottom ``quantile`` a top one's
    checkpoint and settings with one of the ``grid`` settings moved to a neighbouring value
    of its list (or drawn from it anew). ConfigError for PBT without a grid to perturb."""
    if name not in SCHEDULERS:
        raise ConfigError(f"--scheduler must be one of {', '.join(SCHEDULERS)}, got {name!r}")
    if name == "fifo":
        return None
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

    if name == "asha":
        return ASHAScheduler(time_attr="training_iteration", metric=metric, mode=mode, grace_period=interval,
                             reduction_factor=3)
    if not grid:
        raise ConfigError("--scheduler pbt perturbs the --grid settings: give at least one --grid")
    return PopulationBasedTraining(time_attr="training_iteration", metric=metric, mode=mode,
                                   perturbation_interval=interval, quantile_fraction=quantile,
                                   hyperparam_mutations={"trial": dict(grid)})


def wants_checkpoints(name: str) -> bool:
    """Whether the scheduler restarts trials from other trials' checkpoints (PBT)."""
    return name == "pbt"
