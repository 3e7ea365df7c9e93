"""How a sweep runs its trials on Tune: the trial scheduler (``--scheduler``: ASHA stops trials
that trail early, population-based training copies the leaders' weights and settings into the
laggards and perturbs them) and the search (``--search``: every combination of the grid, or
Optuna's TPE drawing ``--samples`` trials from the grid's values). Pure at import: Ray Tune
and Optuna are imported when used."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a3c.options import ConfigError

SCHEDULERS = ("fifo", "asha", "pbt")
"""``fifo``: every trial runs to its own end (Tune's default)."""
SEARCHES = ("grid", "optuna")


@dataclass(frozen=True)
class Plan:
    """A sweep's ``--scheduler``, ``--search`` (with ``--samples``), the result key both rank
    trials by (higher better), and the scheduler's ``--interval`` and ``--quantile``."""

    scheduler: str = "fifo"
    search: str = "grid"
    samples: int = 0
    metric: str = "episode_reward_mean"
    interval: int = 4
    quantile: float = 0.25

    def check(self, grid: dict[str, list[Any]]) -> None:
        """ConfigError, before Ray starts, for a plan that cannot run."""
        if self.scheduler not in SCHEDULERS or self.search not in SEARCHES:
            raise ConfigError(f"a sweep's scheduler is one of {', '.join(SCHEDULERS)} and its search one of "
                              f"{', '.join(SEARCHES)}, got {self.scheduler!r} and {self.search!r}")
        if self.interval < 1:
            raise ConfigError(f"--interval must be >= 1, got {self.interval}")
        if not 0 < self.quantile <= 0.5:
            raise ConfigError(f"--quantile must be in (0, 0.5], got {self.quantile}")
        if self.scheduler == "pbt" and not grid:
            raise ConfigError("--scheduler pbt perturbs the --grid settings: give at least one --grid")
        if self.search == "optuna":
            if not grid:
                raise ConfigError("--search optuna draws from the --grid settings' values: give at least one --grid")
            if self.samples < 1:
                raise ConfigError(f"--search optuna needs --samples N >= 1, got {self.samples}")
            if self.scheduler == "pbt":
                raise ConfigError("--search optuna and --scheduler pbt: PBT sets its trials' settings itself")
            import importlib.util

            if importlib.util.find_spec("optuna") is None:
                raise ConfigError('--search optuna needs Optuna: pip install -e ".[optuna]"')


def make_searcher(plan: Plan) -> Any | None:
    """Optuna's TPE searcher ranking by ``plan.metric`` for ``--search optuna``; None for the grid."""
    if plan.search == "grid":
        return None
    from ray.tune.search.optuna import OptunaSearch

    return OptunaSearch(metric=plan.metric, mode="max")


def make_scheduler(plan: Plan, grid: dict[str, list[Any]]) -> Any | None:
    """Tune's scheduler of a checked ``plan``, ranking trials by its metric (higher better)
    over ``training_iteration``: None for fifo; ASHA, whose first rung is at ``plan.interval``
    iterations (then 3x, 9x, ...: a trial below the rung's top third stops there); PBT, which
    every ``plan.interval`` iterations gives each trial in the bottom ``plan.quantile`` a top
    one's checkpoint and settings with one of the ``grid`` settings moved to a neighbouring
    value of its list (or drawn from it anew)."""
    if plan.scheduler == "fifo":
        return None
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining

    if plan.scheduler == "asha":
        return ASHAScheduler(time_attr="training_iteration", metric=plan.metric, mode="max",
                             grace_period=plan.interval, reduction_factor=3)
    return PopulationBasedTraining(time_attr="training_iteration", metric=plan.metric, mode="max",
                                   perturbation_interval=plan.interval, quantile_fraction=plan.quantile,
                                   hyperparam_mutations={"trial": dict(grid)})


def wants_checkpoints(name: str) -> bool:
    """Whether the scheduler restarts trials from other trials' checkpoints (PBT)."""
    return name == "pbt"
