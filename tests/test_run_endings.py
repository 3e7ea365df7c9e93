"""Ways a real training run ends: SIGINT, SIGTERM, resume, and refused resume files."""
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import torch

import a3c.cli
import a3c.train
from a3c.checkpoint import load_checkpoint, save_checkpoint
from tests.helpers import alive
from tests.test_end_to_end import ROOT, only_run_dir, run_trainer, scalars


def start_trainer(args: list[str], env: dict | None = None) -> tuple[subprocess.Popen, list[int]]:
    """Start ``run_a3c.py`` with two children and wait until both run and the learner has
    started its loop (its "run ..." line); (process, child pids).

    Two, whatever the core count gives, so that one can die while the other goes on.
    """
    process = subprocess.Popen([sys.executable, "run_a3c.py", *args, "--processes", "2"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first_line = process.stdout.readline()
    assert first_line.startswith("run "), first_line
    children: list[int] = []
    deadline = time.monotonic() + 60
    while len(children) < 2 and time.monotonic() < deadline:
        children = [c.pid for c in psutil.Process(process.pid).children()
                    if "resource_tracker" not in " ".join(c.cmdline())]
        time.sleep(0.2)
    assert len(children) == 2, "the children did not start"
    return process, children


MODES = ["data", "grads"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_saves_checkpoint_and_exits_fast_with_no_children(tmp_path, signum, exit_code, mode):
    process, children = start_trainer(["-n", "sig", "--env", "CartPole-v1", "--logdir", str(tmp_path),
                                       "--stop-reward", "1e9", "--mode", mode])
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
    for counter in ("frames", "episodes"):
        assert after["counters"][counter] > before["counters"][counter]
    assert after["policy_version"] > before["policy_version"]
    assert after["counters"]["frames"] >= 30000
    steps_before = before["optimizer"]["state"][0]["step"]
    assert after["optimizer"]["state"][0]["step"] > steps_before  # Adam moments went on
    assert f"resumed at frame {before['counters']['frames']:,}" in second.stdout
    points = [point.step for point in scalars(run_dir).Scalars("loss/total")]
    assert points == sorted(points)  # no restart at zero: later points follow earlier ones
    assert max(points) > before["counters"]["frames"]


def test_resume_refuses_damaged_foreign_or_mismatched_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(a3c.train, "WorkerPool", lambda *args: pytest.fail("a child was started"))
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


def test_a_logdir_that_cannot_be_created_exits_2_in_one_line_before_any_child(capsys, monkeypatch):
    monkeypatch.setattr(a3c.train, "WorkerPool", lambda *args: pytest.fail("a child was started"))
    # /proc takes no new directories, even from root, for whom the access check passes
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--logdir", "/proc/nope"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "--logdir '/proc/nope'" in stderr
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.timeout(120)
def test_second_ctrl_c_during_a_slow_shutdown_exits_at_once(tmp_path):
    # SlowClose children take 30 s to close their envs, so the first Ctrl-C's ordered
    # shutdown would wait its full 5 s join; the second one kills them and leaves.
    process, children = start_trainer(["-n", "twice", "--env", "tests.toy_envs:SlowClose-v0",
                                       "--logdir", str(tmp_path), "--stop-reward", "1e9"])
    time.sleep(2.0)
    process.send_signal(signal.SIGINT)
    time.sleep(1.0)
    second = time.monotonic()
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=30)
    assert time.monotonic() - second < 2.0
    assert process.returncode == 130, output
    assert "second interrupt" in output
    assert alive(children) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_killed_child_is_restarted_and_the_run_finishes(tmp_path, mode):
    process, children = start_trainer(["-n", "restart", "--env", "CartPole-v1", "--logdir", str(tmp_path),
                                       "--stop-reward", "1e9", "--max-frames", "200000", "--mode", mode])
    time.sleep(2.0)  # the budget lasts several seconds past this at 20k frames/s
    killed = time.monotonic()
    os.kill(children[0], signal.SIGKILL)
    output, _ = process.communicate(timeout=90)
    assert process.returncode == 0, output
    assert "worker 0 died with exit code -9; restarting it (1 of 3 restarts)" in output
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    assert summary["reason"] == "frame_budget" and summary["worker_restarts"] == 1
    assert summary["frames"] >= 200000
    assert time.monotonic() - killed < 60
    assert alive(children) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_restart_budget_spent_stops_with_the_traceback_and_a_checkpoint(tmp_path, mode):
    # Every Crashing child raises on its third step: two restarts, then the third death ends the run.
    result, descendants = run_trainer(["-n", "budget", "--env", "tests.toy_envs:Crashing-v0",
                                       "--logdir", str(tmp_path), "--max-worker-restarts", "2",
                                       "--mode", mode], timeout=90)
    assert result.returncode == 1, result.stdout
    assert "restarting it (2 of 2 restarts)" in result.stdout
    assert "no restarts left (2 allowed)" in result.stdout
    assert "toy env failure on purpose" in result.stdout
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "worker_died"
    assert load_checkpoint(run_dir / "checkpoint.pt")["counters"]["frames"] >= 0
    assert alive(descendants) == []


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", MODES)
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, mode):
    args = ["-n", "nan", "--env", "tests.toy_envs:NanReward-v0", "--logdir", str(tmp_path),
            "--stop-reward", "1e9", "--mode", mode]
    first, _ = run_trainer([*args, "--max-frames", "2000"], timeout=90)
    assert first.returncode == 0, first.stdout
    checkpoint = only_run_dir(tmp_path) / "checkpoint.pt"
    good = checkpoint.read_bytes()
    process = subprocess.Popen([sys.executable, "run_a3c.py", *args, "--resume", str(checkpoint)],
                               cwd=ROOT, env={**os.environ, "A3C_TOY_NAN_REWARD": "1"},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=90)
    assert process.returncode == 1, output
    assert "non-finite training signal" in output and "kept the last good checkpoint" in output
    assert checkpoint.read_bytes() == good
    assert json.loads((checkpoint.parent / "summary.json").read_text())["reason"] == "non_finite"


@pytest.mark.timeout(180)
def test_a_checkpoint_of_one_mode_resumes_in_the_other(tmp_path):
    first, _ = run_trainer(["-n", "modes", "--env", "CartPole-v1", "--max-frames", "8000",
                            "--logdir", str(tmp_path)], timeout=90)
    assert first.returncode == 0, first.stdout
    checkpoint = only_run_dir(tmp_path) / "checkpoint.pt"
    frames = load_checkpoint(checkpoint)["counters"]["frames"]
    second, _ = run_trainer(["-n", "modes", "--env", "CartPole-v1", "--max-frames", "16000", "--mode", "grads",
                             "--logdir", str(tmp_path), "--resume", str(checkpoint)], timeout=90)
    assert second.returncode == 0, second.stdout
    after = load_checkpoint(checkpoint)
    assert after["counters"]["frames"] >= 16000 > frames
    assert after["config"]["mode"] == "grads"
