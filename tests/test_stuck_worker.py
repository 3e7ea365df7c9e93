"""A worker that sends nothing for ``--worker-timeout`` seconds while the learner reads the
others is named, killed and restarted, once; one stopped for less than that is left alone."""
import json
import os
import signal
import time

import pytest

from tests.helpers import alive, only_run_dir


def run_to_the_end(trainer) -> dict:
    assert trainer.finish(timeout=120) == 0, trainer.output
    assert alive(trainer.descendants) == []
    return json.loads((only_run_dir(trainer.logdir) / "summary.json").read_text())


@pytest.mark.timeout(150)
def test_a_worker_whose_env_hangs_is_named_killed_and_restarted_once(launch, tmp_path):
    env = {**os.environ, "A3C_TOY_HANG_FILE": str(tmp_path / "hung")}
    trainer = launch(["-n", "hang", "--env", "tests.toy_envs:HangOnce-v0", "--processes", "2", "--logdir",
                      str(tmp_path / "runs"), "--stop-reward", "1e9", "--max-seconds", "13",
                      "--worker-timeout", "6"], env=env)  # the other worker alone goes on sending meanwhile
    # 6 s: a replacement imports torch before its first message, slower on a loaded machine
    line = trainer.wait_for("taken for stuck and killed")
    assert "sent nothing for 6 s (--worker-timeout 6)" in line or "sent nothing for 7 s" in line, line
    assert "restarting it (1 of 3 restarts)" in line
    trainer.logdir = tmp_path / "runs"
    summary = run_to_the_end(trainer)
    assert summary["reason"] == "time_budget" and summary["worker_restarts"] == 1
    assert trainer.output.count("taken for stuck") == 1


@pytest.mark.timeout(150)
def test_a_worker_stopped_for_less_than_the_timeout_is_left_alone(launch, tmp_path):
    trainer = launch(["-n", "pause", "--env", "CartPole-v1", "--processes", "2", "--logdir", str(tmp_path),
                      "--stop-reward", "1e9", "--max-seconds", "8", "--worker-timeout", "4",
                      "--report-interval", "1"])
    trainer.wait_for("frames/s")  # the workers are up and sending
    worker = trainer.children()[0]
    os.kill(worker, signal.SIGSTOP)
    time.sleep(2)  # the silence being made, not waited for: half the timeout
    os.kill(worker, signal.SIGCONT)
    trainer.logdir = tmp_path
    summary = run_to_the_end(trainer)
    assert summary["reason"] == "time_budget" and summary["worker_restarts"] == 0
    assert "taken for stuck" not in trainer.output
