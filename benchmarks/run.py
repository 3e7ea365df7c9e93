"""Throughput and time-to-solve of this trainer against the machine's limit and SB3 A2C.

    python -m benchmarks.run                 # everything, about 25 minutes on 2 cores
    python -m benchmarks.run --quick         # shorter windows, one CartPole seed
    python -m benchmarks.run --only pong --trainer-args="--processes 2 --envs-per-process 16"
    python -m benchmarks.run --only probe --only pong --bf16   # bfloat16 acting and training
    python -m benchmarks.run --only atari --atari-games Breakout,Qbert --docs   # the Atari table

In one run on this machine: (0) time the learner's Adam step with and without denormals
flushed; (1) probe the per-core rates and the bound they imply, a
round at each boundary of the Pong window's segments while the trainer is paused;
(2) run the trainer on Pong for a window after warm-up and report trained transitions/s,
frames/s, the learner's busy and waiting fractions, children's blocked time, policy lag
and peak memory of the process tree; (3) run SB3 A2C on the same env and env count for
the same window; (4) solve CartPole-v1 with both for each seed. It prints a table and
writes JSON and a PNG (CartPole reward against time) under ``--results``; ``--docs`` also
rewrites docs/benchmarks.md. SB3 comes from the optional ``bench`` extra.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib.util
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from a3c.algos.a3c.settings import ATARI_PRESET, NATURE84_PRESET, SMALL_PRESET
from a3c.lib.envs import ATARI_FRAME_SKIP
from benchmarks.atari import GAMES as ATARI_GAMES
from benchmarks.atari import PEERS as ATARI_PEERS
from benchmarks.atari import atari_games, atari_report, kept_runs, merged, plot_atari
from benchmarks.denormals import adam_with_and_without_flushing
from benchmarks.memory import memory_comparison
from benchmarks.mujoco import HALFCHEETAH, OURS_ARGS, mujoco_section
from benchmarks.multiagent import plot_spread, spread_curves, two_step_game
from benchmarks.probe import LimitProbe, layout_cap, side_speeds
from benchmarks.report import (
    dqn_report,
    markdown_report,
    memory_report,
    mujoco_report,
    multiagent_report,
    pendulum_report,
    plot_cartpole,
    plot_solve,
    ppo_report,
    ray_report,
    solve_report,
)
from benchmarks.solve import learning_early, reread_early_signals, train_to_goal
from benchmarks.steal import BUSY_WARNING, StealMeter, busy_before
from benchmarks.window import ROOT, exit_on_sigterm, run_trainer_window

PONG = "PongNoFrameskip-v4"
PENDULUM = "Pendulum-v1"
PENDULUM_GOAL = -200.0
PENDULUM_ARGS = ("--algo", "ppo", "--preset", "box", "--gamma", "0.9", "--stop-reward", str(PENDULUM_GOAL))
"""Box actions: PPO's box preset with the RL zoo's Pendulum discount, to a mean-100 of -200."""
SAC_PENDULUM_ARGS = ("--algo", "sac", "--stop-reward", str(PENDULUM_GOAL))
"""SAC at its defaults, to the same mean-100."""
TD3_PENDULUM_ARGS = ("--algo", "td3", "--stop-reward", str(PENDULUM_GOAL))
"""TD3 at its defaults, to the same mean-100."""
PENDULUM_PARTS = {"box": (PENDULUM_ARGS, "ppo", 600.0), "sac": (SAC_PENDULUM_ARGS, "sac", 900.0),
                  "td3": (TD3_PENDULUM_ARGS, "td3", 900.0)}
"""The Pendulum parts: this trainer's flags, the SB3 peer's algorithm, the seconds each side gets."""
PONG_GOAL = 18.0
CARTPOLE = "CartPole-v1"
SB3_ZOO_ATARI_ENVS = 16
NAMESPACE_FLAG = "A3C_BENCHMARK_IN_NAMESPACE"
SOLVE_SECONDS = 2700.0
"""Issue 26's limit for Pong to 18 on 2 cores: 45 minutes."""


def sb3_available() -> bool:
    return importlib.util.find_spec("stable_baselines3") is not None


def run_sb3(env_id: str, n_envs: int, max_seconds: float, ent_coef: float = 0.01,
            stop_reward: float | None = None, seed: int = 0, zoo_atari: bool = False,
            algo: str = "a2c") -> dict:
    command = [sys.executable, "-m", "benchmarks.sb3_peer", "--env", env_id, "--n-envs", str(n_envs),
               "--ent-coef", str(ent_coef), "--max-seconds", str(max_seconds), "--seed", str(seed),
               "--algo", algo]
    if stop_reward is not None:
        command += ["--stop-reward", str(stop_reward)]
    if zoo_atari:
        command.append("--zoo-atari")
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"SB3 run failed:\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["wall_seconds"] = time.monotonic() - started
    return report


def sb3_window(env_id: str, n_envs: int, warmup: float, window: float) -> dict:
    """SB3 A2C throughput over the same window, from its once-a-second curve of env frames."""
    report = run_sb3(env_id, n_envs, warmup + window)
    curve = report["curve"]
    start = next(point for point in curve if point[0] >= warmup)
    end = curve[-1]
    frames_per_step = ATARI_FRAME_SKIP if env_id == PONG else 1
    frames_per_second = (end[1] - start[1]) / (end[0] - start[0])
    return {"n_envs": n_envs, "window_seconds": end[0] - start[0],
            "transitions_per_second": frames_per_second / frames_per_step,
            "frames_per_second": frames_per_second}


def solve_ours(seed: int, max_seconds: float, extra_args: tuple[str, ...] = (), env_id: str = CARTPOLE) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        return train_to_goal(env_id, seed, max_seconds, Path(logdir), extra_args)


PEER_ENVS_AND_GOALS = {CARTPOLE: (8, 475.0), PENDULUM: (4, PENDULUM_GOAL), HALFCHEETAH: (1, None)}
"""The RL zoo's env count for each env's tuned PPO (and A2C on CartPole) and the mean-100 the
peer runs to (None: its whole budget of steps)."""


def solve_sb3(seed: int, max_seconds: float, algo: str = "a2c", env_id: str = CARTPOLE) -> dict:
    """rl-baselines3-zoo's tuned A2C for CartPole-v1 (8 envs, ent_coef 0, defaults otherwise),
    its tuned DQN (one env) or its tuned PPO (8 envs; ``benchmarks.sb3_peer``) to the 475 bound;
    on Pendulum-v1 its tuned PPO (4 envs) or SAC or TD3 (one env) to ``PENDULUM_GOAL``; on HalfCheetah
    its tuned PPO (one env) for its million steps."""
    n_envs, goal = PEER_ENVS_AND_GOALS[env_id]
    n_envs = 1 if algo in ("dqn", "sac", "td3") else n_envs
    report = run_sb3(env_id, n_envs, max_seconds, ent_coef=0.0, stop_reward=goal, seed=seed, algo=algo)
    startup = report["wall_seconds"] - report["seconds"]
    curve = [(startup + t, frames, reward) for t, frames, reward in report["curve"]]
    return {"seed": seed, "solved": report["solved"], "wall_seconds": report["wall_seconds"],
            "frames": report["frames"], "curve": curve}


def cartpole_comparison(seeds: list[int], with_sb3: bool, max_seconds: float,
                        ours_args: tuple[str, ...] = (), peer: Callable[[int, float], dict] = solve_sb3,
                        peer_seconds: float | None = None, env_id: str = CARTPOLE) -> dict:
    """Our trainer (with ``ours_args``) and the SB3 ``peer`` to the env's bound (CartPole's 475),
    seed by seed; the peer gets ``peer_seconds`` (four times ours unless given)."""
    ours = [solve_ours(seed, max_seconds, ours_args, env_id) for seed in seeds]
    result = {"ours": ours, "ours_median_seconds": statistics.median(r["wall_seconds"] for r in ours),
              "ours_median_frames": statistics.median(r["frames"] for r in ours)}
    if with_sb3:
        sb3 = [peer(seed, peer_seconds or 4 * max_seconds) for seed in seeds]
        result |= {"sb3": sb3, "sb3_median_seconds": statistics.median(r["wall_seconds"] for r in sb3),
                   "sb3_median_frames": statistics.median(r["frames"] for r in sb3)}
        result["time_ratio"] = result["ours_median_seconds"] / result["sb3_median_seconds"]
    return result


def kept_solve(path: Path) -> dict:
    """A solve result to keep: docs/pong_solve.json, or a whole benchmark run's JSON, whose
    command, date and commit then travel with the runs (``runs_from``) into the report."""
    kept = json.loads(path.read_text())
    if "solve" not in kept:
        return kept
    machine = kept.get("machine", {})
    return {**kept["solve"], "runs_from": {"command": kept.get("command"), "date": machine.get("date"),
                                            "commit": machine.get("commit")}}


def pong_solve(seeds: list[int], with_sb3: bool, max_seconds: float, logdir: Path,
               earlier: dict | None = None, peer_from: Path | None = None) -> dict:
    """Pong from scratch at the defaults for each seed, then SB3 A2C with the RL zoo's Atari
    values on the same envs for as long as our slowest seed ran. With ``earlier`` (a solve
    part's results) its runs are kept and only the peer runs; with ``peer_from`` (a solve
    result's JSON) its peer run is kept, marked with where it came from, and none runs."""
    if earlier is not None:
        ours = [reread_early_signals(run) for run in earlier["ours"]]
    else:
        ours = []
        for seed in seeds:
            run = train_to_goal(PONG, seed, max_seconds, logdir)
            run["learning_early"] = learning_early(run["early"])
            print("solve:", json.dumps({k: v for k, v in run.items() if k != "curve"}), flush=True)
            ours.append(run)
    result = {"goal": PONG_GOAL, "max_seconds": max_seconds, "ours": ours}
    if earlier is not None and "runs_from" in earlier:
        result["runs_from"] = earlier["runs_from"]
    if peer_from is not None:
        kept = json.loads(peer_from.read_text())["sb3"]
        source = f"{peer_from} as of commit {file_commit(peer_from)}"
        result["sb3"] = {**kept, "kept_from": kept.get("kept_from", source)}
    elif with_sb3:
        budget = max(run["wall_seconds"] for run in ours)
        result["sb3"] = run_sb3(PONG, SB3_ZOO_ATARI_ENVS, budget, stop_reward=PONG_GOAL, zoo_atari=True)
    return result


def mode_comparison(seeds: list[int], warmup: float, window: float, max_seconds: float) -> dict:
    """Data against grads mode: Pong throughput and CartPole time to solve, same settings."""
    result = {}
    for mode in ("data", "grads"):
        pong = run_trainer_window(PONG, warmup, window, ["--mode", mode])
        solves = [solve_ours(seed, max_seconds, ("--mode", mode)) for seed in seeds]
        result[mode] = {
            "pong_transitions_per_second": pong["transitions_per_second"],
            "pong_frames_per_second": pong["frames_per_second"],
            "pong_policy_lag": pong["policy_lag"],
            "cartpole": solves,
            "cartpole_median_seconds": statistics.median(run["wall_seconds"] for run in solves),
            "cartpole_median_frames": statistics.median(run["frames"] for run in solves),
            "cartpole_all_solved": all(run["solved"] for run in solves),
        }
        print(mode, json.dumps({k: v for k, v in result[mode].items() if k != "cartpole"}), flush=True)
    return result


def backend_comparison(warmup: float, window: float, trainer_args: list[str]) -> dict:
    """Pong throughput on the process backend, on Ray (a local Ray of the run's own), and on
    processes again, so that the machine's drift between windows shows; Ray's ratio is to
    the mean of the two process windows. Then the per-actor costs behind docs/scaling.md."""
    from benchmarks.ray_costs import measure

    first = run_trainer_window(PONG, warmup, window, trainer_args)
    ray = run_trainer_window(PONG, warmup, window, [*trainer_args, "--backend", "ray"])
    again = run_trainer_window(PONG, warmup, window, trainer_args)
    mp_rate = statistics.fmean(run["transitions_per_second"] for run in (first, again))
    return {"mp": [first, again], "ray": ray, "ratio": ray["transitions_per_second"] / mp_rate,
            "costs": measure()}


def in_own_network_namespace(argv: list[str]) -> int:
    """Run this benchmark again inside a network namespace of its own with only loopback up,
    where Ray can reach no other address; its exit code."""
    inner = shlex.join([sys.executable, "-m", "benchmarks.run", *argv])
    command = f"ip link set lo up && {NAMESPACE_FLAG}=1 RAY_AUTH_MODE=disabled {inner}"
    return subprocess.run(["unshare", "-n", "bash", "-c", command], cwd=ROOT, check=False).returncode


def machine() -> dict:
    import ale_py
    import gymnasium
    import torch

    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "gymnasium": gymnasium.__version__, "ale_py": ale_py.__version__}
    if sb3_available():
        import stable_baselines3

        versions["stable_baselines3"] = stable_baselines3.__version__
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    busy = busy_before()
    if busy is not None and busy >= BUSY_WARNING:
        print(f"warning: other processes kept {busy:.0%} of the cores busy before this run; its seconds "
              "are not a quiet machine's", flush=True)
    return {"cpu": cpu, "cores": psutil.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "platform": platform.platform(), "versions": versions, "date": datetime.date.today().isoformat(),
            "commit": commit(), "busy_before": busy}


def commit() -> str:
    """The checkout's commit, "+changes" when files differ from it; "unknown" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


def file_commit(path: Path) -> str:
    """The last commit that changed ``path``: where a result kept from a file was written;
    "uncommitted" for a file git does not have."""
    try:
        last = subprocess.run(["git", "log", "-1", "--format=%h", "--", str(path)], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "uncommitted"
    return last or "uncommitted"


PROBE_ROUNDS = 6
"""Probe rounds per stage when Pong does not run; with Pong, one at each segment boundary."""


def measured_rounds(probe: LimitProbe, rounds: int) -> float | None:
    """Take ``rounds`` probe rounds; the CPU steal they ran under."""
    with StealMeter() as steal:
        probe.measure(rounds)
    return steal.fraction


def probe_through_pong(probe: LimitProbe | None, with_pong: bool,
                       run_pong: Callable[[Callable[[], None] | None], dict],
                       rounds: int = PROBE_ROUNDS) -> dict:
    """The probe's limits ("probe") and the trainer's Pong window ("ours"), with one probe
    round at each of the window's segment boundaries while the trainer is paused
    (``run_pong(at_boundary)``), so that the bound samples the machine all through the window
    it is compared with; ``rounds`` rounds at once when Pong does not run. Closes the probe."""
    results: dict = {}
    steals: list[float | None] = []

    def probe_round() -> None:
        steals.append(measured_rounds(probe, 1))

    try:
        if with_pong:
            with StealMeter() as steal:
                results["ours"] = run_pong(probe_round if probe is not None else None)
            results["ours"]["cpu_steal"] = steal.fraction
        elif probe is not None:
            steals.append(measured_rounds(probe, rounds))
        if probe is not None:
            # the rounds take equally long, so the plain mean is the steal over all of them
            steal_known = None not in steals
            results["probe"] = probe.limits() | {"cpu_steal": statistics.fmean(steals) if steal_known else None}
    finally:
        if probe is not None:
            probe.close()
    return results


def segment_fractions(probe: dict, ours: dict) -> list[float]:
    """Each segment's throughput against the mean bound of the two probe rounds either side."""
    bounds = probe["round_bounds"]
    return [rate / ((bounds[index] + bounds[index + 1]) / 2)
            for index, rate in enumerate(ours["segment_transitions_per_second"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short windows and one CartPole seed")
    parser.add_argument("--only", choices=["denormals", "probe", "pong", "cartpole", "modes", "solve", "dqn",
                                           "ppo", "ray", "multiagent", "atari", "box", "sac", "td3", "mujoco", "memory"],
                        action="append",
                        help="run only these parts (repeatable); modes (data against grads), dqn "
                             "(--algo dqn against SB3 DQN on CartPole), ppo (--algo ppo against SB3 "
                             "PPO on CartPole), multiagent (the two-step game for each algorithm, "
                             "simple_spread for MADDPG, MAPPO, PPO and A3C), ray (Pong on --backend ray "
                             "against processes, and the per-actor costs; in a network namespace "
                             "of its own) and solve (Pong from scratch to 18 for each seed, then SB3 "
                             "for as long; about 2 hours) and atari (the classic games for --atari-frames "
                             "each, docs/atari.md with --docs), box (--algo ppo on Pendulum-v1 to -200 against "
                             "SB3 PPO), sac and td3 (--algo sac, td3 on Pendulum-v1 to -200 against SB3's), mujoco (--algo ppo on HalfCheetah-v5 for 1M steps against SB3 PPO, "
                             "both with the RL zoo's values) and memory (CueMemory-v0 with and without "
                             "--lstm) run only when named")
    parser.add_argument("--solve-seconds", type=float, default=SOLVE_SECONDS,
                        help="solve: time limit of each Pong run")
    parser.add_argument("--solve-from", type=Path, default=None, metavar="JSON",
                        help="solve: keep this earlier solve result's runs (docs/pong_solve.json, or a "
                             "benchmark run's JSON, whose command and commit the report then names) "
                             "and run only the SB3 peer beside them")
    parser.add_argument("--peer-from", type=Path, default=None, metavar="JSON",
                        help="solve: keep this earlier solve result's SB3 run (docs/pong_solve.json) "
                             "instead of running SB3 again; the report says where it came from")
    parser.add_argument("--atari-games", default=",".join(ATARI_GAMES),
                        help="atari: comma-separated game names (default: the five of the PPO paper's table)")
    parser.add_argument("--atari-algos", default="a3c", help="atari: comma-separated --algo values to run")
    parser.add_argument("--atari-peer-games", default="",
                        help="atari: games on which the SB3 peer with the RL zoo's Atari values also runs")
    parser.add_argument("--atari-peer", choices=sorted(ATARI_PEERS), default="a2c",
                        help="atari: the SB3 peer, A2C (16 envs, RMSprop) or PPO (8 envs; far slower on a CPU)")
    parser.add_argument("--atari-frames", type=int, default=10_000_000, help="atari: env frames of each run")
    parser.add_argument("--atari-sticky", action="store_true",
                        help="atari: the ALE v5 ids (sticky actions) instead of NoFrameskip-v4")
    parser.add_argument("--atari-keep", type=Path, default=None, metavar="JSON",
                        help="atari: keep this earlier result's runs (docs/atari.json) except those run "
                             "again, so that the table grows game by game")
    parser.add_argument("--no-sb3", action="store_true", help="skip the Stable-Baselines3 runs")
    parser.add_argument("--warmup", type=float, default=None, help="Pong warm-up seconds")
    parser.add_argument("--window", type=float, default=None, help="Pong measured window seconds")
    parser.add_argument("--seeds", type=int, default=None,
                        help="CartPole seeds (3; --quick 1); Pong seeds of the solve part (2); two-step "
                             "game seeds (5); memory task seeds (3); HalfCheetah seeds (1)")
    parser.add_argument("--spread-frames", type=int, default=3_000_000,
                        help="multiagent: frames of each simple_spread run")
    parser.add_argument("--trainer-args", default="", help="extra flags for run_a3c.py on Pong")
    parser.add_argument("--preset", choices=["default", "nature84", "small"], default="default",
                        help="probe and run Pong with this preset's net, layout and precision")
    parser.add_argument("--bf16", action="store_true",
                        help="probe and run Pong with --bf16 (bfloat16 acting and training)")
    parser.add_argument("--results", default="results", help="folder for the JSON and PNG")
    parser.add_argument("--docs", action="store_true", help="rewrite docs/benchmarks.md from this run")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    parts = set(args.only or ["denormals", "probe", "pong", "cartpole"])
    if "ray" in parts and not os.environ.get(NAMESPACE_FLAG):
        return in_own_network_namespace(argv if argv is not None else sys.argv[1:])
    warmup = args.warmup or (20.0 if args.quick else 30.0)
    window = args.window or (30.0 if args.quick else 60.0)
    preset = {"small": SMALL_PRESET, "nature84": NATURE84_PRESET}.get(args.preset, ATARI_PRESET)
    seeds = list(range(args.seeds or (1 if args.quick else 3)))
    with_sb3 = not args.no_sb3 and sb3_available()
    if not args.no_sb3 and not with_sb3:
        print('SB3 comparison skipped: stable-baselines3 is not installed (pip install -e ".[bench]")')
    out = ROOT / args.results
    try:  # before any work: a folder that cannot be made would otherwise lose the whole run
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"--results {args.results}: {error.strerror}")
    results: dict = {"command": " ".join(["python -m benchmarks.run", *(argv or sys.argv[1:])]),
                     "machine": machine(), "warmup_seconds": warmup, "window_seconds": window}
    if "denormals" in parts:
        results["denormals"] = adam_with_and_without_flushing(PONG)
        print("denormals:", json.dumps(results["denormals"]), flush=True)
    probe = None
    if "probe" in parts:
        probe = LimitProbe(PONG, preset.envs_per_process, preset.batch_size, bf16=args.bf16 or preset.bf16,
                           conv=preset.conv)
    trainer_args = [*shlex.split(args.trainer_args), *(["--bf16"] if args.bf16 else []),
                    *(["--preset", args.preset] if args.preset != "default" else [])]
    bracketed = probe_through_pong(probe, "pong" in parts,
                                   lambda at_boundary: run_trainer_window(PONG, warmup, window, trainer_args,
                                                                          at_boundary))
    if "probe" in bracketed:
        results["probe"] = bracketed["probe"]
        layout = {"children": preset.processes, "learner_threads": preset.learner_threads}
        results["probe"]["layout"] = layout
        results["probe"]["layout_cap_transitions_per_second"] = layout_cap(results["probe"], **layout)
        print(json.dumps(results["probe"], indent=1), flush=True)
    if "pong" in parts:
        ours = bracketed["ours"]
        results["pong"] = {"ours": ours}
        print("ours:", json.dumps(ours, indent=1), flush=True)
        if "probe" in results:
            results["pong"]["fraction_of_bound"] = (ours["transitions_per_second"]
                                                    / results["probe"]["bound_transitions_per_second"])
            results["pong"]["fraction_of_one_core_bound"] = (
                ours["transitions_per_second"] / results["probe"]["one_core"]["bound_transitions_per_second"])
            results["pong"]["segment_fractions_of_bound"] = segment_fractions(results["probe"], ours)
            if not args.trainer_args:  # other flags may change the layout
                results["pong"]["fraction_of_layout_cap"] = (
                    ours["transitions_per_second"] / results["probe"]["layout_cap_transitions_per_second"])
                layout = results["probe"]["layout"]
                if layout["children"] + layout["learner_threads"] <= (os.cpu_count() or 1):  # a core each
                    results["pong"]["side_speeds"] = side_speeds(results["probe"], ours, **layout)
        if with_sb3:
            n_envs = preset.processes * preset.envs_per_process
            with StealMeter() as steal:
                results["pong"]["sb3"] = sb3_window(PONG, n_envs, warmup, window)
            results["pong"]["sb3"]["cpu_steal"] = steal.fraction
            results["pong"]["ratio_to_sb3"] = (ours["transitions_per_second"]
                                               / results["pong"]["sb3"]["transitions_per_second"])
            print("sb3:", json.dumps(results["pong"]["sb3"], indent=1), flush=True)
    if "cartpole" in parts:
        with StealMeter() as steal:
            results["cartpole"] = cartpole_comparison(seeds, with_sb3, max_seconds=300.0)
        results["cartpole"]["cpu_steal"] = steal.fraction
    if "modes" in parts:
        results["modes"] = mode_comparison(seeds, warmup, window, max_seconds=300.0)
    if "dqn" in parts:
        with StealMeter() as steal:
            results["dqn"] = cartpole_comparison(seeds, with_sb3, 300.0, ("--algo", "dqn"),
                                                 functools.partial(solve_sb3, algo="dqn"), peer_seconds=300.0)
        results["dqn"]["cpu_steal"] = steal.fraction
    if "ppo" in parts:
        with StealMeter() as steal:
            results["ppo"] = cartpole_comparison(seeds, with_sb3, 300.0, ("--algo", "ppo"),
                                                 functools.partial(solve_sb3, algo="ppo"), peer_seconds=300.0)
        results["ppo"]["cpu_steal"] = steal.fraction
    for part, (ours_args, peer_algo, part_seconds) in PENDULUM_PARTS.items():
        if part in parts:
            with StealMeter() as steal:
                results[part] = cartpole_comparison(
                    seeds, with_sb3, part_seconds, ours_args,
                    functools.partial(solve_sb3, algo=peer_algo, env_id=PENDULUM), peer_seconds=part_seconds,
                    env_id=PENDULUM)
            results[part]["cpu_steal"] = steal.fraction
    if "mujoco" in parts:
        with StealMeter() as steal:
            results["mujoco"] = cartpole_comparison(
                list(range(args.seeds or 1)), with_sb3, 3600.0, OURS_ARGS,
                functools.partial(solve_sb3, algo="ppo", env_id=HALFCHEETAH), peer_seconds=7200.0, env_id=HALFCHEETAH)
        results["mujoco"]["cpu_steal"] = steal.fraction
        print("\n".join(mujoco_section(results["mujoco"])), flush=True)
    if "memory" in parts:
        results["memory"] = memory_comparison(list(range(args.seeds or 3)))
    if "multiagent" in parts:
        results["multiagent"] = {"two_step": two_step_game(list(range(args.seeds or 5))),
                                 "spread": spread_curves(args.spread_frames)}
    if "ray" in parts:
        results["ray"] = backend_comparison(warmup, window, trainer_args)
        print("ray:", json.dumps(results["ray"]["costs"], indent=1), flush=True)
    if "solve" in parts:
        earlier = None if args.solve_from is None else kept_solve(args.solve_from)
        results["solve"] = pong_solve(list(range(args.seeds or 2)), with_sb3, args.solve_seconds,
                                      out / "solve-runs", earlier, args.peer_from)
    if "atari" in parts:
        games = [game for game in args.atari_games.split(",") if game]
        peer_games = [game for game in args.atari_peer_games.split(",") if game] if with_sb3 else []
        provenance = {"command": results["command"], "date": results["machine"]["date"],
                      "cpu": results["machine"]["cpu"], "cores": results["machine"]["cores"],
                      "commit": results["machine"]["commit"], "busy_before": results["machine"]["busy_before"]}
        new = atari_games(games, args.atari_algos.split(","), peer_games, args.atari_frames, 0,
                          out / "atari-runs", provenance, tuple(shlex.split(args.trainer_args)), args.atari_sticky,
                          args.atari_peer)
        results["atari"] = {"runs": merged(kept_runs(args.atari_keep), new)}
        print(atari_report(results["atari"]["runs"]))
    report = markdown_report(results)
    print(report)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"benchmark-{stamp}.json").write_text(json.dumps(results, indent=1) + "\n")
    if "cartpole" in results:
        plot_cartpole(results["cartpole"], out / f"cartpole-{stamp}.png")
    if "solve" in results:
        plot_solve(results["solve"], out / f"pong_solve-{stamp}.png")
    if "atari" in results:
        (out / f"atari-{stamp}.md").write_text(atari_report(results["atari"]["runs"]))
        plot_atari(results["atari"]["runs"], out / f"atari-{stamp}.png")
    if args.docs:
        if "cartpole" in results:
            plot_cartpole(results["cartpole"], ROOT / "docs" / "cartpole.png")
        if "solve" in results:
            plot_solve(results["solve"], ROOT / "docs" / "pong_solve.png")
            (ROOT / "docs" / "pong_solve.json").write_text(json.dumps(results["solve"], indent=1) + "\n")
            (ROOT / "docs" / "pong_solve.md").write_text(solve_report(results))
        if "dqn" in results:
            (ROOT / "docs" / "dqn_benchmark.md").write_text(dqn_report(results))
        if "ppo" in results:
            (ROOT / "docs" / "ppo_benchmark.md").write_text(ppo_report(results))
        for part in PENDULUM_PARTS.keys() & results.keys():
            (ROOT / "docs" / f"{part}_benchmark.md").write_text(pendulum_report(results, part))
        if "mujoco" in results:
            (ROOT / "docs" / "mujoco_benchmark.md").write_text(mujoco_report(results))
        if "memory" in results:
            (ROOT / "docs" / "memory_benchmark.md").write_text(memory_report(results))
        if "multiagent" in results:
            (ROOT / "docs" / "multiagent_benchmark.md").write_text(multiagent_report(results))
            plot_spread(results["multiagent"]["spread"], ROOT / "docs" / "multiagent_spread.png")
        if "ray" in results:
            (ROOT / "docs" / "ray_benchmark.md").write_text(ray_report(results))
        if "atari" in results:
            (ROOT / "docs" / "atari.md").write_text(atari_report(results["atari"]["runs"]))
            (ROOT / "docs" / "atari.json").write_text(json.dumps(results["atari"], indent=1) + "\n")
            plot_atari(results["atari"]["runs"], ROOT / "docs" / "atari.png")
        if parts - {"solve", "dqn", "ppo", "ray", "multiagent", "atari", "box", "sac", "td3", "mujoco", "memory"}:
            (ROOT / "docs" / "benchmarks.md").write_text(markdown_report(
                {key: value for key, value in results.items() if key not in ("dqn", "ppo", "ray", "multiagent")}))
    print(f"results in {out}/benchmark-{stamp}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
