"""The classic Atari games at the defaults for a frame budget each, beside the published
40M-frame scores and a peer run on the same machine.

Each game runs ``run_a3c.py`` from scratch (``--algo`` as asked) for ``frames`` env frames.
A run's record keeps its curve and what the report reads off it: the mean-100 score (whole
games, the game's own points) at 2.5M, 5M and the end, its best, the minutes, and the
policy's entropy over windows of frames, so that a policy locked into one action shows as
the frames where that entropy fell under ``LOCKED_ENTROPY``. Runs of earlier invocations
can be kept (``kept_runs``) so that a table too long for one sitting grows game by game,
each run with its own command, date and commit.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from a3c.lib.envs import ATARI_FRAME_SKIP
from benchmarks.solve import train_to_goal
from benchmarks.steal import BUSY_WARNING

GAMES = ("Breakout", "BeamRider", "Qbert", "Seaquest", "SpaceInvaders")
PUBLISHED = {
    "Breakout": {"A2C": 303.0, "PPO": 274.8, "CleanRL PPO": 431.8},
    "BeamRider": {"A2C": 3031.7, "PPO": 1590.0, "CleanRL PPO": 2447.8},
    "Qbert": {"A2C": 10065.7, "PPO": 14293.3, "CleanRL PPO": 16430.7},
    "Seaquest": {"A2C": 1714.3, "PPO": 1204.5, "CleanRL PPO": 1230.0},
    "SpaceInvaders": {"A2C": 744.5, "PPO": 942.5, "CleanRL PPO": 1162.2},
}
"""Mean-100 after 40M frames: the PPO paper's Table 6 (A2C, PPO) and CleanRL's
EnvPool PPO."""
MARKS = (2_500_000, 5_000_000)
"""Frames at which the score is read besides the run's end."""
ENTROPY_WINDOW = 100_000
"""Frames over which the policy's entropy is averaged when looking for a lock."""
LOCKED_ENTROPY = 0.01
"""Nats: a policy whose mean entropy over a window is below this plays one action."""
HOLD_FRACTION = 0.8
"""A run holds its score when it ends at or above this share of its best mean-100."""


def env_id(game: str, sticky: bool = False) -> str:
    """The NoFrameskip-v4 id the tables use, or the ALE v5 id with sticky actions."""
    return f"ALE/{game}-v5" if sticky else f"{game}NoFrameskip-v4"


def score_at(curve: list[list[float]], mark: int) -> float | None:
    """The mean-100 at the first point at or past ``mark`` frames; None if the run ended before."""
    return next((reward for _, frames, reward in curve if frames >= mark), None)


def entropy_windows(records: list[dict], window: int = ENTROPY_WINDOW) -> list[tuple[int, float]]:
    """(frames at the window's end, mean policy entropy over it) for consecutive stretches of
    at least ``window`` frames, from progress.jsonl's cumulative sums."""
    windows, start = [], records[0]
    for record in records[1:]:
        batches = record["policy_entropy_batches"] - start["policy_entropy_batches"]
        if record["frames"] - start["frames"] >= window and batches > 0:
            windows.append((record["frames"], (record["policy_entropy_sum"] - start["policy_entropy_sum"]) / batches))
            start = record
    return windows


def run_summary(curve: list[list[float]], windows: list[tuple[int, float]], final: float | None) -> dict:
    """What the report reads off a run: scores at the marks, best, end, lock frames, held."""
    rewards = [(frames, reward) for _, frames, reward in curve if reward is not None]
    best_frames, best = max(rewards, key=lambda point: point[1], default=(None, None))
    locked = [frames for frames, entropy in windows if entropy < LOCKED_ENTROPY]
    summary = {f"score_{mark / 1e6:g}M": score_at(curve, mark) for mark in MARKS}
    summary |= {"score_end": final, "best": best, "best_frames": best_frames,
                "min_window_entropy": min((entropy for _, entropy in windows), default=None),
                "locked_from_frames": locked[0] if locked else None, "locked_windows": len(locked)}
    summary["held"] = None if best is None or final is None else holds(final, best, rewards[0][1])
    return summary


def holds(final: float, best: float, first: float) -> bool:
    """The end is within ``1 - HOLD_FRACTION`` of the best mean-100, measured from the first
    mean-100 when the scores are negative (a game of lost points)."""
    floor = min(0.0, first)
    return final - floor >= HOLD_FRACTION * (best - floor)


def game_run(game: str, algo: str, frames: int, seed: int, logdir: Path, extra_args: tuple[str, ...] = (),
             sticky: bool = False, max_seconds: float = 4 * 3600.0) -> dict:
    """One game from scratch at the defaults for ``frames`` frames, and its summary."""
    from a3c.lifecycle.load_meter import read_progress

    args = ("--algo", algo, "--max-frames", str(frames), *extra_args)
    run = train_to_goal(env_id(game, sticky), seed, max_seconds, logdir, args)
    windows = entropy_windows(read_progress(Path(run["run_dir"])))
    return {"game": game, "algo": algo, "sticky": sticky, "seed": seed, "extra_args": list(extra_args),
            "frames": run["frames"], "minutes": run["wall_seconds"] / 60, "curve": run["curve"],
            "entropy_windows": windows, "settings": run["settings"],
            **run_summary(run["curve"], windows, run["curve"][-1][2])}


PEERS = {
    "ppo": ("SB3 PPO (RL zoo)", ["--n-envs", "8", "--algo", "ppo", "--zoo-atari", "--torch-threads", "1"]),
    "a2c": ("SB3 A2C (RL zoo)", ["--n-envs", "16", "--algo", "a2c", "--zoo-atari", "--sb3-wrappers",
                                 "--torch-threads", "1"]),
}
"""The peers ``--atari-peer`` names: Stable-Baselines3 with the RL zoo's Atari values and wrappers,
on one torch thread, as this trainer's learner."""


def peer_run(game: str, frames: int, seed: int, peer: str) -> dict:
    """Stable-Baselines3 ``peer`` (a key of ``PEERS``) on ``game`` for ``frames`` frames, in its
    own process (``benchmarks.sb3_peer``); the curve is (seconds, frames, mean-100)."""
    label, arguments = PEERS[peer]
    command = [sys.executable, "-m", "benchmarks.sb3_peer", "--env", env_id(game), *arguments,
               "--max-frames", str(frames), "--max-seconds", str(6 * 3600), "--seed", str(seed)]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, check=False,
                            cwd=Path(__file__).resolve().parent.parent)
    if result.returncode != 0:
        raise RuntimeError(f"SB3 run failed:\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    curve = report["curve"]
    return {"game": game, "algo": label, "sticky": False, "seed": seed, "frames": report["frames"],
            # SB3's AtariWrapper ends a training episode at a lost life
            "settings": {"life_loss": True, "torch_threads": report["torch_threads"]},
            "minutes": (time.monotonic() - started) / 60, "curve": curve, "entropy_windows": [],
            **run_summary(curve, [], curve[-1][2] if curve else None)}


def kept_runs(path: Path | None) -> list[dict]:
    """The runs of an earlier atari result (docs/atari.json), each with its own provenance."""
    if path is None or not path.exists():
        return []
    return json.loads(path.read_text())["runs"]


def merged(kept: list[dict], new: list[dict]) -> list[dict]:
    """``kept`` runs with each (game, algo, sticky) that ``new`` ran again replaced."""
    ran = {(run["game"], run["algo"], run["sticky"]) for run in new}
    return [run for run in kept if (run["game"], run["algo"], run["sticky"]) not in ran] + new


def atari_games(games: list[str], algos: list[str], peer_games: list[str], frames: int, seed: int,
                logdir: Path, provenance: dict, extra_args: tuple[str, ...] = (), sticky: bool = False,
                peer: str = "a2c") -> list[dict]:
    """Each game for each algorithm, then the peer on ``peer_games``; every run carries
    ``provenance`` (command, date, machine, commit)."""
    runs = []
    for algo in algos:
        for game in games:
            run = game_run(game, algo, frames, seed, logdir, extra_args, sticky) | {"provenance": provenance}
            print("atari:", json.dumps({k: v for k, v in run.items() if k not in ("curve", "entropy_windows")}),
                  flush=True)
            runs.append(run)
    for game in peer_games:
        run = peer_run(game, frames, seed, peer) | {"provenance": provenance}
        print("atari peer:", json.dumps({k: v for k, v in run.items() if k != "curve"}), flush=True)
        runs.append(run)
    return runs


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _trained_to(run: dict) -> str:
    """Where the run's training episodes ended: a life or the game (runs before ``--life-loss``)."""
    return "a life" if run.get("settings", {}).get("life_loss") else "the game"


def _label(run: dict) -> str:
    return run["algo"] + (" (sticky actions, ALE v5)" if run["sticky"] else "")


def atari_report(runs: list[dict]) -> str:
    """docs/atari.md: the score table with the published figures beside it, then each run's
    lock and hold, and where each run came from."""
    lines = ["# Atari games at the defaults", "",
             ("Written by `python -m benchmarks.run --only atari` (see `--help`). Scores are the mean of "
             "the last 100 whole games in the game's own points (all lives; training rewards are "
             "clipped), read from the run's progress at 2.5M and 5M frames and at its end. The "
             "published columns are 40M-frame scores: the PPO paper's Table 6 (A2C, PPO) and "
             "CleanRL's PPO. A lock is a 100k-frame window whose mean policy entropy is under "
             f"{LOCKED_ENTROPY} nats; a run holds when it ends at {HOLD_FRACTION:.0%} or more of its best. "
             "Every run starts each game with up to 30 no-ops and is cut at 108,000 frames. \"Trained "
             "to\" says where a training episode ended: at a lost life, with FIRE pressed after each "
             "reset where the game has it (`--life-loss`, the defaults from commit 9bf118b, as the "
             "published tables' runs did), or at the game's end without FIRE (the runs before)."),
             "", ("| game | algorithm | trained to | frames | 2.5M | 5M | end | best (at M frames) | minutes | "
             "locked from | holds | A2C 40M | PPO 40M | CleanRL PPO 40M |"), "|" + "---|" * 14]
    for game in [g for g in GAMES if any(run["game"] == g for run in runs)] + sorted(
            {run["game"] for run in runs} - set(GAMES)):
        published = PUBLISHED.get(game, {})
        for run in [run for run in runs if run["game"] == game]:
            best_at = "" if run["best_frames"] is None else f" ({run['best_frames'] / 1e6:.1f})"
            locked = "-" if run["locked_from_frames"] is None else f"{run['locked_from_frames'] / 1e6:.2f}M"
            lines.append(f"| {game} | {_label(run)} | {_trained_to(run)} | {run['frames'] / 1e6:.1f}M | "
                         f"{_cell(run['score_2.5M'])} | "
                         f"{_cell(run['score_5M'])} | {_cell(run['score_end'])} | {_cell(run['best'])}{best_at} | "
                         f"{run['minutes']:.0f} | {locked} | {'yes' if run['held'] else 'no'} | "
                         f"{_cell(published.get('A2C'))} | {_cell(published.get('PPO'))} | "
                         f"{_cell(published.get('CleanRL PPO'))} |")
    lines += ["", "![mean-100 against frames, a panel a game](atari.png)", "", "## Where each run came from", ""]
    for run in runs:
        source = run["provenance"]
        lines.append(f"- {run['game']}, {_label(run)}, seed {run['seed']}: `{source['command']}` on "
                     f"{source['date']}, {source['cpu']} ({source['cores']} cores), commit {source['commit']}"
                     + (f", other processes keeping {source['busy_before']:.0%} of the cores busy at launch"
                        if (source.get("busy_before") or 0.0) >= BUSY_WARNING else "")
                     + (f", trainer flags `{' '.join(run['extra_args'])}`" if run.get("extra_args") else "")
                     + (f", SB3 on {threads} torch thread(s)"
                        if (threads := run.get("settings", {}).get("torch_threads")) else ""))
    lines += ["", (f"Frames are env frames (agent steps x {ATARI_FRAME_SKIP}). Minutes are wall minutes from "
              "launch and depend on what else the cores ran.")]
    return "\n".join(lines) + "\n"


def plot_atari(runs: list[dict], path: Path) -> None:
    """Mean-100 against frames, a panel a game, a line a run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = [g for g in GAMES if any(run["game"] == g for run in runs)] + sorted(
        {run["game"] for run in runs} - set(GAMES))
    figure, axes = plt.subplots(1, len(games), figsize=(4 * len(games), 3.5), squeeze=False)
    for panel, game in zip(axes[0], games):
        for run in [run for run in runs if run["game"] == game]:
            points = [(frames, reward) for _, frames, reward in run["curve"] if reward is not None]
            panel.plot([f / 1e6 for f, _ in points], [r for _, r in points], label=_label(run))
        panel.set_title(game)
        panel.set_xlabel("env frames (millions)")
        panel.legend(fontsize=7)
    axes[0][0].set_ylabel("mean score of the last 100 games")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
