"""A worker that sends nothing for ``--worker-timeout`` seconds while the learner reads the
others is named, killed and restarted, once; one stopped for less than that is left alone."""
import json
import os
import signal
import threading
import time

import pytest

from a3c import ConsoleReporter, Trainer
from a3c.lib.trackers import ages_text
from tests.helpers import alive, only_run_dir, pids


def run_to_the_end(trainer) -> dict:
    assert trainer.finish(timeout=120) == 0, trainer.output
    assert alive(trainer.descendants) == []
    return json.loads((only_run_dir(trainer.logdir) / "summary.json").read_text())


@pytest.mark.timeout(150)
def test_a_worker_whose_env_hangs_is_named_killed_and_restarted_once(run_command, tmp_path, monkeypatch):
    monkeypatch.setenv("A3C_TOY_HANG_FILE", str(tmp_path / "hung"))
    # 4 s: a replacement, forked from the fork server, sends well within it on a loaded machine;
    # the other worker alone goes on sending meanwhile
    run = run_command(["-n", "hang", "--env", "tests.toy_envs:HangOnce-v0", "--processes", "2", "--logdir",
                       str(tmp_path / "runs"), "--stop-reward", "1e9", "--max-seconds", "10", "--worker-timeout", "4"])
    assert run.code == 0, run.output
    (line,) = [line for line in run.output.splitlines() if "taken for stuck and killed" in line]
    assert "sent nothing for 4 s (--worker-timeout 4)" in line or "sent nothing for 5 s" in line, line
    assert "restarting it (1 of 3 restarts)" in line
    assert len(run.workers) == 3 and alive(run.workers) == []  # two, and the hung one's replacement
    summary = json.loads((only_run_dir(tmp_path / "runs") / "summary.json").read_text())
    assert summary["reason"] == "time_budget" and summary["worker_restarts"] == 1


@pytest.mark.timeout(150)
def test_a_worker_stopped_for_less_than_the_timeout_is_left_alone(tmp_path, capsys):
    def stop_for_two_seconds(worker: int) -> None:  # the silence being made, not waited for: half the timeout
        os.kill(worker, signal.SIGSTOP)
        time.sleep(2)
        os.kill(worker, signal.SIGCONT)

    with Trainer(env="tests.toy_envs:Paced-v0", processes=2, logdir=str(tmp_path), stop_reward=1e9, max_seconds=8,
                 worker_timeout=4, report_interval=1, reporter=ConsoleReporter()) as trainer:
        while trainer.train()["frames"] == 0:  # the workers are up and sending
            pass
        children = pids(trainer._pool)
        stopper = threading.Thread(target=stop_for_two_seconds, args=(children[0],))
        stopper.start()  # while the learner goes on reading the other worker
        while not (result := trainer.train())["done"]:
            pass
        stopper.join()
    assert result["reason"] == "time_budget" and result["worker_restarts"] == 0
    output = capsys.readouterr()
    assert "s ago" in output.out  # the progress lines show each worker's last message age
    assert "taken for stuck" not in output.out + output.err
    assert alive(children) == []


def test_the_progress_line_gives_each_workers_last_message_age_or_the_oldest_of_many():
    assert ages_text([]) == ""
    assert ages_text([0.04, 2.26]) == " | last message 0.0, 2.3 s ago"
    many = [0.1] * 9
    many[6] = 4.0
    assert ages_text(many) == " | last message up to 4.0 s ago (worker 6)"


@pytest.mark.timeout(120)
def test_a_serial_worker_whose_env_hangs_is_named_closed_and_restarted_once(launch, tmp_path):
    env = {**os.environ, "A3C_TOY_HANG_FILE": str(tmp_path / "hung")}
    trainer = launch(["-n", "hang", "--env", "tests.toy_envs:HangOnce-v0", "--backend", "serial", "--processes", "2",
                      "--logdir", str(tmp_path / "runs"), "--stop-reward", "1e9", "--max-seconds", "5",
                      "--worker-timeout", "2"], env=env)  # the serial workers are the learner's own thread
    line = trainer.wait_for("taken for stuck")
    assert "spent more than 2 s in one step of its envs (--worker-timeout 2)" in line, line
    assert "restarting it (1 of 3 restarts)" in line
    trainer.logdir = tmp_path / "runs"
    summary = run_to_the_end(trainer)
    assert summary["reason"] == "time_budget" and summary["worker_restarts"] == 1
