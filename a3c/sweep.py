"""Sweeps on Ray Tune: every combination of a grid of settings, for several seeds, each a
``Trainer`` run as a Tune trial; then one table, the best settings on top.

    python -m a3c.sweep --env CartPole-v1 --grid lr=1e-3,3e-3 --grid entropy_beta=0,0.01 --seeds 3

A trial asks Ray for as many CPUs as its run has processes (workers plus the learner's
threads), so Tune runs as many at once as the cores hold, each slot's Ray worker running
one trial after another (PBT's excepted). Every trial's TensorBoard run
goes under one folder, ``--logdir/NAME``. Needs the ``tune`` extra (``pip install -e
".[tune]"``); the base install does not. Without ``--ray-address`` a local Ray starts for
the sweep, on 127.0.0.1, without its dashboard, and stops with it.

``--scheduler`` picks Tune's trial scheduler (ASHA stops trials that trail early;
population-based training copies the leaders' weights and settings into the laggards and
perturbs them) and ``--search`` the trials (every combination of the grid, or Optuna's TPE
drawing ``--samples`` of them from the grid's values): a ``Plan``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a3c.config import KEYWORDS, ConfigError, make_config, stop_pair, value_type
from a3c.transport.ray_cluster import check_address, connect, disconnect

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


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["lr=1e-3,3e-3", "entropy_beta=0,0.01"]`` to ``{"lr": [0.001, 0.003], ...}``, each
    value of its setting's type; ConfigError for an unknown setting or a bad value."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, _, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if name not in KEYWORDS or not values:
            raise ConfigError(f"--grid {item!r}: want SETTING=V1,V2 with a setting of run_a3c.py --help")
        if name in ("seed", "logdir", "name"):
            raise ConfigError(f"--grid {name}: the sweep sets it (use --seeds, --logdir, --name)")
        grid[name] = [_convert(name, value.strip()) for value in values.split(",")]
    return grid


def _convert(name: str, text: str) -> Any:
    kind = value_type(KEYWORDS[name])
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        return kind(text)
    except ValueError as exc:
        raise ConfigError(f"--grid {name}: {text!r} is not a {kind.__name__}") from exc


def combinations(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the order the grid gives them."""
    combos: list[dict[str, Any]] = [{}]
    for name, values in grid.items():
        combos = [{**combo, name: value} for combo in combos for value in values]
    return combos


def label(settings: dict[str, Any]) -> str:
    return ",".join(f"{name}={value}" for name, value in settings.items()) or "defaults"


def trial(config: dict[str, Any]) -> None:
    """The Tune trainable: one run of the settings under ``config["trial"]``, one
    ``tune.report`` per iteration that has ``config["metric"]``, until it ends. With
    ``config["checkpoints"]`` (PBT) each report carries the run's checkpoint, and a trial that
    Tune restarts from one (another trial's, when PBT copies a leader) restores it in place
    and trains on under its own, perturbed, settings (``restored`` in its results)."""
    from ray import tune

    from a3c.lifecycle.trainer import Trainer

    start = tune.get_checkpoint()
    settings = dict(config["trial"])
    settings.setdefault("name", label({key: settings[key] for key in config.get("grid_names", ())}).replace("/", "-"))
    with Trainer(**settings) as trainer:
        if start is not None:
            with start.as_directory() as folder:
                trainer.restore(Path(folder) / CHECKPOINT)
        while True:
            result = {**trainer.train(), "restored": start is not None}
            if result.get(config["metric"]) is None and not result["done"]:
                continue  # nothing to rank the trial by yet (no episode has ended)
            if not config["checkpoints"]:
                tune.report(reported(result))
            else:
                with tempfile.TemporaryDirectory() as folder:
                    trainer.save(Path(folder) / CHECKPOINT)
                    tune.report(reported(result), checkpoint=tune.Checkpoint.from_directory(folder))
            if result["done"]:
                return


CHECKPOINT = "checkpoint.pt"
"""The run's checkpoint in a Tune checkpoint's folder."""


def reported(result: dict[str, Any]) -> dict[str, Any]:
    """What a trial tells Tune of a result: its numbers, ``custom_metrics`` nested as RLlib
    reports them (Tune flattens them to ``custom_metrics/NAME_mean``), whether it is done,
    whether solved and whether its trial started from a checkpoint (PBT's copy)."""
    return {**numbers(result), "custom_metrics": numbers(result.get("custom_metrics", {})), "done": result["done"],
            "solved": result["reason"] == "solved", "restored": bool(result.get("restored"))}


def numbers(values: dict[str, Any]) -> dict[str, int | float]:
    """The entries of ``values`` that are numbers (not flags, texts or None)."""
    return {key: value for key, value in values.items() if isinstance(value, (int, float)) and not isinstance(value, bool)}


def run_sweep(settings_per_trial: list[dict[str, Any]], storage: Path, per_trial: int,
              ray_address: str | None = None, plan: Plan = Plan(),
              grid: dict[str, list[Any]] | None = None, seeds: int = 1) -> list[dict[str, Any]]:
    """Run the trials on Ray Tune, each asking for ``per_trial`` CPUs (PBT's all at once,
    sharing the cluster's), as ``plan`` says: every trial of
    ``settings_per_trial``, or Optuna's ``plan.samples`` drawn from the ``grid``'s values and
    ``seeds``; each trial's settings with its last reported figures."""
    started_here = connect(ray_address)
    import ray
    from ray import tune

    try:
        available = int(ray.cluster_resources().get("CPU", 1))
        at_once = max(1, available // per_trial)
        checkpoints = wants_checkpoints(plan.scheduler)
        if checkpoints:  # PBT compares trials as they run: the population shares the cores
            at_once = len(settings_per_trial)
        space = search_space(plan, settings_per_trial, grid or {}, seeds)
        tuner = tune.Tuner(
            tune.with_resources(trial, {"cpu": min(per_trial, available / at_once)}),
            param_space={"trial": space, "metric": plan.metric, "checkpoints": checkpoints,
                         "grid_names": list(grid or {})},
            # a trial's process runs the next trial too (no new Ray worker importing torch), except
            # under PBT, whose restart from a leader's checkpoint needs a fresh trial function
            tune_config=tune.TuneConfig(max_concurrent_trials=at_once, reuse_actors=not checkpoints,
                                        num_samples=1 if plan.search == "grid" else plan.samples,
                                        scheduler=make_scheduler(plan, grid or {}),
                                        search_alg=make_searcher(plan)),
            run_config=tune.RunConfig(name="tune", storage_path=str(storage.resolve()), verbose=0),
        )
        rows = []
        for result in tuner.fit():
            rows.append({"settings": result.config["trial"], **(result.metrics or {}),
                         "error": None if result.error is None else str(result.error).splitlines()[0]})
        return rows
    finally:
        disconnect(started_here)


def search_space(plan: Plan, settings_per_trial: list[dict[str, Any]], grid: dict[str, list[Any]],
                 seeds: int) -> Any:
    """What Tune's ``trial`` config holds: the grid search over every trial's settings, or
    for a searcher the settings every trial shares with the grid's settings and the seed as
    choices to draw from."""
    from ray import tune

    if plan.search == "grid":
        return tune.grid_search(settings_per_trial)
    shared = {key: value for key, value in settings_per_trial[0].items() if key not in (*grid, "seed", "name")}
    return {**shared, **{key: tune.choice(values) for key, values in grid.items()},
            "seed": tune.choice(list(range(seeds)))}


def summarize(rows: list[dict[str, Any]], grid_names: Sequence[str]) -> list[dict[str, Any]]:
    """One line per combination of the grid: seeds solved, median seconds and frames to
    solve over the solved seeds; most seeds solved first, then the fastest median."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(label({name: row["settings"][name] for name in grid_names}), []).append(row)
    lines = []
    for name, trials in groups.items():
        solved = [trial for trial in trials if trial.get("solved")]
        lines.append({
            "config": name, "seeds": len(trials), "solved": len(solved),
            "median_seconds": statistics.median(t["seconds"] for t in solved) if solved else None,
            "median_frames": statistics.median(t["frames"] for t in solved) if solved else None,
            "median_best": _median([t.get("episode_reward_best") for t in trials]),
            "errors": sum(trial["error"] is not None for trial in trials),
        })
    return sorted(lines, key=lambda line: (-line["solved"], line["median_seconds"] or float("inf")))


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def format_table(lines: list[dict[str, Any]]) -> str:
    header = ("| config | seeds solved | median seconds to solve | median frames to solve "
              "| median best mean-100 |")
    rows = [header, "|---|---|---|---|---|"]
    for line in lines:
        seconds = "-" if line["median_seconds"] is None else f"{line['median_seconds']:.1f}"
        frames = "-" if line["median_frames"] is None else f"{line['median_frames']:,.0f}"
        best = "-" if line.get("median_best") is None else f"{line['median_best']:.1f}"
        failed = f" ({line['errors']} failed)" if line["errors"] else ""
        rows.append(f"| {line['config']} | {line['solved']} of {line['seeds']}{failed} | {seconds} | "
                    f"{frames} | {best} |")
    return "\n".join(rows)


def build_parser(prog: str = "python -m a3c.sweep") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium env id")
    parser.add_argument("--grid", action="append", default=[], metavar="SETTING=V1,V2",
                        help="values of one setting (a flag of run_a3c.py, with underscores); repeat")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 for every combination")
    parser.add_argument("--name", default=None, help="the sweep's folder under --logdir (default: sweep-TIME)")
    parser.add_argument("--logdir", default="runs", help="root of the sweep's folder")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="each trial's time budget")
    parser.add_argument("--max-frames", type=int, default=None, help="each trial's frame budget")
    parser.add_argument("--stop", action="append", type=stop_pair, default=[], metavar="KEY=VALUE",
                        help="each trial ends once its result KEY is at least VALUE (repeatable; run_a3c.py's keys)")
    parser.add_argument("--callbacks", default="", metavar="MODULE:CLASS",
                        help="an a3c.Callback subclass every trial runs (run_a3c.py's --callbacks)")
    parser.add_argument("--ray-address", default=None, help="a running Ray cluster (default: a local Ray)")
    parser.add_argument("--scheduler", default="fifo", choices=SCHEDULERS,
                        help="Tune's trial scheduler: fifo (each trial to its end), asha (trailing trials stop "
                             "early), pbt (trailing trials take a leader's weights and settings, the --grid "
                             "settings perturbed)")
    parser.add_argument("--metric", default="episode_reward_mean",
                        help="the result key the scheduler ranks trials by, higher better")
    parser.add_argument("--interval", type=int, default=4,
                        help="asha: iterations to the first rung; pbt: iterations between perturbations")
    parser.add_argument("--iteration-seconds", type=float, default=None,
                        help="seconds of each trial's train() iteration, the unit --interval counts "
                             "(default: run_a3c.py's --report-interval)")
    parser.add_argument("--search", default="grid", choices=SEARCHES,
                        help="grid: every combination of the --grid values for each seed; optuna: Optuna's TPE "
                             "draws --samples trials from the --grid values and the seeds, ranked by --metric "
                             "(the optuna extra)")
    parser.add_argument("--samples", type=int, default=0, help="--search optuna: how many trials it draws")
    parser.add_argument("--quantile", type=float, default=0.25,
                        help="pbt: the share of trials at the bottom that copy one at the top")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m a3c.sweep") -> int:
    """Sweep from the command line (``prog`` names the command in its usage and errors)."""
    args = build_parser(prog).parse_args(argv)
    name = args.name or f"sweep-{time.strftime('%Y%m%d-%H%M%S')}"
    folder = Path(args.logdir).resolve() / name
    try:
        if args.seeds < 1:
            raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
        grid = parse_grid(args.grid)
        trials = [{"env": args.env, **combo, "seed": seed, "name": label(combo).replace("/", "-"), "logdir": str(folder),
                   "max_seconds": args.max_seconds, "max_frames": args.max_frames, "stop": dict(args.stop) or None,
                   "callbacks": args.callbacks, **({} if args.iteration_seconds is None else
                                                     {"report_interval": args.iteration_seconds})}
                  for combo in combinations(grid) for seed in range(args.seeds)]
        # every trial's settings checked before Ray starts; a trial keeps its workers and
        # the learner's threads busy
        configs = [make_config(**settings) for settings in trials]
        per_trial = max(config.processes + config.learner_threads for config in configs)
        plan = Plan(args.scheduler, args.search, args.samples, args.metric, args.interval, args.quantile)
        plan.check(grid)
        if args.ray_address is not None:
            check_address(args.ray_address)
    except ConfigError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    try:
        import ray  # noqa: F401
    except ImportError:
        print(f'{prog}: error: Ray Tune is not installed: pip install -e ".[tune]"',
              file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(trials, folder, per_trial, args.ray_address, plan, grid, args.seeds)
    print(format_table(summarize(rows, list(grid))))
    print(f"runs in {folder}")
    return 0 if all(row["error"] is None for row in rows) else 1


def installed_command() -> int:
    """The ``a3c-sweep`` command: ``main`` under that name."""
    return main(prog="a3c-sweep")


if __name__ == "__main__":
    sys.exit(main())
