"""Frames to the goal for every algorithm, a few seeds each: the check that a change which
should not alter learning did not. Each algorithm runs at its defaults on a small task it
solves in seconds to a minute (CartPole-v1 to 475, the toy Reach-v0 to -3, the two-step game
to 7.9), from the checkout given, so one command measures two commits in one session
(`--flags "--backend serial"`: the same run from a seed, so equal frames show unchanged learning):

    python -m benchmarks.every_algorithm --checkout /tmp/before --out before.json
    python -m benchmarks.every_algorithm --out after.json --compare before.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks.solve import train_to_goal
from benchmarks.window import ROOT

TASKS = {
    "a3c": ("CartPole-v1", ()),
    "ppo": ("CartPole-v1", ()),
    "dqn": ("CartPole-v1", ()),
    "sac": ("tests.toy_envs:Reach-v0", ("--stop-reward", "-3", "--learning-starts", "300")),
    "td3": ("tests.toy_envs:Reach-v0", ("--stop-reward", "-3", "--learning-starts", "300")),
    "qmix": ("TwoStepGame", ("--stop-reward", "7.9")),
    "mappo": ("TwoStepGame", ("--stop-reward", "7.9")),
    "maddpg": ("TwoStepGame", ("--stop-reward", "7.9")),
}
"""Each algorithm's task and the flags beside its defaults (the goal; where learning starts,
for the replay learners on a task this short)."""


def frames_to_goal(checkout: Path, algos: list[str], seeds: list[int], max_seconds: float,
                   logdir: Path, extra_flags: tuple[str, ...] = ()) -> dict[str, list[int | None]]:
    """Each algorithm's frames to its goal per seed (None: not solved within ``max_seconds``)."""
    frames: dict[str, list[int | None]] = {}
    for algo in algos:
        env_id, flags = TASKS[algo]
        for seed in seeds:
            run = train_to_goal(env_id, seed, max_seconds, logdir / algo, ("--algo", algo, *flags, *extra_flags),
                                root=checkout)
            frames.setdefault(algo, []).append(run["frames"] if run["solved"] else None)
            print(f"{algo} seed {seed}: {frames[algo][-1] or 'not solved'} frames", flush=True)
    return frames


def table(results: dict[str, list[int | None]], before: dict[str, list[int | None]] | None) -> str:
    def shown(values: list[int | None]) -> str:
        solved = [value for value in values if value is not None]
        median = f"median {statistics.median(solved):,.0f}" if solved else "none solved"
        return f"{', '.join(f'{v:,}' if v else '-' for v in values)} ({median})"

    lines = ["| algo | frames to the goal, per seed" + (" | before |" if before else " |"),
             "|---|---|" + ("---|" if before else "")]
    for algo, values in results.items():
        lines.append(f"| {algo} | {shown(values)} |" + (f" {shown(before[algo])} |" if before else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the repository whose run_a3c.py runs")
    parser.add_argument("--algos", default=",".join(TASKS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--max-seconds", type=float, default=180.0, help="each run's budget")
    parser.add_argument("--logdir", type=Path, default=Path("results/every_algorithm").resolve())
    parser.add_argument("--flags", default="", help="more flags for every run: --backend serial makes "
                        "each run one seed's, the same on every machine, for an exact before and after")
    parser.add_argument("--out", type=Path, required=True, help="JSON of the frames")
    parser.add_argument("--compare", type=Path, default=None, help="a JSON of another run, shown beside")
    args = parser.parse_args(argv)
    results = frames_to_goal(args.checkout.resolve(), args.algos.split(","),
                             [int(seed) for seed in args.seeds.split(",")], args.max_seconds, args.logdir,
                             tuple(args.flags.split()))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    before = json.loads(args.compare.read_text()) if args.compare else None
    print(table(results, before))


if __name__ == "__main__":
    sys.exit(main())
