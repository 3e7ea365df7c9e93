"""Memory by stacking (``--frame-stack N``): the last N observations end to end, zeros before an
episode's first, and the memory task solved by a net without a recurrent cell."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

from a3c import Trainer, register_env
from a3c.config import make_config
from a3c.lib.envs import EnvError, EnvRecipe, describe_env, make_env, make_vector_env
from a3c.lib.memory_task import ENV_ID
from a3c.play import load_policy, play
from tests import toy_envs  # registers the image envs

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


@pytest.mark.parametrize("channels_first", [False, True])
def test_an_images_frames_stack_as_its_channels_oldest_first(channels_first):
    settings = {"env_config": {"channels_first": channels_first}, "frame_stack": 2}
    stacked = gym.make("tests.toy_envs:SideImageBox-v0", **settings["env_config"])  # the frames by hand
    env = make_env("tests.toy_envs:SideImageBox-v0", **settings)
    axis = 0 if channels_first else 2

    def unflattened(observation):
        return observation.reshape((6, 40, 40) if channels_first else (40, 40, 6))

    first = unflattened(env.reset(seed=3)[0])
    frame_0 = stacked.reset(seed=3)[0]
    assert np.array_equal(first, np.concatenate([np.zeros_like(frame_0), frame_0], axis))
    second = unflattened(env.step(0)[0])
    assert np.array_equal(second, np.concatenate([frame_0, stacked.step(0)[0]], axis))
    info = describe_env("tests.toy_envs:SideImageBox-v0", **settings)
    (part,) = info.image_parts  # one image of 6 channels for the conv body
    assert part.channels_first_shape == (6, 40, 40) and info.observation_shape == (6 * 40 * 40,)


def test_a_dicts_parts_stack_each_its_own_way_an_image_as_channels_a_vector_end_to_end():
    own = gym.make("tests.toy_envs:SideImage-v0")  # the frames by hand
    env = make_env("tests.toy_envs:SideImage-v0", frame_stack=3)
    info = describe_env("tests.toy_envs:SideImage-v0", frame_stack=3)
    assert info.raw_observation_space == gym.spaces.Dict({
        "camera": gym.spaces.Box(0, 255, (40, 40, 9), np.uint8),
        "speed": gym.spaces.Box(-1.0, 1.0, (6,), np.float32)})
    (part,) = info.image_parts  # the camera, first in the flattening, for the conv body
    assert part.offset == 0 and part.channels_first_shape == (9, 40, 40) and info.observation_shape == (14_406,)
    frames = [own.reset(seed=3)[0]]
    observation, _ = env.reset(seed=3)
    for step in range(3):
        camera, speed = observation[:14_400].reshape(40, 40, 9), observation[14_400:]
        last = ([None] * 3 + frames)[-3:]
        assert np.array_equal(camera, np.concatenate([np.zeros((40, 40, 3), np.uint8) if frame is None
                                                      else frame["camera"] for frame in last], axis=2))
        assert np.allclose(speed, np.concatenate([np.zeros(2) if frame is None else frame["speed"] for frame in last]))
        frames.append(own.step(0)[0])
        observation, *_ = env.step(0)


def test_a_stack_of_atari_frames_or_of_too_many_channels_is_refused_in_one_line():
    with pytest.raises(EnvError, match="--frame-stack is for one agent's own observations; .* stack 4 already"):
        describe_env("PongNoFrameskip-v4", frame_stack=2)
    with pytest.raises(EnvError, match="images of 3 channels would stack to 36; an image has fewer than 36"):
        describe_env("tests.toy_envs:SideImageBox-v0", frame_stack=12)
    with pytest.raises(EnvError, match="images of 3 channels would stack to 36"):  # inside a Dict too
        describe_env("tests.toy_envs:SideImage-v0", frame_stack=12)
    assert describe_env("tests.toy_envs:SideImageBox-v0", frame_stack=11).image_parts[0].shape == (33, 40, 40)


def test_a_stacked_env_is_described_from_one_env():
    built = []
    register_env("CountedImage", lambda config: built.append(config) or toy_envs.SideImageEnv())
    assert describe_env("CountedImage", frame_stack=4).image_parts[0].channels_first_shape == (12, 40, 40)
    assert len(built) == 1
    with pytest.raises(EnvError, match="CountedImage's images of 3 channels would stack to 36"):
        describe_env("CountedImage", frame_stack=12)
    assert len(built) == 2


def test_a_net_without_memory_solves_the_memory_task_from_nine_stacked_observations(tmp_path):
    """The cue is 8 steps before the answer: 9 observations hold both (a3c.lib.memory_task)."""
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
        with pytest.raises(ValueError, match=r"takes observations of shape \(27,\): its last 9 stacked"):
            trainer.compute_action(np.array(ANSWER, np.float32))
    best = Path(result["run_dir"]) / "best.pt"
    assert load_policy(str(best)).env.frame_stack == 9  # play makes the env as the workers did
    assert np.mean([episode.reward for episode in play(str(best), episodes=20, greedy=True)]) >= 0.8


@pytest.mark.parametrize("env_id", ["tests.toy_envs:SideImageBox-v0", "tests.toy_envs:SideImage-v0"])
def test_a_conv_net_learns_from_stacked_frames_and_acts_on_them(tmp_path, env_id):
    """The side of the square pays (tests/toy_envs.py): the newest of 2 stacked frames shows it,
    on a camera alone or beside a vector in a Dict."""
    env_config = {"channels_first": False}
    with Trainer(env=env_id, env_config=env_config, algo="ppo", frame_stack=2,
                 seed=0, logdir=str(tmp_path), backend="serial", stop_reward=9.0, max_frames=30_000) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
        assert result["reason"] == "solved", result
        env = make_env(env_id, env_config=env_config, frame_stack=2)
        for seed in range(3):
            observation, _ = env.reset(seed=seed)  # flat, as the workers step it
            side = env.unwrapped.side
            assert trainer.compute_action(observation, greedy=True) == side
            if env_id.endswith("Box-v0"):  # a lone image also as an image
                assert trainer.compute_action(observation.reshape(40, 40, 6), greedy=True) == side
            with pytest.raises(ValueError, match=r"shape \((9600|9604),\): its last 2 stacked.*; got shape \(5,\)"):
                trainer.compute_action(observation[:5])


def test_a_runs_env_recipe_carries_its_env_settings_to_every_maker():
    """The run's settings name the env once: its recipe makes one env, a worker's envs and
    the description with the frame stack; a checkpoint's config from before a setting gets
    that setting's default, and keys that are not env settings are left out."""
    recipe = make_config(env="CartPole-v1", frame_stack=3, env_config={"sutton_barto_reward": True}).env_recipe
    assert recipe == EnvRecipe("CartPole-v1", None, {"sutton_barto_reward": True}, 3)
    env = recipe.make()
    try:
        assert env.observation_space.shape == (12,) and env.unwrapped._sutton_barto_reward
    finally:
        env.close()
    envs = recipe.make_vector(2)
    try:
        assert envs.observation_space.shape == (2, 12)
    finally:
        envs.close()
    assert recipe.describe().observation_shape == (12,)
    assert EnvRecipe.from_settings({"env_id": "PongNoFrameskip-v4", "algo": "ppo"}) == EnvRecipe("PongNoFrameskip-v4")
    assert make_config(env="PongNoFrameskip-v4", screen_size=42).env_recipe.screen_size == 42
