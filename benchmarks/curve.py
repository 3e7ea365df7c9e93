"""A run's learning curve from its directory: a PNG of the mean-100 reward against minutes
and frames, and a markdown table (and, with ``--json``, its rows) by interval of frames,
mean-100, optimizer steps per second, frames per second and transitions sampled per
transition received (the replay ratio; for A3C, the batch over the transitions each step
consumes).

    python -m benchmarks.curve runs/RUN --every 600 --png docs/dqn_pong.png
    python -m benchmarks.curve runs/PPO_SEED0 runs/PPO_SEED1 --png docs/ppo_pong.png --beside docs/pong_solve.json

With several runs the printed table is the first's (``--json`` has every run's);
``--beside`` draws a solve benchmark's runs
(A3C's) on the same axes.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from a3c.lifecycle.load_meter import PROGRESS_FILE
from a3c.lifecycle.run import read_checkpoint
from benchmarks.report import plot_solve


def progress_records(run_dir: Path) -> list[dict]:
    """The run's progress records; where a ``--resume`` started its clock again, the seconds
    go on from where the earlier part stopped."""
    records, offset, last = [], 0.0, 0.0
    for line in (run_dir / PROGRESS_FILE).read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if record["seconds"] + offset < last:
                offset = last
            record["seconds"] += offset
            last = record["seconds"]
            records.append(record)
    return records


def interval_rows(records: list[dict], every: float, batch_size: int) -> list[dict]:
    """One row per ``every`` seconds: the figures over that interval, the mean-100 at its end."""
    rows = []
    start = records[0]
    for record in records[1:]:
        if record["seconds"] - start["seconds"] < every and record is not records[-1]:
            continue
        seconds = record["seconds"] - start["seconds"]
        steps = record["policy_version"] - start["policy_version"]
        received = record["transitions"] - start["transitions"]
        rows.append({"minutes": record["seconds"] / 60, "frames": record["frames"],
                     "mean_reward_100": record["mean_reward_100"], "steps_per_second": steps / seconds,
                     "frames_per_second": (record["frames"] - start["frames"]) / seconds,
                     "sampled_per_received": batch_size * steps / received if received else 0.0})
        start = record
    return rows


def interval_table(records: list[dict], every: float, batch_size: int) -> str:
    """``interval_rows`` as a markdown table."""
    lines = ["| minutes | frames | mean-100 | optimizer steps/s | frames/s | sampled per received |",
             "| - | - | - | - | - | - |"]
    for row in interval_rows(records, every, batch_size):
        mean = row["mean_reward_100"]
        lines.append(f"| {row['minutes']:.0f} | {row['frames']:,} | {'n/a' if mean is None else f'{mean:.2f}'} | "
                     f"{row['steps_per_second']:.1f} | {row['frames_per_second']:,.0f} | "
                     f"{row['sampled_per_received']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", type=Path, nargs="+")
    parser.add_argument("--every", type=float, default=600.0, help="seconds per table row")
    parser.add_argument("--png", type=Path, default=None, help="write the curves here")
    parser.add_argument("--goal", type=float, default=18.0, help="the line drawn across the plot")
    parser.add_argument("--json", type=Path, default=None, help="write the table's rows here as JSON")
    parser.add_argument("--label", action="append", default=None,
                        help="the legend of each run, in order (default: its algorithm and seed)")
    parser.add_argument("--beside", type=Path, default=None, metavar="JSON",
                        help="a solve benchmark's result (docs/pong_solve.json): its runs are drawn too")
    args = parser.parse_args(argv)
    if args.label is not None and len(args.label) != len(args.run_dirs):
        parser.error(f"{len(args.label)} --label for {len(args.run_dirs)} runs")
    runs = []
    for index, run_dir in enumerate(args.run_dirs):
        records = progress_records(run_dir)
        config = read_checkpoint(str(run_dir / "checkpoint.pt"))["config"]
        curve = [(record["seconds"], record["frames"], record["mean_reward_100"]) for record in records]
        label = args.label[index] if args.label else f"--algo {config.get('algo', 'a3c')}, seed {config['seed']}"
        runs.append({"seed": config["seed"], "label": label,
                     "curve": curve, "records": records, "config": config})
    first = runs[0]
    print(interval_table(first["records"], args.every, first["config"]["batch_size"]))
    if args.json is not None:
        tables = [{"label": run["label"], "env_id": run["config"]["env_id"], "seed": run["seed"],
                   "rows": interval_rows(run["records"], args.every, run["config"]["batch_size"])} for run in runs]
        args.json.write_text(json.dumps(tables[0] if len(tables) == 1 else {"runs": tables}, indent=1) + "\n")
    if args.png is not None:
        drawn = [{key: run[key] for key in ("seed", "label", "curve")} for run in runs]
        if args.beside is not None:
            solve = json.loads(args.beside.read_text())
            drawn += [{"seed": run["seed"], "label": f"--algo a3c, seed {run['seed']} ({args.beside.name})",
                       "curve": run["curve"]} for run in solve["ours"]]
        plot_solve({"goal": args.goal, "ours": drawn}, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
