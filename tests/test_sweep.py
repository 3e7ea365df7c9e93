"""Sweeps: the grid's parsing and the table by hand, and a real two-trial sweep on Ray Tune
inside a network namespace of its own (only loopback up), so Ray can reach no other address."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from a3c.config import ConfigError
from a3c.sweep import combinations, format_table, main, parse_grid, reported, summarize
from tests.namespaces import ROOT, skip_or_fail_without_namespace


def test_grid_values_take_their_settings_types_and_combine_in_order():
    grid = parse_grid(["lr=1e-3,3e-3", "entropy-beta=0,0.01", "batch_size=64", "clip_rewards=true"])
    assert grid == {"lr": [1e-3, 3e-3], "entropy_beta": [0.0, 0.01], "batch_size": [64],
                    "clip_rewards": [True]}
    assert combinations({"a": [1, 2], "b": [3, 4]}) == [
        {"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3}, {"a": 2, "b": 4}]


@pytest.mark.parametrize("item, named", [
    ("learning_rate=1", "SETTING=V1,V2"), ("lr", "SETTING=V1,V2"), ("batch_size=big", "not a int"),
    ("seed=1,2", "--seeds"), ("cuda=maybe", "not a bool"),
])
def test_bad_grid_items_are_one_clear_error(item, named):
    with pytest.raises(ConfigError, match=named):
        parse_grid([item])


def test_the_table_puts_most_seeds_solved_first_then_the_fastest_median():
    def trial(lr, seed, solved, seconds, frames):
        return {"settings": {"lr": lr, "seed": seed}, "solved": solved, "seconds": seconds,
                "frames": frames, "episode_reward_best": 400.0 + seed, "error": None}

    rows = [trial(0.001, 0, True, 10.0, 100), trial(0.001, 1, False, 30.0, 900),
            trial(0.003, 0, True, 8.0, 80), trial(0.003, 1, True, 12.0, 120), trial(0.003, 2, True, 4.0, 60),
            trial(0.01, 0, True, 2.0, 20), trial(0.01, 1, False, 30.0, 500)]
    lines = summarize(rows, ["lr"])
    assert [(line["config"], line["solved"], line["median_seconds"], line["median_frames"]) for line in lines] == [
        ("lr=0.003", 3, 8.0, 80), ("lr=0.01", 1, 2.0, 20), ("lr=0.001", 1, 10.0, 100)]
    table = format_table(lines).splitlines()
    assert table[2] == "| lr=0.003 | 3 of 3 | 8.0 | 80 | 401.0 |"


def test_bad_sweep_input_exits_2_before_ray_starts(capsys):
    from a3c.sweep import main

    assert main(["--grid", "lr=-1"]) == 2
    assert "--lr must be > 0" in capsys.readouterr().err
    started = time.monotonic()  # nothing listens on port 1: refused at once, not after Ray's retries
    assert main(["--ray-address", "127.0.0.1:1"]) == 2
    assert "--ray-address 127.0.0.1:1: cannot connect" in capsys.readouterr().err
    assert time.monotonic() - started < 10


def sweep_in_namespace(arguments: str, timeout: float = 400) -> subprocess.CompletedProcess:
    """``python -m a3c.sweep ARGUMENTS`` in a network namespace of its own (loopback only)."""
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the tune extra)")
    skip_or_fail_without_namespace()
    sweep = f"ip link set lo up && RAY_USAGE_STATS_ENABLED=0 {sys.executable} -m a3c.sweep {arguments}"
    finished = subprocess.run(["unshare", "-rn", "bash", "-c", sweep], check=False, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return finished


@pytest.mark.timeout(420)
def test_a_two_trial_sweep_on_ray_tune_writes_every_run_under_one_folder(tmp_path, real_ray_dir_unchanged):
    finished = sweep_in_namespace(f"--env CartPole-v1 --grid lr=1e-3,3e-3 --seeds 1 --max-frames 5000 "
                                  f"--logdir {tmp_path} --name grid")
    table = [line for line in finished.stdout.splitlines() if line.startswith("| lr=")]
    assert sorted(line.split(" | ")[0] for line in table) == ["| lr=0.001", "| lr=0.003"]
    runs = sorted(path for path in (tmp_path / "grid").iterdir() if path.name.startswith("lr="))
    assert [run.name.split("__")[0] for run in runs] == ["lr=0.001", "lr=0.003"]
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["reason"] == "frame_budget" and summary["frames"] >= 5000
        assert any(run.glob("events.out.tfevents.*"))
    # a process per trial slot, each trial asking for 2 CPUs (its worker and the learner's
    # thread): on 2 cores one process ran both trials, the second importing nothing again
    pids = {json.loads(line)["pid"] for path in (tmp_path / "grid" / "tune").glob("*/result.json")
            for line in path.read_text().splitlines()}
    assert len(pids) == min(2, max(1, (os.cpu_count() or 1) // 2)), pids
    # Ray wrote its token and session files in the suite's own home, not the user's
    assert (Path.home() / ".ray" / "auth_token").exists() and real_ray_dir_unchanged()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_population_based_training_on_ray_tune_copies_a_leader_into_a_laggard(tmp_path, real_ray_dir_unchanged):
    """The real thing the in-process test above stands for: two trials, lr 1e-4 and 3e-3, and
    every 2 iterations the worse takes the better's checkpoint with lr moved."""
    sweep_in_namespace(f"--env CartPole-v1 --grid lr=1e-4,3e-3 --seeds 1 --max-frames 80000 --scheduler pbt "
                       f"--interval 2 --quantile 0.5 --iteration-seconds 1 --logdir {tmp_path} --name pbt", 560)
    results = [json.loads(line) for path in (tmp_path / "pbt" / "tune").glob("*/result.json")
               for line in path.read_text().splitlines()]
    copied = [result for result in results if result.get("restored")]
    assert copied, "no trial was restarted from another's checkpoint"
    assert all(result["cur_lr"] in (1e-4, 3e-3) and result["training_iteration"] > 2 for result in copied)
    assert real_ray_dir_unchanged()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_optuna_search_runs_the_trials_it_draws_from_the_grid(tmp_path, real_ray_dir_unchanged):
    pytest.importorskip("optuna", reason="Optuna is not installed (the optuna extra)")
    sweep_in_namespace(f"--env CartPole-v1 --grid lr=1e-3,3e-3 --seeds 2 --max-frames 3000 --search optuna "
                       f"--samples 3 --logdir {tmp_path} --name optuna", 560)
    runs = [path for path in (tmp_path / "optuna").iterdir() if path.name.startswith("lr=")]
    assert len(runs) == 3 and {run.name.split("__")[0] for run in runs} <= {"lr=0.001", "lr=0.003"}
    assert real_ray_dir_unchanged()


def test_a_trial_reports_its_numbers_and_its_custom_metrics_nested_to_tune():
    result = {"frames": 10, "episode_reward_mean": 2.5, "done": True, "reason": "solved", "run_dir": "x",
              "custom_metrics": {"angle_mean": 0.1, "angle_max": 0.2}, "loss": None}
    assert reported(result) == {"frames": 10, "episode_reward_mean": 2.5, "done": True, "solved": True,
                                "custom_metrics": {"angle_mean": 0.1, "angle_max": 0.2}, "restored": False}


class TuneSession:
    """Tune's side of a function trainable, in this process: what it reports, the checkpoints
    it hands over (copied, as Tune persists them), and the checkpoint it starts from."""

    def __init__(self, folder: Path, start=None):
        self.folder, self.start = folder, start
        self.results: list[dict] = []
        self.checkpoints: list[Path] = []

    def get_checkpoint(self):
        return self.start

    def report(self, metrics, checkpoint=None):
        self.results.append(metrics)
        if checkpoint is not None:
            kept = self.folder / f"checkpoint_{len(self.checkpoints)}"
            shutil.copytree(checkpoint.path, kept)
            self.checkpoints.append(kept)


@pytest.mark.timeout(120)
def test_a_pbt_trial_restarted_from_a_leaders_checkpoint_goes_on_from_it_under_its_perturbed_setting(
        tmp_path, monkeypatch):
    from ray import tune

    from a3c.sweep import trial

    def run(settings, session):
        monkeypatch.setattr(tune, "get_checkpoint", session.get_checkpoint)
        monkeypatch.setattr(tune, "report", session.report)
        trial({"trial": {"env": "CartPole-v1", "backend": "serial", "processes": 1, "report_interval": 0.3,
                         "logdir": str(tmp_path), **settings},
               "metric": "episode_reward_mean", "checkpoints": True})

    leader = TuneSession(tmp_path / "leader")
    run({"name": "leader", "lr": 1e-3, "max_frames": 3000}, leader)
    assert leader.results and len(leader.checkpoints) == len(leader.results)
    assert {result["cur_lr"] for result in leader.results} == {1e-3} and not leader.results[0]["restored"]
    copied = TuneSession(tmp_path / "copied", start=tune.Checkpoint.from_directory(leader.checkpoints[-1]))
    run({"name": "copied", "lr": 3e-3, "max_frames": 6000}, copied)  # PBT's perturbed lr
    first = copied.results[0]
    assert first["restored"] and first["cur_lr"] == 3e-3  # the perturbed setting, in effect
    # the leader's counters went on: its weights, optimizer and frames came with them
    assert first["training_iteration"] == leader.results[-1]["training_iteration"] + 1
    assert first["frames"] > leader.results[-1]["frames"]


def test_schedules_that_cannot_run_are_refused_before_ray_starts(capsys):
    assert main(["--env", "CartPole-v1", "--scheduler", "pbt", "--seeds", "2"]) == 2
    assert "--scheduler pbt perturbs the --grid settings" in capsys.readouterr().err
    assert main(["--env", "CartPole-v1", "--grid", "lr=1e-3,3e-3", "--quantile", "0.9"]) == 2
    assert "--quantile must be in (0, 0.5]" in capsys.readouterr().err


def test_optuna_draws_the_grid_settings_and_the_seed_and_keeps_the_rest(capsys):
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the tune extra)")
    from a3c.sweep import Plan, make_searcher, search_space

    trials = [{"env": "CartPole-v1", "lr": lr, "seed": seed, "name": f"lr={lr}", "max_frames": 500}
              for lr in (1e-3, 3e-3) for seed in (0, 1)]
    plan = Plan(search="optuna", samples=4)
    space = search_space(plan, trials, {"lr": [1e-3, 3e-3]}, 2)
    assert space["env"] == "CartPole-v1" and space["max_frames"] == 500 and "name" not in space
    assert space["lr"].categories == [1e-3, 3e-3] and space["seed"].categories == [0, 1]
    assert search_space(Plan(), trials, {"lr": [1e-3, 3e-3]}, 2) == {"grid_search": trials}
    searcher = make_searcher(plan)
    assert (type(searcher).__name__, searcher.metric, searcher.mode) == ("OptunaSearch", "episode_reward_mean", "max")
    for argv, says in [(["--search", "optuna", "--samples", "2"], "--search optuna draws from the --grid"),
                       (["--grid", "lr=1e-3,3e-3", "--search", "optuna"], "--search optuna needs --samples N >= 1"),
                       (["--grid", "lr=1e-3,3e-3", "--search", "optuna", "--samples", "2", "--scheduler", "pbt"],
                        "PBT sets its trials' settings itself")]:
        assert main(["--env", "CartPole-v1", *argv]) == 2
        assert says in capsys.readouterr().err


def test_the_schedulers_rank_by_the_metric_over_iterations():
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the tune extra)")
    from a3c.sweep import Plan, make_scheduler

    assert make_scheduler(Plan(), {}) is None
    asha = make_scheduler(Plan(scheduler="asha", interval=2), {})
    assert (asha._time_attr, asha._metric, asha._mode) == ("training_iteration", "episode_reward_mean", "max")
    assert [rung for rung, _ in asha._brackets[0]._rungs] == [54, 18, 6, 2]  # from the interval, thrice each
    pbt = make_scheduler(Plan(scheduler="pbt", interval=3, quantile=0.5), {"lr": [1e-3, 3e-3]})
    assert pbt._perturbation_interval == 3 and pbt._quantile_fraction == 0.5
    assert pbt._hyperparam_mutations == {"trial": {"lr": [1e-3, 3e-3]}}
