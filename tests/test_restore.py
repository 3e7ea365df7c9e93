"""Restore as RLlib's: ``trainer.restore(path)`` in place (weights, optimizer, counters,
``training_iteration`` going on), ``Trainer.from_checkpoint(path)`` and the class form
``Trainer.restore(path)`` a new trainer; ``--resume CKPT`` alone takes the env, algorithm
and settings from the checkpoint, a flag beside it overrides."""
import json

import pytest
import torch

import a3c.cli
from a3c import ConfigError, Trainer
from a3c.config import parse_config
from tests.helpers import only_run_dir

COUNTING = "tests.toy_envs:Counting-v0"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A checkpoint after three iterations of a serial CartPole run, and its weights."""
    folder = tmp_path_factory.mktemp("saved")
    with Trainer(env="CartPole-v1", backend="serial", logdir=str(folder), stop_reward=1e9) as trainer:
        for _ in range(3):
            result = trainer.train(frames=300)
        path = trainer.save()
        weights = {name: tensor.clone() for name, tensor in trainer.net.state_dict().items()}
    return path, weights, result


def same_weights(net, weights) -> bool:
    return all(torch.equal(tensor, weights[name]) for name, tensor in net.state_dict().items())


@pytest.mark.parametrize("started", [False, True], ids=["before-the-first-train", "mid-run"])
def test_restore_on_a_trainer_goes_on_in_place_from_the_checkpoint(tmp_path, saved, started):
    path, weights, before = saved
    with Trainer(env="CartPole-v1", backend="serial", logdir=str(tmp_path), stop_reward=1e9) as trainer:
        if started:
            trainer.train(frames=100)
        assert not same_weights(trainer.net, weights)
        assert trainer.restore(path) is None
        assert same_weights(trainer.net, weights)
        result = trainer.train(frames=100)
    assert result["training_iteration"] == before["training_iteration"] + 1 == 4
    assert result["frames"] >= before["frames"] and result["episodes_total"] >= before["episodes_total"]
    assert result["run_dir"].startswith(str(tmp_path))  # the trainer's own folder, not the checkpoint's


@pytest.mark.parametrize("started", [False, True], ids=["before-the-first-train", "mid-run"])
def test_a_restore_takes_the_optimizers_moments_and_keeps_its_own_learning_rate(tmp_path, started):
    """DQN's Adam keeps the rate it was made with (A3C's and PPO's set theirs each step): the
    saved optimizer brought the saved run's rate back, so --lr beside --resume, or PBT's
    perturbed lr, did nothing."""
    with Trainer(env="CartPole-v1", algo="dqn", backend="serial", logdir=str(tmp_path / "a"), lr=1e-3,
                 learning_starts=100, stop_reward=1e9) as trainer:
        trainer.train(frames=400)
        path = trainer.save()
        moments = trainer._run.learner.optimizer.state_dict()["state"][0]["exp_avg"].clone()
    with Trainer(env="CartPole-v1", algo="dqn", backend="serial", logdir=str(tmp_path / "b"), lr=4e-4,
                 learning_starts=100, stop_reward=1e9) as trainer:
        if started:
            trainer.train(frames=100)
        trainer.restore(path)
        optimizer = trainer._learner_state().learner.optimizer
        assert torch.equal(optimizer.state_dict()["state"][0]["exp_avg"], moments)  # the saved moments
        assert trainer.train(frames=100)["cur_lr"] == 4e-4  # and this run's rate


def test_restore_refuses_another_envs_checkpoint_in_one_line(tmp_path, saved):
    with Trainer(env=COUNTING, backend="serial", logdir=str(tmp_path)) as trainer, \
            pytest.raises(ConfigError, match="restore: checkpoint was trained on CartPole-v1, this run is"):
        trainer.restore(saved[0])


def test_the_class_forms_make_a_new_trainer_that_goes_on(saved):
    path, weights, before = saved
    for make in (Trainer.from_checkpoint, Trainer.restore):
        trainer = make(path, max_frames=10**6)
        assert isinstance(trainer, Trainer) and same_weights(trainer.net, weights)
        assert trainer.train(frames=100)["training_iteration"] == before["training_iteration"] + 1
        trainer.stop()


def test_resume_alone_takes_the_env_algorithm_and_settings_from_the_checkpoint(tmp_path):
    with Trainer(env="Pendulum-v1", algo="sac", backend="serial", logdir=str(tmp_path), name="pend", tau=0.01,
                 learning_starts=100) as trainer:
        trainer.train(frames=200)
        path = trainer.save()
    config = parse_config(["--resume", str(path)])
    assert (config.env_id, config.algo, config.tau, config.backend, config.name) == (
        "Pendulum-v1", "sac", 0.01, "serial", "pend")
    assert config.logdir == str(tmp_path.resolve())  # in place: the checkpoint's run folder goes on
    overridden = parse_config(["--resume", str(path), "--tau", "0.02", "--max-seconds", "5"])
    assert (overridden.tau, overridden.max_seconds, overridden.algo) == (0.02, 5.0, "sac")


@pytest.mark.timeout(120)
def test_the_command_resumes_a_sac_checkpoint_given_alone_and_refuses_another_env(tmp_path, capsys):
    with Trainer(env="Pendulum-v1", algo="sac", backend="serial", logdir=str(tmp_path), name="pend",
                 learning_starts=100) as trainer:
        trainer.train(frames=200)
        path = trainer.save()
    # the command's code in this process (run_a3c.py exits with what it returns)
    assert a3c.cli.main(["--resume", str(path), "--max-seconds", "2"]) == 0
    output = capsys.readouterr().out
    assert "Pendulum-v1 | sac" in output and "resumed at frame" in output
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    assert summary["reason"] == "time_budget" and summary["training_iteration"] >= 2
    with pytest.raises(SystemExit) as refused:
        a3c.cli.main(["--resume", str(path), "--env", "MountainCarContinuous-v0"])
    assert refused.value.code == 2
    said = capsys.readouterr().err
    assert "--resume: checkpoint was trained on Pendulum-v1, this run is MountainCarContinuous-v0" in said


def test_a_run_name_is_still_needed_without_resume(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_config(["--env", "CartPole-v1"])
    assert exited.value.code == 2 and "required: -n/--name" in capsys.readouterr().err


def test_every_spelling_of_the_run_name_counts_as_given():
    assert [parse_config([*name, "--env", "CartPole-v1"]).name for name in (["-nx"], ["-n", "x"], ["--name=x"])] == \
        ["x"] * 3
