"""A custom model registered in a user's file (``benchmarks/user_models.py``) trains CartPole
with ``--algo ppo`` and ``--algo dqn`` and Pendulum with ``--algo sac``; each run's peer, in the
same invocation and on the same seed, is the algorithm's own net.

    python -m benchmarks.custom_model --seeds 0,1
"""
from __future__ import annotations

import argparse
import tempfile
import time

import benchmarks.user_models  # noqa: F401 - registers two-tanh, as a user's import would
from a3c import Trainer

CASES = {"ppo": ("CartPole-v1", 475.0, 400_000), "dqn": ("CartPole-v1", 475.0, 600_000),
         "sac": ("Pendulum-v1", -200.0, 60_000)}
"""Each algorithm's env, the mean-100 counted as solved, and the frames it may take."""
NETS = {"own net": None, "custom two-tanh": {"custom_model": "two-tanh"}}


def frames_to_solve(algo: str, model: dict | None, seed: int) -> dict:
    """One run to its env's goal: the frames and seconds it took (None: not solved within its frames)."""
    env, goal, frames = CASES[algo]
    started = time.monotonic()
    with Trainer(env=env, algo=algo, max_frames=frames, stop_reward=goal, logdir=tempfile.mkdtemp(),
                 name="custom", seed=seed, model=model) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
    solved = result["reason"] == "solved"
    return {"frames": result["frames"] if solved else None, "seconds": time.monotonic() - started,
            "mean": result["episode_reward_mean"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--algos", default="ppo,dqn,sac")
    args = parser.parse_args()
    print("| algo | env | seed | net | frames to solve | seconds | last mean-100 |")
    print("|---|---|---|---|---|---|---|")
    for algo in args.algos.split(","):
        for seed in (int(seed) for seed in args.seeds.split(",")):
            for net, model in NETS.items():
                run = frames_to_solve(algo, model, seed)
                shown = "not solved" if run["frames"] is None else f"{run['frames']:,}"
                print(f"| {algo} | {CASES[algo][0]} | {seed} | {net} | {shown} | {run['seconds']:.0f} | "
                      f"{run['mean']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
