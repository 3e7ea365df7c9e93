"""Observation spaces the MLP takes flattened: a Dict of a Box and a Discrete, a Tuple, a bare
Discrete (one-hot), by hand; the same flattening in the workers and in compute_action."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from a3c import Trainer, register_env
from lib.envs import describe_env, flattened, make_env


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


def test_a_dict_observation_is_its_keys_flattenings_in_sorted_order():
    env = make_env("grid-dict")
    observation, _ = env.reset(seed=0)
    assert observation.dtype == np.float32 and observation.tolist() == [1.0, 0.0, 0.0, 0.0, -1.0]  # cell 0, pos
    observation, *_ = env.step(1)
    assert observation.tolist() == [0.0, 1.0, 0.0, 0.5, -1.0]
    info = describe_env("grid-dict")
    assert info.observation_shape == (5,) and isinstance(info.raw_observation_space, gym.spaces.Dict)
    raw = {"pos": np.array([1.0, -1.0], np.float32), "cell": 2}
    assert flattened(info, raw).tolist() == [0.0, 0.0, 1.0, 1.0, -1.0]


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
