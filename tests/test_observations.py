"""Observation spaces the nets take flattened: a Dict of a Box and a Discrete, a Tuple, a bare
Discrete (one-hot), by hand; the same flattening in the workers and in compute_action; images,
alone or in a Dict, cut back out of the flat rows for a conv body each."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import tests.toy_envs  # registers the image envs; SideImageEnv below
from a3c import Trainer, register_env
from a3c.lib.envs import describe_env, make_env
from a3c.lib.models import ObservationEncoder
from a3c.lib.normalize import ObservationNormalizer
from a3c.lib.observations import ImagePart, flattened, image_parts


class GridEnv(gym.Env):
    """A Dict observation: the agent's cell (Discrete 3) and a position (Box 2). Moving right
    (action 1) from cell 0 to cell 2 pays 1; each episode lasts 4 steps."""

    def __init__(self, tuple_space: bool = False):
        parts = {"pos": gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), "cell": gym.spaces.Discrete(3)}
        self.tuple_space = tuple_space
        self.observation_space = gym.spaces.Tuple((parts["cell"], parts["pos"])) if tuple_space else gym.spaces.Dict(parts)
        self.action_space = gym.spaces.Discrete(2)
        self.cell = self.t = 0

    def _observation(self):
        pos = np.array([self.cell / 2, -1.0], np.float32)
        return (self.cell, pos) if self.tuple_space else {"pos": pos, "cell": self.cell}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell = self.t = 0
        return self._observation(), {}

    def step(self, action):
        self.t += 1
        moved = min(2, self.cell + 1) if action == 1 else max(0, self.cell - 1)
        reward = float(moved == 2 and self.cell != 2)
        self.cell = moved
        return self._observation(), reward, False, self.t >= 4, {}


register_env("grid-dict", lambda config: GridEnv())
register_env("grid-tuple", lambda config: GridEnv(tuple_space=True))
register_env("one-hot", lambda config: gym.wrappers.TransformObservation(
    GridEnv(), lambda observation: observation["cell"], gym.spaces.Discrete(3)))
register_env("grid-flat-already", lambda config: gym.wrappers.FlattenObservation(GridEnv()))
register_env("grid-flat-as-ours", lambda config: gym.wrappers.TransformObservation(  # the wrappers ours were
    gym.wrappers.FlattenObservation(GridEnv()), lambda observation: observation.astype(np.float32),
    gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)))
register_env("side-resized", lambda config: gym.wrappers.ResizeObservation(
    tests.toy_envs.SideImageEnv(dict_space=False), (48, 36)))


def test_a_dict_observation_is_its_keys_flattenings_in_sorted_order():
    env = make_env("grid-dict")
    observation, _ = env.reset(seed=0)
    assert observation.dtype == np.float32 and observation.tolist() == [1.0, 0.0, 0.0, 0.0, -1.0]  # cell 0, pos
    observation, *_ = env.step(1)
    assert observation.tolist() == [0.0, 1.0, 0.0, 0.5, -1.0]
    info = describe_env("grid-dict")
    assert info.observation_shape == (5,) and isinstance(info.raw_observation_space, gym.spaces.Dict)
    raw = {"pos": np.array([1.0, -1.0], np.float32), "cell": 2}
    assert flattened(info.raw_observation_space, raw).tolist() == [0.0, 0.0, 1.0, 1.0, -1.0]


def test_the_space_flattened_is_the_one_the_envs_wrappers_give_and_none_where_the_user_flattened():
    assert describe_env("grid-flat-already").raw_observation_space is None  # arrives flat
    assert describe_env("grid-flat-as-ours").raw_observation_space is None
    resized = describe_env("side-resized")  # the creator's wrapper, not the env beneath it
    assert resized.raw_observation_space.shape == (48, 36, 3)
    assert resized.image_parts == (ImagePart(0, (48, 36, 3), channels_last=True),)


def test_a_tuple_and_a_discrete_observation_flatten_in_order_and_as_one_hot():
    assert make_env("grid-tuple").reset(seed=0)[0].tolist() == [1.0, 0.0, 0.0, 0.0, -1.0]
    assert make_env("one-hot").reset(seed=0)[0].tolist() == [1.0, 0.0, 0.0]
    assert describe_env("one-hot").observation_shape == (3,)


@pytest.mark.timeout(120)
def test_a_dict_env_trains_and_compute_action_takes_its_raw_observations(tmp_path):
    with Trainer(env="grid-dict", logdir=str(tmp_path), processes=2, envs_per_process=2) as trainer:
        assert trainer.train(frames=400)["frames"] >= 400
        raw = {"pos": np.array([0.0, -1.0], np.float32), "cell": 0}
        assert trainer.compute_action(raw, greedy=True) in (0, 1)
        assert trainer.compute_actions([raw, raw]).shape == (2,)


CAMERA = gym.spaces.Box(0, 255, (40, 48, 3), np.uint8)
ROVER = gym.spaces.Dict({
    "camera": CAMERA,
    "cell": gym.spaces.Discrete(3),
    "grid": gym.spaces.Box(0, 255, (8, 8, 3), np.uint8),  # under 36 pixels: values for the MLP
    "aux": gym.spaces.Tuple((gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Box(0, 255, (3, 36, 40), np.uint8))),
})


def test_images_are_found_where_the_flattening_puts_them():
    # keys in sorted order: aux (2 values, then a 3x36x40 image), camera (40x48x3), cell (3), grid (192)
    assert image_parts(ROVER) == (ImagePart(2, (3, 36, 40), channels_last=False),
                                  ImagePart(2 + 4320, (40, 48, 3), channels_last=True))
    assert gym.spaces.flatdim(ROVER) == 2 + 4320 + 5760 + 3 + 192
    assert image_parts(CAMERA) == (ImagePart(0, (40, 48, 3), channels_last=True),)
    for not_an_image in (gym.spaces.Box(0.0, 1.0, (40, 48, 3)),  # floats
                         gym.spaces.Box(0, 1, (40, 48, 3), np.uint8),  # not 0-255
                         gym.spaces.Box(0, 255, (40, 48, 36), np.uint8),  # no axis under 36 for channels
                         gym.spaces.Box(0, 255, (35, 48, 3), np.uint8)):  # too small for the Nature CNN
        assert image_parts(not_an_image) == ()
    # the channels are the axis under 36 pixels: colours, or stacked frames
    assert image_parts(gym.spaces.Box(0, 255, (40, 48, 12), np.uint8))[0].channels_first_shape == (12, 40, 48)
    assert image_parts(gym.spaces.Box(0, 255, (35, 40, 48), np.uint8))[0].channels_first_shape == (35, 40, 48)


def test_the_encoder_cuts_each_image_back_out_of_a_flat_row():
    ROVER.seed(0)
    raw = ROVER.sample()
    row = torch.as_tensor(gym.spaces.flatten(ROVER, raw).astype(np.float32))[None]
    encoder = ObservationEncoder(row.shape[1], image_parts(ROVER))
    (aux_image, camera), rest = encoder.split(row)
    torch.testing.assert_close(aux_image[0], torch.as_tensor(raw["aux"][1] / 255.0, dtype=torch.float32))
    torch.testing.assert_close(camera[0], torch.as_tensor(raw["camera"].transpose(2, 0, 1) / 255.0,
                                                          dtype=torch.float32))
    one_hot = np.eye(3, dtype=np.float32)[raw["cell"]]
    expected = np.concatenate([raw["aux"][0], one_hot, raw["grid"].reshape(-1)]).astype(np.float32)
    torch.testing.assert_close(rest[0], torch.as_tensor(expected))
    assert encoder(row).shape == (1, 2 * 256 + 2 + 3 + 192) == (1, encoder.size)


def test_running_statistics_skip_the_pixels():
    size, columns = 6, [0, 5]  # pixels in columns 1-4
    normalizer = ObservationNormalizer(size, columns)
    batch = torch.tensor([[1.0, 200, 0, 0, 0, 10.0], [3.0, 100, 255, 0, 0, 30.0]])
    normalizer.update(batch)
    torch.testing.assert_close(normalizer.mean, torch.tensor([2.0, 20.0]), atol=1e-3, rtol=0)
    out = normalizer(batch)
    torch.testing.assert_close(out[:, 1:5], batch[:, 1:5])  # pixels untouched
    torch.testing.assert_close(out[:, [0, 5]], torch.tensor([[-1.0, -1.0], [1.0, 1.0]]), atol=1e-3, rtol=0)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("env_id", "settings"), [
    ("tests.toy_envs:SideImage-v0", {"algo": "a3c"}),  # a Dict of an RGB image and a vector
    ("tests.toy_envs:SideImageBox-v0", {"algo": "ppo", "lstm": True}),  # an image alone, channels first
])
def test_a_net_that_reads_the_image_learns_what_only_the_image_shows(tmp_path, env_id, settings):
    """The side of the square pays: 5 of 10 is chance, 9 needs the image read."""
    info = describe_env(env_id)
    vector = 2 if env_id.endswith("SideImage-v0") else 0
    assert len(info.image_parts) == 1 and info.observation_shape == (40 * 40 * 3 + vector,)
    lstm = settings.get("lstm", False)
    with Trainer(env=env_id, seed=0, logdir=str(tmp_path), backend="serial", stop_reward=9.0, max_frames=30_000,
                 **settings) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
        assert result["reason"] == "solved", result
        env = gym.make(env_id)
        observation, _ = env.reset(seed=5)
        side = env.unwrapped.side
        action = trainer.compute_action(observation, greedy=True) if not lstm else \
            trainer.compute_action(observation, state=None, greedy=True)[0]
        assert action == side


def test_dqns_q_net_reads_the_images_through_the_same_encoder():
    from a3c.algos.dqn.nets import build_q_net

    info = describe_env("tests.toy_envs:SideImage-v0")
    net = build_q_net(info)
    assert isinstance(net.body[0], ObservationEncoder) and net.body[0].parts == info.image_parts
    env = gym.make("tests.toy_envs:SideImage-v0")
    rows = np.stack([flattened(info.raw_observation_space, env.reset(seed=seed)[0]) for seed in range(3)])
    q_values, best = net(torch.as_tensor(rows))
    assert q_values.shape == (3, 2) and torch.equal(best, q_values.max(dim=1).values)
