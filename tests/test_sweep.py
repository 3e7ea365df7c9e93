"""Sweeps: the grid's parsing and the table by hand, and a real two-trial sweep on Ray Tune
inside a network namespace of its own (only loopback up), so Ray can reach no other address."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from a3c.config import ConfigError
from a3c.sweep import combinations, format_table, parse_grid, reported, summarize
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


@pytest.mark.timeout(420)
def test_a_two_trial_sweep_on_ray_tune_writes_every_run_under_one_folder(tmp_path, real_ray_dir_unchanged):
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the tune extra)")
    skip_or_fail_without_namespace()
    sweep = (f"ip link set lo up && RAY_USAGE_STATS_ENABLED=0 {sys.executable} -m a3c.sweep "
             f"--env CartPole-v1 --grid lr=1e-3,3e-3 --seeds 1 --max-frames 5000 "
             f"--logdir {tmp_path} --name grid")
    finished = subprocess.run(["unshare", "-rn", "bash", "-c", sweep], check=False, cwd=ROOT,
                              capture_output=True, text=True, timeout=400)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    table = [line for line in finished.stdout.splitlines() if line.startswith("| lr=")]
    assert sorted(line.split(" | ")[0] for line in table) == ["| lr=0.001", "| lr=0.003"]
    runs = sorted(path for path in (tmp_path / "grid").iterdir() if path.name.startswith("lr="))
    assert [run.name.split("__")[0] for run in runs] == ["lr=0.001", "lr=0.003"]
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["reason"] == "frame_budget" and summary["frames"] >= 5000
        assert any(run.glob("events.out.tfevents.*"))
    # Ray wrote its token and session files in the suite's own home, not the user's
    assert (Path.home() / ".ray" / "auth_token").exists() and real_ray_dir_unchanged()


def test_a_trial_reports_its_numbers_and_its_custom_metrics_nested_to_tune():
    result = {"frames": 10, "episode_reward_mean": 2.5, "done": True, "reason": "solved", "run_dir": "x",
              "custom_metrics": {"angle_mean": 0.1, "angle_max": 0.2}, "loss": None}
    assert reported(result) == {"frames": 10, "episode_reward_mean": 2.5, "done": True, "solved": True,
                                "custom_metrics": {"angle_mean": 0.1, "angle_max": 0.2}}
