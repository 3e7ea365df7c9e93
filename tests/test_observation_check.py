"""Observations against their space before any worker starts: a wrong shape, dtype or Dict
key, or a NaN, is one line and exit 2 naming where it was seen; ``compute_action`` refuses
a non-finite observation."""
import gymnasium as gym
import numpy as np
import pytest
import torch.multiprocessing as mp

import a3c.cli
from a3c import Trainer
from a3c.lib.multiagent import make_parallel_env
from a3c.lib.observation_check import (
    check_agent_observations,
    check_observations,
    observation_problem,
)
from tests import toy_envs  # noqa: F401  (registers WrongShape-v0)

BOX = gym.spaces.Box(0.0, 1.0, shape=(3,), dtype=np.float32)


@pytest.mark.parametrize(("space", "observation", "problem"), [
    (BOX, np.zeros(3, np.float32), None),
    (BOX, np.zeros(3, np.float64), None),  # a float64 of the right shape casts within the kind
    (BOX, np.zeros(4, np.float32), "the observation has shape (4,) and its space (3,)"),
    (BOX, np.array([0.0, np.nan, 0.0], np.float32), "the observation holds NaN or infinite values"),
    (gym.spaces.Box(0, 255, shape=(2,), dtype=np.uint8), np.zeros(2, np.float32),
     "the observation is float32 and its space uint8"),
    (gym.spaces.Dict({"pos": BOX, "mask": gym.spaces.MultiBinary(2)}), {"pos": np.zeros(3, np.float32)},
     "['mask'] is missing"),
    (gym.spaces.Dict({"pos": BOX}), {"pos": np.full(3, np.inf, np.float32)}, "['pos'] holds NaN or infinite values"),
    (gym.spaces.Tuple((BOX, gym.spaces.Discrete(3))), (np.zeros(2, np.float32), 1),
     "[0] has shape (2,) and its space (3,)"),
])
def test_each_mismatch_is_named_with_its_part(space, observation, problem):
    assert observation_problem(space, observation) == problem


def test_the_check_says_which_step_showed_the_mismatch():
    env = gym.make("WrongShape-v0")
    assert check_observations(env, seed=0) == "after step 3: the observation has shape (2,) and its space (1,)"
    env.close()


@pytest.mark.parametrize(("bad", "named"), [("", "after step 3: the observation has shape (2,) and its space (1,)"),
                                            ("nan", "after step 3: the observation holds NaN or infinite values")])
def test_a_mismatching_env_is_one_line_and_exit_2_before_any_child(tmp_path, capsys, monkeypatch, bad, named):
    monkeypatch.setenv("A3C_TOY_BAD_OBSERVATION", bad)
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "bad", "--env", "WrongShape-v0", "--logdir", str(tmp_path)])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and f"WrongShape-v0's observations do not match its observation space {named}" in stderr[0]
    assert mp.active_children() == [] and list(tmp_path.iterdir()) == []


def test_compute_action_refuses_a_non_finite_observation(tmp_path):
    trainer = Trainer(env="CartPole-v1", logdir=str(tmp_path))
    with pytest.raises(ValueError, match="the observation holds NaN or infinite values"):
        trainer.compute_action(np.array([0.0, np.nan, 0.0, 0.0], np.float32))
    with pytest.raises(ValueError, match="NaN or infinite"):
        trainer.compute_actions(np.array([[0.0, 0.0, np.inf, 0.0]], np.float32))
    assert trainer.compute_action(np.zeros(4, np.float32)) in (0, 1)


class SlowResetEnv(gym.Env):
    """Takes 30 s to reset: longer than the test's --worker-timeout."""

    observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        import time

        time.sleep(30)
        return np.zeros(1, np.float32), {}


gym.register("SlowReset-v0", entry_point=SlowResetEnv)


@pytest.mark.timeout(60)
def test_an_env_that_hangs_in_the_check_is_one_line_after_the_worker_timeout(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "slow", "--env", "SlowReset-v0", "--logdir", str(tmp_path), "--worker-timeout", "1"])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert stderr == ["run_a3c.py: error: SlowReset-v0 took more than --worker-timeout 1 s over a reset and a few steps"]


def test_each_agents_observations_are_checked_against_its_own_space(tmp_path, capsys):
    assert check_agent_observations(make_parallel_env("tests.parallel_envs.early_finish"), seed=0) is None
    assert check_agent_observations(make_parallel_env("tests.parallel_envs.wrong_shape"), seed=0) == (
        "after step 2: agent b's observation has shape (3,) and its space (2,)")
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "bad", "--env", "tests.parallel_envs.wrong_shape", "--algo", "ppo", "--logdir", str(tmp_path)])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and "observations do not match their agents' observation spaces after step 2" in stderr[0]
    assert mp.active_children() == [] and list(tmp_path.iterdir()) == []
