"""Ways a real training run ends: SIGINT, SIGTERM, resume, and refused resume files."""
import json
import os
import signal
import subprocess
import sys

import psutil
import pytest
import torch

import a3c.cli
import a3c.lifecycle.trainer
from a3c.lib.envs import describe_env
from a3c.lib.models import build_net
from a3c.lifecycle.checkpoint import load_checkpoint, save_checkpoint
from a3c.lifecycle.trainer import exit_code
from tests.conftest import ROOT, RUN_A3C, Trainer
from tests.helpers import alive, only_run_dir, pids, scalars
from tests.test_honest_endings import strict_loads

PROGRESS = "mean-100 reward"
"""In every console progress line: the learner's loop is running on the children's data."""


def trained(line: str) -> bool:
    """A progress line with frames counted: the learner has taken the children's data (on a
    loaded machine the first lines can still say ``frames 0``)."""
    return PROGRESS in line and line.startswith("frames ") and line.split()[1] != "0"


def start_two_children(launch, args: list[str], env: dict | None = None) -> tuple[Trainer, list[int]]:
    """Start the trainer with two children, progress each second, and wait for a progress
    line with frames counted; (trainer, child pids). Two, whatever the core count gives, so
    that one can die while the other goes on."""
    trainer = launch([*args, "--processes", "2", "--report-interval", "1"], env)
    trainer.wait_for(trained)
    return trainer, trainer.wait_for_children(2)


MODES = ["data", "grads"]


def run_to_the_end(**settings) -> dict:
    """A run in this process (the trainer's own process boundary is not what the test is
    about), trained until it ends; its last result."""
    with a3c.lifecycle.trainer.Trainer(**settings) as trainer:
        while not (result := trainer.train())["done"]:
            pass
    return result


@pytest.mark.timeout(120)
# each signal once, each mode once: the ending does not depend on the mode's messages
@pytest.mark.parametrize("mode, signum, exit_code", [("data", signal.SIGINT, 130), ("grads", signal.SIGTERM, 143)])
def test_signal_saves_checkpoint_and_exits_with_no_children(launch, tmp_path, signum, exit_code, mode):
    trainer, children = start_two_children(launch, ["-n", "sig", "--env", "tests.toy_envs:Paced-v0", "--logdir",
                                                    str(tmp_path), "--stop-reward", "1e9", "--mode", mode])
    trainer.process.send_signal(signum)
    assert trainer.finish(timeout=60) == exit_code, trainer.output
    assert alive(children) == []
    run_dir = only_run_dir(tmp_path)
    assert load_checkpoint(run_dir / "checkpoint.pt")["counters"]["frames"] > 0
    reason = json.loads((run_dir / "summary.json").read_text())["reason"]
    assert reason == {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}[signum]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_children_of_a_trainer_killed_outright_leave_on_their_own(launch, tmp_path, mode):
    # SIGKILL leaves no time to set the stop event: the children must notice that their parent
    # is gone, also while they wait on a full queue or for a free slot that no one will free
    trainer, children = start_two_children(launch, ["-n", "orphan", "--env", "CartPole-v1", "--logdir",
                                                    str(tmp_path), "--stop-reward", "1e9", "--mode", mode])
    trainer.process.kill()
    trainer.process.wait()
    assert alive(children, grace=10.0) == []


@pytest.mark.timeout(300)
def test_resume_continues_counters_optimizer_and_tensorboard_steps(tmp_path, capsys):
    run_to_the_end(name="resume", env="CartPole-v1", max_frames=15_000, logdir=str(tmp_path))
    run_dir = only_run_dir(tmp_path)
    before = load_checkpoint(run_dir / "checkpoint.pt")
    # the command's code in this process (run_a3c.py exits with what it returns)
    assert a3c.cli.main(["-n", "resume", "--env", "CartPole-v1", "--max-frames", "30000",
                         "--logdir", str(tmp_path), "--resume", str(run_dir / "checkpoint.pt")]) == 0
    output = capsys.readouterr().out
    assert only_run_dir(tmp_path) == run_dir  # the same run goes on
    after = load_checkpoint(run_dir / "checkpoint.pt")
    for counter in ("frames", "episodes"):
        assert after["counters"][counter] > before["counters"][counter]
    assert after["policy_version"] > before["policy_version"]
    assert after["counters"]["frames"] >= 30000
    # Adam went on from its saved state: its step count is the first run's plus the second's
    # (a fresh optimizer would count only the second run's steps)
    steps_before = int(before["optimizer"]["state"][0]["step"])
    steps_taken = after["policy_version"] - before["policy_version"]
    assert int(after["optimizer"]["state"][0]["step"]) == steps_before + steps_taken
    assert f"resumed at frame {before['counters']['frames']:,}" in output
    points = [point.step for point in scalars(run_dir).Scalars("loss/total")]
    assert points == sorted(points)  # no restart at zero: later points follow earlier ones
    assert max(points) > before["counters"]["frames"]


def test_resume_refuses_damaged_foreign_or_mismatched_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(a3c.lifecycle.trainer, "make_pool", lambda *args, **kwargs: pytest.fail("a child was started"))
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


def test_resuming_a_small_net_checkpoint_at_the_defaults_names_the_flags_of_its_net(tmp_path, capsys,
                                                                                     monkeypatch):
    monkeypatch.setattr(a3c.lifecycle.trainer, "make_pool", lambda *args, **kwargs: pytest.fail("a child was started"))
    small = tmp_path / "small.pt"
    net = build_net(describe_env("PongNoFrameskip-v4"), heads="shared", conv="small")
    save_checkpoint(small, {"config": {"env_id": "PongNoFrameskip-v4", "heads": "shared", "conv": "small"},
                            "model": net.state_dict()})
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--resume", str(small), "--heads", "separate", "--conv", "nature"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and len(stderr.strip().splitlines()) == 1
    assert "network differs at conv.0.weight" in stderr
    assert "(the checkpoint's net: --heads shared --conv small)" in stderr


def test_resuming_a_128_unit_checkpoint_with_the_mujoco_preset_names_its_width(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(a3c.lifecycle.trainer, "make_pool", lambda *args, **kwargs: pytest.fail("a child was started"))
    narrow = tmp_path / "narrow.pt"
    net = build_net(describe_env("Pendulum-v1"), normalize_observations=True)  # --preset box's net
    save_checkpoint(narrow, {"config": {"env_id": "Pendulum-v1", "algo": "ppo", "normalize_observations": True,
                                        "mlp_hidden": 128, "log_std_init": 0.0}, "model": net.state_dict()})
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "Pendulum-v1", "--algo", "ppo", "--preset", "mujoco", "--resume", str(narrow)])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "network differs at policy.0.weight" in stderr
    assert "--mlp-hidden 128 --log-std-init 0.0)" in stderr


def test_a_logdir_that_cannot_be_created_exits_2_in_one_line_before_any_child(capsys, monkeypatch):
    monkeypatch.setattr(a3c.lifecycle.trainer, "make_pool", lambda *args, **kwargs: pytest.fail("a child was started"))
    # /proc takes no new directories, even from root, for whom the access check passes
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--logdir", "/proc/nope"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "--logdir '/proc/nope'" in stderr
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.timeout(120)
def test_second_ctrl_c_during_a_slow_shutdown_exits_at_once(launch, tmp_path):
    # SlowClose children take 30 s to close their envs, so the first Ctrl-C's ordered
    # shutdown would wait its full 5 s join; the second one kills them and leaves, with the
    # checkpoint and summary the first one saved before stopping them.
    trainer, children = start_two_children(launch, ["-n", "twice", "--env", "tests.toy_envs:SlowClose-v0",
                                                    "--logdir", str(tmp_path), "--stop-reward", "1e9"])
    trainer.process.send_signal(signal.SIGINT)
    trainer.wait_for("checkpoint saved; stopping the children")
    trainer.process.send_signal(signal.SIGINT)
    assert trainer.finish(timeout=60) == 130, trainer.output
    assert "second interrupt" in trainer.output
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "interrupted"
    assert load_checkpoint(run_dir / "checkpoint.pt")["counters"]["frames"] > 0
    assert alive(children) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_killed_child_is_restarted_and_the_run_finishes(tmp_path, mode, capsys):
    # a frame budget, which a child's slow start on a loaded machine does not spend; short
    # iterations, so that the one that restarts the child does not also spend it
    with a3c.lifecycle.trainer.Trainer(env="CartPole-v1", logdir=str(tmp_path), stop_reward=1e9,
                                       max_frames=60_000, mode=mode, processes=2) as trainer:
        trainer.train(frames=1)
        children = pids(trainer._pool)
        os.kill(children[0], signal.SIGKILL)
        while (result := trainer.train(seconds=0.2))["worker_restarts"] == 0:
            assert not result["done"], result
        restarted = pids(trainer._pool)
        assert set(restarted) != set(children)
        while not (result := trainer.train())["done"]:
            pass
    assert "worker 0 died with exit code -9; restarting it (1 of 3 restarts)" in capsys.readouterr().err
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    assert summary["reason"] == "frame_budget" and summary["worker_restarts"] == 1
    assert alive(restarted) == [] and alive(children) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_restart_budget_spent_stops_with_the_traceback_and_a_checkpoint(tmp_path, mode, capsys):
    # Every Crashing child raises on its third step: two restarts, then the third death ends the run.
    result = run_to_the_end(name="budget", env="tests.toy_envs:Crashing-v0", logdir=str(tmp_path),
                            max_worker_restarts=2, mode=mode)
    assert result["reason"] == "worker_died" and exit_code(result["reason"]) == 1
    assert "no restarts left (2 allowed)" in result["message"]
    assert "toy env failure on purpose" in result["message"]
    assert "restarting it (2 of 2 restarts)" in capsys.readouterr().err
    run_dir = only_run_dir(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["reason"] == "worker_died" and summary["worker_restarts"] == 2
    assert load_checkpoint(run_dir / "checkpoint.pt")["counters"] == {
        name: summary[name] for name in ("frames", "transitions", "episodes", "worker_restarts", "rollbacks",
                                         "training_iteration")}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", MODES)
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, mode, monkeypatch):
    settings = {"name": "nan", "env": "tests.toy_envs:NanReward-v0", "logdir": str(tmp_path),
                "stop_reward": 1e9, "mode": mode}
    run_to_the_end(**settings, max_frames=2_000)
    checkpoint = only_run_dir(tmp_path) / "checkpoint.pt"
    good = checkpoint.read_bytes()
    monkeypatch.setenv("A3C_TOY_NAN_REWARD", "1")  # the children, spawned after this, see it
    with a3c.lifecycle.trainer.Trainer.restore(checkpoint, max_frames=None) as trainer:
        while not (result := trainer.train())["done"]:
            pass
    assert result["reason"] == "non_finite" and exit_code(result["reason"]) == 1
    assert "non-finite training signal" in result["message"]
    assert "kept the last good checkpoint" in result["message"]
    assert checkpoint.read_bytes() == good
    summary = strict_loads((checkpoint.parent / "summary.json").read_text())  # no NaN: JSON every parser reads
    assert summary["reason"] == "non_finite"


@pytest.mark.timeout(180)
def test_a_checkpoint_of_one_mode_resumes_in_the_other(tmp_path):
    run_to_the_end(name="modes", env="CartPole-v1", max_frames=8_000, logdir=str(tmp_path))
    checkpoint = only_run_dir(tmp_path) / "checkpoint.pt"
    frames = load_checkpoint(checkpoint)["counters"]["frames"]
    with a3c.lifecycle.trainer.Trainer.restore(checkpoint, max_frames=16_000, mode="grads") as trainer:
        while not trainer.train()["done"]:
            pass
    after = load_checkpoint(checkpoint)
    assert after["counters"]["frames"] >= 16000 > frames
    assert after["config"]["mode"] == "grads"


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (``SigCgt`` in /proc)."""
    with open(f"/proc/{pid}/status") as status:
        caught = next(line for line in status if line.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) >> (signum - 1) & 1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_in_the_first_instant_of_start_up_ends_the_run_with_nothing_started(tmp_path, signum, exit_code):
    """Started as a shell starts a background job (SIGINT ignored), signalled as soon as the
    command catches the signal, while it still imports: the run ends with the signal's code,
    no child, no run folder, one line saying so."""
    ignoring = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")  # SIG_IGN outlives exec
    before = set(psutil.Process().children(recursive=True))
    process = subprocess.Popen([sys.executable, "-c", ignoring, *RUN_A3C[1:], "-n", "early", "--env", "CartPole-v1",
                                "--logdir", str(tmp_path)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (psutil.Process(process.pid).cmdline()[1:2] == RUN_A3C[1:] and catches(process.pid, signum)):
            assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=50)
    finally:
        process.kill()
    assert process.returncode == exit_code, stdout + stderr
    reason = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}[signum]
    assert stderr.strip().splitlines() == [f"{reason} before the run started: nothing was written"]
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []
    assert set(psutil.Process().children(recursive=True)) - before == set()  # nothing of the run's left
