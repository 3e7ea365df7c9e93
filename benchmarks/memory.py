"""The memory task (``CueMemory-v0``, ``a3c.lib.memory_task``) with and without ``--lstm``, for A3C
and PPO: a recurrent policy should reach the goal (a mean-100 of 0.9, only reachable by
remembering the cue) and a feed-forward one should stay near 0 however long it trains.

    python -m benchmarks.run --only memory --docs
"""
from __future__ import annotations

from a3c.lib.memory_task import ENV_ID
from benchmarks.solve import seeded_runs

ALGORITHMS = ("a3c", "ppo")
FEED_FORWARD_FRAMES = 500_000
"""Frames a run without memory gets: many times what the recurrent runs need."""


def memory_comparison(seeds: list[int], max_seconds: float = 300.0) -> dict[str, list[dict]]:
    """Each algorithm with and without ``--lstm``, each seed, to the goal or its frame budget."""
    runs: dict[str, list[dict]] = {}
    for algo in ALGORITHMS:
        for lstm in (True, False):
            label = f"{algo}{' --lstm' if lstm else ''}"
            extra = ("--algo", algo, "--max-frames", str(FEED_FORWARD_FRAMES), *(("--lstm",) if lstm else ()))
            runs[label] = seeded_runs(f"memory task, {label}", ENV_ID, seeds, max_seconds, extra)
    return runs


def memory_section(runs: dict[str, list[dict]]) -> list[str]:
    """The table of docs/memory_benchmark.md."""
    lines = [(f"### {ENV_ID}: name the cue seen 8 steps earlier (goal: a mean-100 of 0.9; without memory "
              "the expected return is 0)"), "",
             "| run | seeds at the goal | frames to the goal | mean-100 at the end, per seed | seconds, per seed |",
             "|---|---|---|---|---|"]
    for label, seeds in runs.items():
        solved = ", ".join(f"{run['frames']:,}" for run in seeds if run["solved"]) or "-"
        finals = ", ".join(f"{run['final_mean_reward']:.2f}" for run in seeds)
        seconds = ", ".join(f"{run['wall_seconds']:.0f}" for run in seeds)
        count = sum(run["solved"] for run in seeds)
        lines.append(f"| `--algo {label}` | {count} of {len(seeds)} | {solved} | {finals} | {seconds} |")
    return [*lines, ""]
