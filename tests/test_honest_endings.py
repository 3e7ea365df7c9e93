"""What a run writes and says at its end is true: JSON files every parser reads (a
non-finite figure as null, named under ``non_finite``), a closing line that names only a
checkpoint that exists, and ``Trainer.save`` writing the file it is given."""
import json
import math

import pytest

import a3c.cli
from a3c import Trainer
from a3c.cli import checkpoint_said
from a3c.lifecycle.strict_json import strict_dumps


def strict_loads(text: str):
    """json.loads as jq and JavaScript read: NaN and Infinity are errors."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_figures_are_written_as_null_and_named_with_what_they_were():
    text = strict_dumps({"reason": "non_finite", "mean_reward_100": math.inf, "frames": 12,
                         "custom_metrics": {"angle": math.nan, "ok": 1.5}, "curve": [1.0, -math.inf]})
    written = strict_loads(text)
    assert written["mean_reward_100"] is None and written["custom_metrics"] == {"angle": None, "ok": 1.5}
    assert written["curve"] == [1.0, None] and written["frames"] == 12
    assert written["non_finite"] == {"mean_reward_100": "inf", "custom_metrics.angle": "nan", "curve[1]": "-inf"}
    assert "non_finite" not in strict_loads(strict_dumps({"mean_reward_100": 3.0}))


def test_the_closing_line_names_a_checkpoint_only_where_one_exists(tmp_path):
    assert checkpoint_said({"run_dir": str(tmp_path), "reason": "non_finite"}) == "no checkpoint was written"
    (tmp_path / "checkpoint.pt").write_bytes(b"")
    path = tmp_path / "checkpoint.pt"
    assert checkpoint_said({"run_dir": str(tmp_path), "reason": "non_finite"}) == f"kept the last good checkpoint {path}"
    assert checkpoint_said({"run_dir": str(tmp_path), "reason": "solved"}) == f"saved {path}"


@pytest.mark.parametrize(("given", "written"), [("x/ck.pt", "x/ck.pt"), ("x/folder", "x/folder/checkpoint.pt")])
def test_trainer_save_writes_a_pt_path_itself_and_a_folder_its_checkpoint(tmp_path, given, written):
    with Trainer(env="CartPole-v1", backend="serial", logdir=str(tmp_path / "runs")) as trainer:
        path = trainer.save(tmp_path / given)
    assert path == tmp_path / written and path.is_file()
    assert not (tmp_path / "x" / "ck.pt").is_dir()
    Trainer.restore(path).stop()  # a checkpoint the trainer reads back


@pytest.mark.timeout(120)
def test_a_run_whose_rewards_become_infinite_says_no_false_saved_and_writes_strict_json(tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.setenv("A3C_TOY_NAN_REWARD", "inf")  # every reward infinite from the first step, in the workers too
    # the command's code in this process (run_a3c.py exits with what it returns)
    assert a3c.cli.main(["-n", "inf", "--env", "tests.toy_envs:NanReward-v0", "--logdir", str(tmp_path),
                         "--stop-reward", "1e9", "--max-frames", "20000",
                         "--batch-size", "512"]) == 1  # episodes end before the first step
    output = capsys.readouterr().out
    (run_dir,) = tmp_path.iterdir()
    closing = [line for line in output.splitlines() if line.startswith("non_finite:")]
    assert closing and closing[0].endswith("no checkpoint was written"), output
    assert not (run_dir / "checkpoint.pt").exists()
    summary = strict_loads((run_dir / "summary.json").read_text())
    assert summary["reason"] == "non_finite" and summary["episodes"] > 0
    assert summary["mean_reward_100"] is None and summary["non_finite"] == {"mean_reward_100": "inf"}
    for line in (run_dir / "progress.jsonl").read_text().splitlines():
        strict_loads(line)


def test_a_resumed_run_writes_where_its_name_and_logdir_say_and_leaves_the_old_folder_alone(tmp_path):
    with Trainer(env="CartPole-v1", name="first", backend="serial", logdir=str(tmp_path), max_frames=400) as trainer:
        while not trainer.train()["done"]:
            pass
    (first,) = tmp_path.iterdir()
    checkpoint = first / "checkpoint.pt"
    saved, files = checkpoint.read_bytes(), sorted(path.name for path in first.iterdir())
    with Trainer.restore(checkpoint, name="second", max_frames=800) as trainer:
        assert trainer.run_dir.parent == tmp_path and trainer.run_dir.name.startswith("second__")
        while not (result := trainer.train())["done"]:
            pass
    assert result["frames"] >= 800 and (trainer.run_dir / "checkpoint.pt").is_file()
    assert checkpoint.read_bytes() == saved and sorted(path.name for path in first.iterdir()) == files
    with Trainer.restore(checkpoint, max_frames=800) as trainer:  # no other name: in its own folder
        assert trainer.run_dir == first
