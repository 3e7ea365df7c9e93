"""Memory by stacking (``--frame-stack N``): the last N observations end to end, zeros before an
episode's first, and the memory task solved by a net without a recurrent cell."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

from a3c import Trainer
from a3c.play import load_policy, play
from lib.envs import EnvError, describe_env, make_env, make_vector_env
from lib.memory_task import ENV_ID

BLANK, ANSWER = [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]


def test_the_stack_holds_the_last_n_oldest_first_and_starts_each_episode_from_zeros():
    env = make_env(ENV_ID, env_config={"delay": 2}, frame_stack=3)  # the cue, a blank, the answer step
    observation, _ = env.reset(seed=0)
    cue = observation[6:].tolist()
    assert cue in ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    assert observation.tolist() == BLANK + BLANK + cue
    observation, *_ = env.step(0)
    assert observation.tolist() == BLANK + cue + BLANK
    observation, _, terminated, _, _ = env.step(0)
    assert observation.tolist() == cue + BLANK + ANSWER and not terminated
    _, reward, terminated, _, _ = env.step(cue.index(1.0))
    assert reward == 1.0 and terminated
    observation, _ = env.reset(seed=1)  # nothing of the last episode is left in the stack
    assert observation[:6].tolist() == BLANK + BLANK


def test_a_worker_steps_stacked_envs_one_by_one_and_the_net_is_told_the_stacked_width():
    envs = make_vector_env("CartPole-v1", 2, frame_stack=4)
    observations, _ = envs.reset(seed=0)
    # not CartPole's own numpy vector env, whose observations would be single
    assert isinstance(envs, SyncVectorEnv) and observations.shape == (2, 16)
    assert not observations[:, :12].any() and observations[:, 12:].any()
    envs.close()
    stacked = describe_env(ENV_ID, frame_stack=9)
    assert stacked.observation_shape == (27,) and stacked.raw_observation_space is None


def test_a_stack_of_images_is_refused_in_one_line():
    with pytest.raises(EnvError, match="--frame-stack stacks vector observations; .* has an image"):
        describe_env("tests.toy_envs:SideImage-v0", frame_stack=2)


def test_a_net_without_memory_solves_the_memory_task_from_nine_stacked_observations(tmp_path):
    """The cue is 8 steps before the answer: 9 observations hold both (lib.memory_task)."""
    with Trainer(env=ENV_ID, algo="ppo", frame_stack=9, logdir=str(tmp_path), max_seconds=120, seed=0,
                 backend="serial") as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result
        answer_step = np.array(BLANK * 8 + ANSWER, np.float32)
        answer_step[1] = 1.0  # cue 1, 8 steps before
        assert trainer.compute_action(answer_step, greedy=True) == 1
        answer_step[:3] = [1.0, 0.0, 0.0]
        assert trainer.compute_action(answer_step, greedy=True) == 0
        with pytest.raises(ValueError, match=r"the last 9 observations end to end, shape \(27,\)"):
            trainer.compute_action(np.array(ANSWER, np.float32))
    best = Path(result["run_dir"]) / "best.pt"
    assert load_policy(str(best)).frame_stack == 9  # play makes the env as the workers did
    assert np.mean([episode.reward for episode in play(str(best), episodes=20, greedy=True)]) >= 0.8
