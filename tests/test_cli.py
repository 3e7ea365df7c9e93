"""Bad input: one line on stderr, exit code 2, and no child process ever started."""
import pytest
import torch

import a3c.cli
from a3c.config import ATARI_PRESET, VECTOR_PRESET, parse_config

BAD_INPUTS = [
    (["--env", "CartPole-v1"], "-n/--name"),
    (["-n", "x", "--env", "NoSuchEnv-v9"], "unknown env id"),
    (["-n", "x", "--env", "Pendulum-v1"], "Discrete"),
    (["-n", "x", "--env", "MountainCarContinuous-v0"], "Discrete"),
    (["-n", "x", "--env", "Blackjack-v1"], "observation space"),
    (["-n", "x", "--env", "CartPole-v1", "--processes", "0"], "--processes"),
    (["-n", "x", "--env", "CartPole-v1", "--envs-per-process", "0"], "--envs-per-process"),
    (["-n", "x", "--env", "CartPole-v1", "--batch-size", "0"], "--batch-size"),
    (["-n", "x", "--env", "CartPole-v1", "--reward-steps", "0"], "--reward-steps"),
    (["-n", "x", "--env", "CartPole-v1", "--gamma", "0"], "--gamma"),
    (["-n", "x", "--env", "CartPole-v1", "--gamma", "1.5"], "--gamma"),
    (["-n", "x", "--env", "CartPole-v1", "--lr", "0"], "--lr"),
    (["-n", "x", "--env", "CartPole-v1", "--lr", "-1e-3"], "--lr"),
    (["-n", "x", "--env", "CartPole-v1", "--clip-grad", "0"], "--clip-grad"),
    (["-n", "x", "--env", "CartPole-v1", "--max-frames", "0"], "--max-frames"),
    (["-n", "x", "--env", "CartPole-v1", "--max-worker-restarts", "-1"], "--max-worker-restarts"),
    (["-n", "x", "--env", "CartPole-v1", "--mode", "both"], "--mode"),
    (["-n", "x", "--env", "CartPole-v1", "--grad-batch", "0"], "--grad-batch"),
    (["-n", "x", "--env", "CartPole-v1", "--max-policy-lag", "-1"], "--max-policy-lag"),
    (["-n", "x", "--env", "CartPole-v1", "--max-seconds", "0"], "--max-seconds"),
    (["-n", "x", "--env", "CartPole-v1", "--learner-threads", "-1"], "--learner-threads"),
    (["-n", "x", "--env", "CartPole-v1", "--save-every", "0"], "--save-every"),
    (["-n", "x", "--env", "CartPole-v1", "--queue-size", "-1"], "--queue-size"),
    (["-n", "x", "--env", "CartPole-v1", "--logdir", "/etc/hostname/runs"], "--logdir"),
    (["-n", "x", "--env", "CartPole-v1", "--processes", "two"], "--processes"),
]
if not torch.cuda.is_available():
    BAD_INPUTS.append((["-n", "x", "--env", "CartPole-v1", "--cuda"], "CUDA"))


@pytest.mark.parametrize("argv, named", BAD_INPUTS, ids=[" ".join(a[-2:]) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2_before_any_child(argv, named, capsys, monkeypatch):
    def must_not_train(config):
        raise AssertionError("training started on bad input")

    monkeypatch.setattr(a3c.cli, "train", must_not_train)
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(argv)
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert named in stderr


def test_presets_by_env_family_and_flags_override():
    pong = parse_config(["-n", "p"])
    assert (pong.env_id, pong.lr, pong.clip_grad, pong.stop_reward) == (
        "PongNoFrameskip-v4", ATARI_PRESET.lr, 0.1, 18.0)
    cartpole = parse_config(["-n", "c", "--env", "CartPole-v1", "--gamma", "0.9"])
    assert cartpole.stop_reward == 475.0 and cartpole.gamma == 0.9
    assert cartpole.clip_grad == VECTOR_PRESET.clip_grad
    assert parse_config(["-n", "c", "--env", "CartPole-v1", "--stop-reward", "200"]).stop_reward == 200


def test_help_lists_every_hyperparameter(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_config(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for flag in ["--processes", "--envs-per-process", "--batch-size", "--reward-steps", "--gamma",
                 "--lr", "--entropy-beta", "--clip-grad", "--stop-reward", "--max-frames", "--seed",
                 "--logdir", "--cuda", "--name"]:
        assert flag in text
