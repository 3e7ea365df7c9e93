"""Several agents in one env: the two-step game for each algorithm and seed, and MPE's
simple_spread for MADDPG, MAPPO, independent PPO and A3C against random actions.

    python -m benchmarks.run --only multiagent --docs

Frames count every agent's step (a row each); the two-step game's 50,000 env steps are
100,000 frames. Each run is ``run_a3c.py`` at the algorithm's defaults.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from a3c.lib.multiagent import TWO_STEP_GAME, JointEnv
from a3c.lifecycle.load_meter import read_progress
from benchmarks.solve import seeded_runs, train_to_goal

TWO_STEP_ALGORITHMS = ("qmix", "mappo", "maddpg", "a3c", "ppo", "dqn")
TWO_STEP_FRAMES = 100_000
"""50,000 env steps of two agents."""
SPREAD = "mpe2.simple_spread_v3"
SPREAD_ALGORITHMS = ("maddpg", "mappo", "ppo", "a3c")
RANDOM_EPISODES = 500


def two_step_game(seeds: list[int], max_seconds: float = 300.0) -> dict[str, list[dict]]:
    """Each algorithm and seed to the team's mean-100 of 7.9, within 50,000 env steps."""
    return {algo: seeded_runs(f"two-step game, {algo}", TWO_STEP_GAME, seeds, max_seconds,
                              ("--algo", algo, "--max-frames", str(TWO_STEP_FRAMES)))
            for algo in TWO_STEP_ALGORITHMS}


def random_team_return(env_id: str, episodes: int, seed: int = 0) -> float:
    """The team's mean return over ``episodes`` with every agent acting uniformly at random."""
    env = JointEnv(env_id)
    rng = np.random.default_rng(seed)
    returns = []
    try:
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            total, over = 0.0, False
            while not over:
                action = rng.integers(env.spaces.n_actions, size=len(env.spaces.agents))
                _, reward, terminated, truncated, _ = env.step(action)
                total += reward
                over = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return float(np.mean(returns))


def spread_curves(frames: int, seed: int = 0, max_seconds: float = 1800.0) -> dict:
    """simple_spread (3 agents) for ``frames`` with each algorithm, and random actions."""
    curves = {}
    for algo in SPREAD_ALGORITHMS:
        with tempfile.TemporaryDirectory() as logdir:
            run = train_to_goal(SPREAD, seed, max_seconds, Path(logdir),
                                ("--algo", algo, "--max-frames", str(frames)))
            records = read_progress(Path(run["run_dir"]))
        curves[algo] = {"frames": run["frames"], "wall_seconds": run["wall_seconds"],
                        "curve": [(record["frames"], record["mean_reward_100"]) for record in records]}
        print(f"simple_spread, {algo}: mean-100 {records[-1]['mean_reward_100']:.2f} at {run['frames']:,} frames "
              f"in {run['wall_seconds']:.0f} s", flush=True)
    return {"env": SPREAD, "seed": seed, "runs": curves,
            "random_team_return": random_team_return(SPREAD, RANDOM_EPISODES)}


def plot_spread(spread: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for algo, run in spread["runs"].items():
        points = [(frame, reward) for frame, reward in run["curve"] if reward is not None]
        axes.plot([frame / 1e6 for frame, _ in points], [reward for _, reward in points], label=f"--algo {algo}")
    axes.axhline(spread["random_team_return"], color="grey", linestyle="--", label="random actions")
    axes.set_xlabel("frames (millions; every agent's step counts)")
    axes.set_ylabel("team return, mean of the last 100 episodes")
    axes.set_title(f"{spread['env']}, 3 agents, seed {spread['seed']}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
