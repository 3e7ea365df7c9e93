"""Training runs to a goal: the trainer from scratch until its mean-100 reward reaches the
goal, with the curve and the early signals that tell a learning Pong run from a stuck one.

The early signals (docs/learning.md says where they come from): over its first 2 million
frames a run that will solve Pong holds its policy's mean entropy below ``EARLY_ENTROPY``
(a policy that no longer sees the screen sits at ln 6 = 1.792), and by 6 million frames its
mean-100 reward is above ``EARLY_REWARD``. Before about 4 million frames the reward of a
learning run and a stuck one look alike.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from a3c.lifecycle.load_meter import read_progress
from benchmarks.window import ROOT, stop_trainer

EARLY_FRAMES = (2_000_000, 4_000_000, 6_000_000)
EARLY_ENTROPY = 1.775
"""The policy's mean entropy over the first 2 million frames must be below this."""
EARLY_REWARD = -19.5
"""The mean-100 reward at 6 million frames must be above this."""


def train_to_goal(env_id: str, seed: int, max_seconds: float, logdir: Path,
                  extra_args: tuple[str, ...] = (), root: Path = ROOT) -> dict:
    """Run ``run_a3c.py`` of the checkout ``root`` at its defaults (plus ``extra_args``) in
    ``logdir`` until solved or out of time; the curve is (seconds since the command started,
    frames, mean-100)."""
    logdir.mkdir(parents=True, exist_ok=True)
    before = set(logdir.iterdir())
    command = [sys.executable, "run_a3c.py", "-n", "solve", "--env", env_id, "--seed", str(seed),
               "--logdir", str(logdir), "--max-seconds", str(max_seconds), *extra_args]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate()
    except BaseException:  # a benchmark told to stop: the trainer saves and stops its children
        stop_trainer(process)
        raise
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"trainer failed ({process.returncode}):\n{stderr[-2000:]}")
    (run_dir,) = set(logdir.iterdir()) - before
    summary = json.loads((run_dir / "summary.json").read_text())
    records = read_progress(run_dir)
    startup = wall - summary["seconds"]
    curve = [(startup + r["seconds"], r["frames"], r["mean_reward_100"]) for r in records]
    curve.append((wall, summary["frames"], summary["mean_reward_100"]))
    return {"seed": seed, "solved": summary["reason"] == "solved", "wall_seconds": wall,
            "trainer_seconds": summary["seconds"], "frames": summary["frames"], "curve": curve, "run_dir": str(run_dir),
            "early": early_signals(records), "settings": run_settings(run_dir)}


def seeded_runs(label: str, env_id: str, seeds: list[int], max_seconds: float,
                extra_args: tuple[str, ...]) -> list[dict]:
    """``train_to_goal`` for each seed in a folder of its own that is then removed: each run's
    record for a table of seeds, printed as it comes."""
    records = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as logdir:
            run = train_to_goal(env_id, seed, max_seconds, Path(logdir), extra_args)
        final = run["curve"][-1][2]
        records.append({"seed": seed, "solved": run["solved"], "frames": run["frames"],
                        "final_mean_reward": final, "wall_seconds": run["wall_seconds"]})
        print(f"{label}, seed {seed}: solved {run['solved']}, {run['frames']:,} frames, mean-100 {final}, "
              f"{run['wall_seconds']:.0f} s", flush=True)
    return records


SHOWN_SETTINGS = ("screen_size", "bf16", "conv", "processes", "envs_per_process", "life_loss")
"""The settings a solve run's record keeps: what the defaults were on the machine that ran it."""


def run_settings(run_dir: Path) -> dict:
    """``SHOWN_SETTINGS`` as the run's checkpoint saved them."""
    from a3c.lifecycle.checkpoint import load_checkpoint

    config = load_checkpoint(str(run_dir / "checkpoint.pt"))["config"]
    return {name: config.get(name) for name in SHOWN_SETTINGS}


def early_signals(records: list[dict]) -> dict[str, dict]:
    """At each of ``EARLY_FRAMES``: the mean-100 reward, and the policy's mean entropy over
    the stretch since the previous mark (or the start)."""
    signals, previous = {}, records[0]
    for mark in EARLY_FRAMES:
        reached = next((record for record in records if record["frames"] >= mark), None)
        if reached is None:
            break
        batches = reached["policy_entropy_batches"] - previous["policy_entropy_batches"]
        entropy = ((reached["policy_entropy_sum"] - previous["policy_entropy_sum"]) / batches
                   if batches else None)
        signals[f"{mark // 1_000_000}M"] = {"frames": reached["frames"], "seconds": reached["seconds"],
                                            "mean_reward_100": reached["mean_reward_100"],
                                            "policy_entropy": entropy}
        previous = reached
    return signals


def reread_early_signals(run: dict) -> dict:
    """An earlier run's record with its early signals read again from its run directory,
    where that still exists, so that they follow the marks and thresholds of this code."""
    run_dir = Path(run["run_dir"])
    if (run_dir / "progress.jsonl").exists():
        run = {**run, "early": early_signals(read_progress(run_dir))}
    return {**run, "learning_early": learning_early(run["early"])}


def learning_early(signals: dict[str, dict]) -> bool | None:
    """True when both early signals say the run learns, False when one says it does not,
    None when the run ended before 6 million frames."""
    first, second = signals.get("2M"), signals.get("6M")
    if first is None or second is None:
        return None
    entropy_fell = first["policy_entropy"] is not None and first["policy_entropy"] < EARLY_ENTROPY
    reward_rose = second["mean_reward_100"] is not None and second["mean_reward_100"] > EARLY_REWARD
    return entropy_fell and reward_rose
