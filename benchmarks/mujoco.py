"""HalfCheetah-v5 for a million steps: ``--algo ppo --preset mujoco`` against SB3 PPO with the
RL zoo's values tuned for HalfCheetah (``benchmarks.sb3_peer``), one after the other on the
same machine: the mean-100 return of the training episodes along the way and at the end, and
the wall time.

    python -m benchmarks.run --only mujoco --docs
"""
from __future__ import annotations

HALFCHEETAH = "HalfCheetah-v5"
ZOO_HALFCHEETAH_PPO_STEPS = 1_000_000
ZOO_HALFCHEETAH_PPO = {
    "n_steps": 512, "batch_size": 64, "gamma": 0.98, "learning_rate": 2.0633e-05, "ent_coef": 0.000401762,
    "clip_range": 0.1, "n_epochs": 20, "gae_lambda": 0.92, "max_grad_norm": 0.8, "vf_coef": 0.58096,
}
"""rl-baselines3-zoo's tuned PPO values for HalfCheetah (its hyperparams/ppo.yml, HalfCheetah-v3: one
env, 1e6 steps, observations and rewards normalised by VecNormalize; the policy's keywords are
in ``benchmarks.sb3_peer.halfcheetah_policy``), as SB3 takes them."""
OURS_ARGS = ("--algo", "ppo", "--preset", "mujoco", "--max-frames", str(ZOO_HALFCHEETAH_PPO_STEPS),
             "--stop-reward", "inf")
"""``run_a3c.py`` flags of this trainer's run: the mujoco preset for all of the peer's million
steps (no stop at the env's 4,800 threshold)."""
MARKS = (250_000, 500_000)
"""Steps at which the table reads each curve's mean-100, besides its end."""


def at_steps(curve: list, steps: int) -> float | None:
    """The mean-100 of ``curve`` ((seconds, steps, mean-100) points) where it first reaches
    ``steps``; None if it never does."""
    return next((point[2] for point in curve if point[1] >= steps), None)


def mujoco_section(mujoco: dict) -> list[str]:
    """The table of docs/mujoco_benchmark.md: each seed's mean-100 at ``MARKS`` and its wall
    seconds, for both trainers; the ratio of their median times and of their mean returns at
    the end."""
    marks = [f"{steps // 1000:,}k" for steps in MARKS]
    lines = [(f"### {HALFCHEETAH}, {ZOO_HALFCHEETAH_PPO_STEPS:,} steps: `{' '.join(OURS_ARGS)}` against "
              "SB3 PPO with the RL zoo's HalfCheetah values (mean-100 return of the training episodes; "
              "wall seconds from launch)"), "",
             "| trainer | seed | " + " | ".join(f"mean-100 at {mark}" for mark in marks)
             + " | mean-100 at the end | steps | seconds |",
             "|---|---|" + "---|" * len(marks) + "---|---|---|"]
    for label, runs in (("this trainer, `--algo ppo`", mujoco["ours"]), ("SB3 PPO", mujoco.get("sb3", []))):
        for run in runs:
            cells = [f"{value:,.0f}" if value is not None else "-"
                     for value in (at_steps(run["curve"], steps) for steps in MARKS)]
            _, steps, final = run["curve"][-1]
            lines.append(f"| {label} | {run['seed']} | " + " | ".join(cells)
                         + f" | **{final:,.0f}** | {steps:,} | {run['wall_seconds']:.0f} |")
    if "time_ratio" in mujoco:
        lines += ["", f"Median time ratio, this trainer / SB3: **{mujoco['time_ratio']:.2f}**."]
    if mujoco.get("sb3"):
        ours, sb3 = (sum(run["curve"][-1][2] for run in runs) / len(runs) for runs in (mujoco["ours"], mujoco["sb3"]))
        lines += ["", (f"Mean return at the end: this trainer {ours:,.0f}, SB3 {sb3:,.0f}; "
                       f"ratio **{ours / sb3:.2f}**.")]
    return [*lines, ""]
