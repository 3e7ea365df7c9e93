"""The solve part's early signals and its run record, on hand-made progress records and a
real CartPole run."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from a3c.algos.a3c.settings import VECTOR_PRESET
from benchmarks.mujoco import at_steps, mujoco_section
from benchmarks.report import markdown_report, solve_report
from benchmarks.solve import (
    EARLY_ENTROPY,
    EARLY_REWARD,
    early_signals,
    learning_early,
    reread_early_signals,
    train_to_goal,
)
from benchmarks.window import ROOT
from tests.helpers import alive


def record(frames, seconds, reward, entropy_sum, batches):
    return {"frames": frames, "seconds": seconds, "mean_reward_100": reward,
            "policy_entropy_sum": entropy_sum, "policy_entropy_batches": batches}


RECORDS = [
    record(0, 0.0, None, 0.0, 0),
    record(1_000_000, 150.0, -20.5, 1790.0, 1000),
    record(2_048_000, 300.0, -20.0, 3200.0, 2000),  # the 2M mark: 3200 / 2000 = 1.6 since the start
    record(3_000_000, 450.0, -19.0, 4390.0, 3000),
    record(4_100_000, 600.0, -17.5, 5600.0, 4000),  # the 4M mark: (5600 - 3200) / 2000 = 1.2
    record(6_000_000, 900.0, -12.0, 7000.0, 6000),
]


def test_early_signals_read_the_first_record_past_each_mark():
    signals = early_signals(RECORDS)
    assert signals["2M"] == {"frames": 2_048_000, "seconds": 300.0, "mean_reward_100": -20.0,
                             "policy_entropy": pytest.approx(1.6)}
    assert signals["4M"]["mean_reward_100"] == -17.5
    assert signals["4M"]["policy_entropy"] == pytest.approx(1.2)
    assert signals["6M"]["mean_reward_100"] == -12.0
    assert "4M" not in early_signals(RECORDS[:3])


@pytest.mark.parametrize("entropy_2m, reward_6m, verdict", [
    (EARLY_ENTROPY - 0.01, EARLY_REWARD + 0.5, True),
    (EARLY_ENTROPY + 0.01, EARLY_REWARD + 0.5, False),  # the policy has not moved
    (EARLY_ENTROPY - 0.01, EARLY_REWARD - 0.5, False),  # it moved, but not towards scoring
])
def test_learning_early_needs_both_signals(entropy_2m, reward_6m, verdict):
    signals = {"2M": {"policy_entropy": entropy_2m, "mean_reward_100": -20.9},
               "4M": {"policy_entropy": 1.7, "mean_reward_100": -20.5},
               "6M": {"policy_entropy": 1.0, "mean_reward_100": reward_6m}}
    assert learning_early(signals) is verdict
    assert learning_early({"2M": signals["2M"]}) is None  # ended before 6M frames


def test_train_to_goal_records_a_solved_run_and_its_curve(tmp_path: Path):
    # a goal of 100, not the bound: the record is what is tested, not how CartPole learns
    run = train_to_goal("CartPole-v1", seed=0, max_seconds=120, logdir=tmp_path / "runs",
                        extra_args=("--stop-reward", "100"))
    assert run["solved"] and run["frames"] > 0
    assert Path(run["run_dir"]).parent == tmp_path / "runs"
    seconds = [point[0] for point in run["curve"]]
    assert seconds == sorted(seconds) and seconds[-1] == pytest.approx(run["wall_seconds"])
    assert run["curve"][-1][2] >= 100.0
    # the settings the run had, from its checkpoint: CartPole has no frames to size, bfloat16 or lives
    assert run["settings"] == {"screen_size": None, "bf16": False, "conv": "nature",
                               "processes": VECTOR_PRESET.processes, "envs_per_process": VECTOR_PRESET.envs_per_process,
                               "life_loss": False}


STOPPED_BENCHMARK = """
import sys
from pathlib import Path
from benchmarks.window import exit_on_sigterm
from benchmarks.solve import train_to_goal
exit_on_sigterm()
train_to_goal("CartPole-v1", seed=0, max_seconds=120, logdir=Path(sys.argv[1]), extra_args=("--stop-reward", "1e9"))
"""


@pytest.mark.timeout(120)
def test_a_benchmark_told_to_stop_stops_its_trainer_which_saves_and_leaves_no_process(tmp_path: Path):
    benchmark = subprocess.Popen([sys.executable, "-c", STOPPED_BENCHMARK, str(tmp_path)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*/progress.jsonl")) or len(psutil.Process(benchmark.pid).children(True)) < 3:
            assert time.monotonic() < deadline and benchmark.poll() is None, "the trainer did not start"
            time.sleep(0.2)
        tree = [child.pid for child in psutil.Process(benchmark.pid).children(recursive=True)]
        benchmark.terminate()
        assert benchmark.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        benchmark.kill()
    assert alive(tree) == []
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "terminated"


def test_solve_report_lists_each_seed_and_the_peer():
    ours = {"seed": 0, "solved": True, "wall_seconds": 1800.0, "frames": 12_000_000,
            "early": early_signals(RECORDS), "learning_early": True, "curve": [],
            "settings": {"screen_size": 42, "bf16": True, "conv": "nature", "processes": 2, "envs_per_process": 16}}
    sb3 = {"solved": False, "wall_seconds": 1800.0, "frames": 5_000_000,
           "curve": [(10.0, 1000, -21.0), (1800.0, 5_000_000, -12.5)]}
    results = {"command": "python -m benchmarks.run --only solve", "solve": {"goal": 18.0, "ours": [ours], "sb3": sb3},
               "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 24, "platform": "linux",
                           "versions": {"torch": "2"}}}
    text = solve_report(results)
    (row,) = [line for line in text.splitlines() if line.startswith("| this trainer, seed 0")]
    # minutes, frames, the entropy over the first 2M, mean-100 at 4M / 6M, the verdict
    assert [cell.strip() for cell in row.strip("|").split("|")][1:] == [
        "yes", "30.0", "12,000,000", "1.600", "-17.5 / -12.0", "learning"]
    assert "-12.5" in text  # SB3's best mean-100
    assert ("The defaults on this machine: 42-pixel frames, bfloat16 autocast, the nature conv body, "
            "2 children x 16 envs.") in text


def test_an_earlier_runs_early_signals_are_read_again_from_its_directory(tmp_path: Path):
    (tmp_path / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    stale = {"seed": 1, "run_dir": str(tmp_path), "early": {"2M": {}}, "learning_early": None}
    run = reread_early_signals(stale)
    assert run["early"] == early_signals(RECORDS) and run["learning_early"] is True  # 1.6 < 1.775, -12 > -19
    gone = reread_early_signals({**stale, "run_dir": str(tmp_path / "missing")})
    assert gone["early"] == {"2M": {}} and gone["learning_early"] is None


def test_the_dqn_part_reports_each_seed_against_sb3_dqn():
    def run(seed, seconds, frames, solved=True):
        return {"seed": seed, "solved": solved, "wall_seconds": seconds, "frames": frames, "curve": []}

    dqn = {"ours": [run(0, 40.0, 250_000), run(1, 60.0, 400_000)], "ours_median_seconds": 50.0,
           "ours_median_frames": 325_000, "sb3": [run(0, 100.0, 30_000), run(1, 300.0, 90_000, False)],
           "sb3_median_seconds": 200.0, "sb3_median_frames": 60_000, "time_ratio": 0.25}
    report = markdown_report({"command": "x", "machine": {"cpu": "c", "cores": 2, "memory_gib": 1, "platform": "p",
                                                          "versions": {}}, "warmup_seconds": 1,
                              "window_seconds": 1, "dqn": dqn})
    assert "`--algo dqn` against SB3 DQN" in report and "SB3 DQN (RL zoo): seconds" in report
    assert "| 1 | 60.0 | 400,000 | 300.0 (not solved) | 90,000 |" in report
    assert "**0.25** at most: SB3 DQN (RL zoo) did not solve every seed" in report
    assert "cartpole.png" not in report


def test_the_ray_part_reports_both_backends_the_costs_and_the_hosts_one_learner_feeds():
    from benchmarks.report import ray_report

    def window(rate):
        return {"transitions_per_second": rate, "frames_per_second": 4 * rate, "policy_lag": 1.5,
                "window_seconds": 60.0}

    costs = {"envs_per_actor": 32, "block_transitions": 128, "block_bytes": 3 * 2**20, "weight_bytes": 6 * 2**20,
             "per_transition_ms": {"env_step": 0.3, "inference": 0.2, "object_store": 0.1},
             "actor_transitions_per_second": 1000 / 0.6,
             "learner_transitions_per_second": {"one_thread": 1300.0, "2_threads": 2000.0}}
    ray = {"mp": [window(1500.0), window(1300.0)], "ray": window(1260.0), "ratio": 0.9, "costs": costs}
    report = ray_report({"command": "x", "machine": {"cpu": "c", "cores": 2, "memory_gib": 1, "platform": "p",
                                                     "versions": {}}, "ray": ray})
    assert "| ray | 1,260 | 5,040 | 1.50 |" in report and "**90%**" in report
    assert "| env step | 0.3000 |" in report and "**1,667 transitions/s**" in report
    # 2,000 transitions/s over 8 actors of 1,667 each: 0.15 of an 8-core host; the H200's 14,000: 1.05
    assert "| this CPU, 2 threads | 2,000 | 0.1 | 0.1 | 0.0 | 0.0 |" in report
    assert "| one H200, batch 128 (measured once, 2026-11-26) | 14,000 | 1.1 | 0.5 |" in report


def test_the_curve_table_takes_rates_over_each_interval_by_hand():
    from benchmarks.curve import interval_table

    def record(seconds, frames, steps, mean):
        return {"seconds": seconds, "frames": frames, "transitions": frames // 4, "policy_version": steps,
                "mean_reward_100": mean}

    records = [record(0, 0, 0, None), record(300, 40_000, 500, -21.0), record(600, 400_000, 5_000, -20.5),
               record(700, 520_000, 6_500, -20.0)]
    rows = interval_table(records, every=600, batch_size=32).splitlines()[2:]
    # 0-600 s: 5,000 steps of 32 over 100,000 transitions; 600-700 s, the last: 1,500 steps, 30,000
    assert rows == ["| 10 | 400,000 | -20.50 | 8.3 | 667 | 1.60 |", "| 12 | 520,000 | -20.00 | 15.0 | 1,200 | 1.60 |"]


def test_sb3s_window_counts_its_curves_env_frames_as_four_per_pong_transition(monkeypatch):
    import benchmarks.run

    curve = [(10.0, 40_000, None), (30.0, 120_000, -21.0), (90.0, 360_000, -20.5)]  # (s, frames, mean-100)
    monkeypatch.setattr(benchmarks.run, "run_sb3", lambda *args, **kwargs: {"curve": curve})
    window = benchmarks.run.sb3_window(benchmarks.run.PONG, 32, warmup=30.0, window=60.0)
    assert window["frames_per_second"] == 4_000 and window["transitions_per_second"] == 1_000


def test_runs_kept_from_a_benchmark_runs_json_name_its_command_date_and_commit(tmp_path: Path):
    from benchmarks.run import kept_solve, pong_solve

    ours = {"seed": 0, "solved": True, "wall_seconds": 60.0, "frames": 1000, "early": {}, "curve": [],
            "run_dir": str(tmp_path / "gone")}
    whole = {"command": "python -m benchmarks.run --only solve", "machine": {"date": "2026-11-26", "commit": "abc1234"},
             "solve": {"goal": 18.0, "ours": [ours]}}
    (tmp_path / "run.json").write_text(json.dumps(whole))
    kept = pong_solve([0], False, 1.0, tmp_path, kept_solve(tmp_path / "run.json"))
    assert kept["runs_from"] == {"command": "python -m benchmarks.run --only solve", "date": "2026-11-26",
                                 "commit": "abc1234"}
    results = {"command": "python -m benchmarks.run --only solve --solve-from run.json", "solve": kept,
               "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 24, "platform": "linux", "versions": {}}}
    assert ("These runs: `python -m benchmarks.run --only solve` on 2026-11-26, commit abc1234."
            in solve_report(results))
    # docs/pong_solve.json itself has no command to name
    (tmp_path / "solve.json").write_text(json.dumps({"goal": 18.0, "ours": [ours]}))
    assert "runs_from" not in pong_solve([0], False, 1.0, tmp_path, kept_solve(tmp_path / "solve.json"))


def test_the_mujoco_table_reads_each_curve_at_its_marks_and_its_end():
    """A curve is read where it first reaches 250k and 500k steps, and at its last point; a
    curve that never reaches a mark shows a dash there."""
    ours = {"seed": 0, "wall_seconds": 300.4, "curve": [(10.0, 240_000, 100.0), (20.0, 250_008, 812.4),
                                                         (40.0, 520_000, 2_001.6), (90.0, 1_000_008, 4_950.2)]}
    sb3 = {"seed": 0, "wall_seconds": 870.0, "curve": [(400.0, 400_000, 1_500.0), (860.0, 999_999, 5_600.7)]}
    lines = mujoco_section({"ours": [ours], "sb3": [sb3], "time_ratio": 300.4 / 870.0})
    assert "| this trainer, `--algo ppo` | 0 | 812 | 2,002 | **4,950** | 1,000,008 | 300 |" in lines
    assert "| SB3 PPO | 0 | 1,500 | 5,601 | **5,601** | 999,999 | 870 |" in lines  # 500k: its first point past it
    assert at_steps(sb3["curve"], 1_000_000) is None
    assert "Median time ratio, this trainer / SB3: **0.35**." in lines
    # the ends' means: 4,950.2 against 5,600.7
    assert "Mean return at the end: this trainer 4,950, SB3 5,601; ratio **0.88**." in lines
