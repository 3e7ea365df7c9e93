"""Ways a real training run ends: SIGINT, SIGTERM, resume, and refused resume files."""
import json
import signal
import subprocess
import sys
import time

import psutil
import pytest
import torch

import a3c.cli
from a3c.checkpoint import load_checkpoint, save_checkpoint
from tests.helpers import alive
from tests.test_end_to_end import ROOT, only_run_dir, run_trainer, scalars


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_saves_checkpoint_and_exits_fast_with_no_children(tmp_path, signum, exit_code):
    process = subprocess.Popen(
        [sys.executable, "run_a3c.py", "-n", "sig", "--env", "CartPole-v1", "--logdir", str(tmp_path),
         "--stop-reward", "1e9"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    children = []
    deadline = time.monotonic() + 60
    while len(children) < 2 and time.monotonic() < deadline:  # wait for both children to run
        children = [c.pid for c in psutil.Process(process.pid).children() if "resource_tracker"
                    not in " ".join(c.cmdline())]
        time.sleep(0.2)
    time.sleep(3.0)
    sent = time.monotonic()
    process.send_signal(signum)
    output, _ = process.communicate(timeout=30)
    assert time.monotonic() - sent < 10.0
    assert process.returncode == exit_code, output
    assert alive(children) == []
    run_dir = only_run_dir(tmp_path)
    assert load_checkpoint(run_dir / "checkpoint.pt")["counters"]["frames"] > 0
    reason = json.loads((run_dir / "summary.json").read_text())["reason"]
    assert reason == {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}[signum]


@pytest.mark.timeout(300)
def test_resume_continues_counters_optimizer_and_tensorboard_steps(tmp_path):
    first, _ = run_trainer(["-n", "resume", "--env", "CartPole-v1", "--max-frames", "15000",
                            "--logdir", str(tmp_path)], timeout=120)
    assert first.returncode == 0, first.stdout
    run_dir = only_run_dir(tmp_path)
    before = load_checkpoint(run_dir / "checkpoint.pt")
    second, _ = run_trainer(["-n", "resume", "--env", "CartPole-v1", "--max-frames", "30000",
                             "--logdir", str(tmp_path), "--resume", str(run_dir / "checkpoint.pt")],
                            timeout=120)
    assert second.returncode == 0, second.stdout
    assert only_run_dir(tmp_path) == run_dir  # the same run goes on
    after = load_checkpoint(run_dir / "checkpoint.pt")
    for counter in ("frames", "episodes", "optimizer_steps"):
        assert after["counters"][counter] > before["counters"][counter]
    assert after["counters"]["frames"] >= 30000
    steps_before = before["optimizer"]["state"][0]["step"]
    assert after["optimizer"]["state"][0]["step"] > steps_before  # Adam moments went on
    assert f"resumed at frame {before['counters']['frames']:,}" in second.stdout
    points = [point.step for point in scalars(run_dir).Scalars("loss/total")]
    assert points == sorted(points)  # no restart at zero: later points follow earlier ones
    assert max(points) > before["counters"]["frames"]


def test_resume_refuses_damaged_foreign_or_mismatched_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(a3c.cli, "train", lambda config: pytest.fail("training started"))
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00" * 64)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {}}, foreign)
    cartpole = tmp_path / "cartpole.pt"
    save_checkpoint(cartpole, {"config": {"env_id": "CartPole-v1"}, "model": {}})
    cases = [(tmp_path / "missing.pt", "does not exist"), (garbage, "not a readable checkpoint"),
             (foreign, "not a checkpoint of this project"), (cartpole, "trained on CartPole-v1"),
             ]
    for path, reason in cases:
        with pytest.raises(SystemExit) as exited:
            a3c.cli.main(["-n", "x", "--env", "Acrobot-v1", "--resume", str(path)])
        stderr = capsys.readouterr().err
        assert exited.value.code == 2 and reason in stderr and len(stderr.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--resume", str(cartpole)])
    assert "network differs" in capsys.readouterr().err
