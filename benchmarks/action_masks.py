"""Action masks: A3C, PPO and DQN on ``tests.toy_envs:MaskedChoice-v0`` (the env raises on any
invalid action, so a finished run took none), against peers measured in the same run: uniform
random play among the valid actions, and how often uniform play over all actions would have
taken an invalid one.

    python -m benchmarks.action_masks --seeds 0,1,2
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import gymnasium as gym

import tests.toy_envs  # noqa: F401 - registers MaskedChoice-v0
from a3c import Trainer
from a3c.lib.observations import random_valid_action

ENV = "tests.toy_envs:MaskedChoice-v0"
FRAMES = {"a3c": 30_000, "ppo": 15_000, "dqn": 20_000}
GOAL = 9.5
"""Mean-100 reward out of 10 counted as learned: the target taken on 95% of the steps."""


def learned(algo: str, seed: int) -> dict:
    """One serial run: its ending, frames to ``GOAL`` (None: not reached), last mean, seconds."""
    started, reached = time.monotonic(), None
    with Trainer(env=ENV, algo=algo, backend="serial", processes=1, envs_per_process=8, max_frames=FRAMES[algo],
                 logdir=tempfile.mkdtemp(), name="masks", stop_reward=1e9, seed=seed) as trainer:
        while not (result := trainer.train(frames=1000))["done"]:
            if reached is None and (result["episode_reward_mean"] or 0) >= GOAL:
                reached = result["frames"]
    return {"reason": result["reason"], "frames_to_goal": reached, "mean": result["episode_reward_mean"],
            "seconds": time.monotonic() - started}


def random_peers(seed: int, episodes: int = 200) -> tuple[float, float]:
    """Uniform play among the valid actions: its mean episode reward; and the share of steps
    on which a uniform draw over all actions would have been invalid."""
    env = gym.make(ENV)
    env.action_space.seed(seed)
    totals, invalid, steps = [], 0, 0
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed * 10_000 + episode)
        total, done = 0.0, False
        while not done:
            invalid += int(not observation["action_mask"][env.action_space.sample()])
            observation, reward, terminated, truncated, _ = env.step(random_valid_action(env, observation))
            total, steps, done = total + reward, steps + 1, terminated or truncated
        totals.append(total)
    return statistics.mean(totals), invalid / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--algos", default="a3c,ppo,dqn")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    peer_mean, invalid_share = random_peers(seeds[0])
    print(f"random valid play: mean {peer_mean:.2f} of 10; uniform play over all actions: "
          f"{invalid_share:.1%} of steps invalid")
    print("| algo | seed | ending | frames to mean 9.5 | last mean | x random valid | seconds |")
    print("|---|---|---|---|---|---|---|")
    for algo in args.algos.split(","):
        for seed in seeds:
            run = learned(algo, seed)
            reached = "not reached" if run["frames_to_goal"] is None else f"{run['frames_to_goal']:,}"
            print(f"| {algo} | {seed} | {run['reason']} | {reached} | {run['mean']:.2f} | "
                  f"{run['mean'] / peer_mean:.2f} | {run['seconds']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
