"""Tiny deterministic envs whose n-step returns can be worked out by hand.

``Counting``: the observation is ``[offset + 100 * episode_index + t]`` (t = steps since reset), the
reward for acting at step t is ``t + 1``, and the episode ends after ``episode_length``
steps, terminated or (with ``truncate=True``) truncated. Registered as
``tests.toy_envs:Counting-v0`` so that spawned children can build it by name.
"""
from __future__ import annotations

import multiprocessing
import os
import time

import gymnasium as gym
import numpy as np

from a3c.lib.user_envs import register_env


class CountingEnv(gym.Env):
    def __init__(self, episode_length: int = 5, truncate: bool = False, offset: int = 0):
        self.episode_length = episode_length
        self.offset = offset
        self.truncate = truncate
        self.observation_space = gym.spaces.Box(0.0, 1e9, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.episode_index = -1
        self.t = 0

    def _observation(self) -> np.ndarray:
        return np.array([self.offset + 100 * self.episode_index + self.t], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode_index += 1
        self.t = 0
        return self._observation(), {}

    def step(self, action):
        reward = float(self.t + 1)
        self.t += 1
        ended = self.t >= self.episode_length
        terminated, truncated = (False, ended) if self.truncate else (ended, False)
        return self._observation(), reward, terminated, truncated, {}


gym.register("Counting-v0", entry_point=CountingEnv)


class LivesEnv(CountingEnv):
    """``Counting`` as a game of 3 lives: every second step loses one (``info["lives"]``, as
    the ALE reports it), and the game ends with the last."""

    def __init__(self):
        super().__init__(episode_length=6)

    def reset(self, *, seed=None, options=None):
        observation, _ = super().reset(seed=seed)
        return observation, {"lives": 3}

    def step(self, action):
        observation, reward, terminated, truncated, _ = super().step(action)
        return observation, reward, terminated, truncated, {"lives": 3 - self.t // 2}


gym.register("Lives-v0", entry_point=LivesEnv)


class StepsEnv(gym.Env):
    """Deterministic, as gymnasium's env checker wants: the observation is ``[t]``, acting at
    step t pays t + 1, and the episode ends after ``length`` steps (its return is
    ``length * (length + 1) / 2``); ``space`` replaces the observation space."""

    def __init__(self, length: int = 3, space: gym.spaces.Box | None = None):
        self.length = length
        self.observation_space = space or gym.spaces.Box(0.0, 1e9, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.t], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], dtype=np.float32), float(self.t), self.t >= self.length, False, {}
gym.register("CountingTruncated-v0", entry_point=CountingEnv, kwargs={"truncate": True})


register_env("toy-steps", lambda config: StepsEnv(config.get("length", 3)))



class CrashingEnv(CountingEnv):
    """Raises on the third step of its second episode, to test that a child's exception
    reaches the learner (the pre-flight's check of one episode's observations passes)."""

    def step(self, action):
        if self.t == 2 and self.episode_index >= 1:
            raise RuntimeError("toy env failure on purpose")
        return super().step(action)


gym.register("Crashing-v0", entry_point=CrashingEnv)


class MissingDependencyEnv(CountingEnv):
    """Needs a package this machine lacks, as Box2D's envs do without Box2D."""

    def __init__(self):
        raise gym.error.DependencyNotInstalled('toybox is not installed, run `pip install "toybox"`')


gym.register("MissingDependency-v0", entry_point=MissingDependencyEnv)


class SlowCloseEnv(CountingEnv):
    """Takes 30 s to close in a child (the learner's start-up check closes one at once), so
    that a shutdown is still running when a second Ctrl-C comes."""

    def close(self):
        if multiprocessing.parent_process() is not None:
            time.sleep(30.0)


gym.register("SlowClose-v0", entry_point=SlowCloseEnv)


class HangingEnv(CountingEnv):
    """Never returns from the third step of its second episode: an actor stepping it hangs,
    while the pre-flight's check of one episode's observations passes."""

    def step(self, action):
        if self.t == 2 and self.episode_index >= 1:
            time.sleep(3600.0)
        return super().step(action)


gym.register("Hanging-v0", entry_point=HangingEnv)


class NanRewardEnv(CountingEnv):
    """Counting, but every reward is NaN while ``A3C_TOY_NAN_REWARD`` is set in the environment
    (infinite where it says inf)."""

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if os.environ.get("A3C_TOY_NAN_REWARD"):
            reward = float("inf") if os.environ["A3C_TOY_NAN_REWARD"] == "inf" else float("nan")
        return observation, reward, terminated, truncated, info


gym.register("NanReward-v0", entry_point=NanRewardEnv)


class MultiDiscreteEnv(CountingEnv):
    """Counting with a MultiDiscrete action space of sizes 2 and 3."""

    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.MultiDiscrete([2, 3])


gym.register("MultiDiscrete-v0", entry_point=MultiDiscreteEnv)


class ImageEnv(CountingEnv):
    """Observations of 8x8 pixels: neither a flat vector nor Atari frames."""

    def __init__(self):
        super().__init__()
        self.observation_space = gym.spaces.Box(0, 255, shape=(8, 8), dtype=np.uint8)


gym.register("Image-v0", entry_point=ImageEnv)


class FloatModeEnv(CountingEnv):
    """Counting, but every observation is half of float32's smallest normal number, worked
    out in the thread that steps the env: 0 where that thread flushes denormals."""

    def _observation(self) -> np.ndarray:
        return np.array([np.float32(np.finfo(np.float32).tiny) * np.float32(0.5)], dtype=np.float32)


gym.register("FloatMode-v0", entry_point=FloatModeEnv)


class TaskCountingEnv(CountingEnv):
    """Counting whose episode length is its task: ``set_task(length)`` takes effect at the
    next reset, so every episode runs under one task (curriculum tests)."""

    def __init__(self, episode_length: int = 5):
        super().__init__(episode_length)
        self._next_length = episode_length

    def set_task(self, length: int) -> None:
        self._next_length = length

    def get_task(self) -> int:
        return self._next_length

    def reset(self, *, seed=None, options=None):
        self.episode_length = self._next_length
        return super().reset(seed=seed, options=options)


gym.register("TaskCounting-v0", entry_point=TaskCountingEnv)


class SideImageEnv(gym.Env):
    """A camera image (40x40 RGB, or channels first) with a white square in its left or right
    half, beside a ``speed`` vector that carries nothing: acting 0 for left and 1 for right
    pays 1, the other action 0, over episodes of 10 steps. Only the image tells the side."""

    SIDE = 40

    def __init__(self, channels_first: bool = False, dict_space: bool = True):
        shape = (3, self.SIDE, self.SIDE) if channels_first else (self.SIDE, self.SIDE, 3)
        camera = gym.spaces.Box(0, 255, shape=shape, dtype=np.uint8)
        self.channels_first, self.dict_space = channels_first, dict_space
        self.observation_space = (gym.spaces.Dict({"camera": camera, "speed": gym.spaces.Box(-1.0, 1.0, (2,))})
                                  if dict_space else camera)
        self.action_space = gym.spaces.Discrete(2)
        self.side = self.t = 0

    def _observation(self):
        image = np.zeros((self.SIDE, self.SIDE, 3), np.uint8)
        left = 4 if self.side == 0 else self.SIDE // 2 + 4
        image[15:27, left:left + 12] = 255
        image = image.transpose(2, 0, 1) if self.channels_first else image
        if not self.dict_space:
            return image
        return {"camera": image, "speed": self.np_random.uniform(-1, 1, 2).astype(np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.side = 0, int(self.np_random.integers(2))
        return self._observation(), {}

    def step(self, action):
        reward = float(action == self.side)
        self.t += 1
        self.side = int(self.np_random.integers(2))
        return self._observation(), reward, False, self.t >= 10, {}


gym.register("SideImage-v0", entry_point=SideImageEnv)
gym.register("SideImageBox-v0", entry_point=SideImageEnv, kwargs={"channels_first": True, "dict_space": False})


class SideVecEnv(SideImageEnv):
    """``SideImageEnv`` with the side as a one-hot vector instead of an image."""

    def __init__(self):
        super().__init__()
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)

    def _observation(self):
        return np.eye(2, dtype=np.float32)[self.side]


gym.register("SideVec-v0", entry_point=SideVecEnv)


class ReachEnv(gym.Env):
    """A target in [-1, 1] is the observation; the action (a Box of [-2, 2]) pays minus its
    squared distance from it. Episodes of 10 steps, cut by time: a policy that reaches the
    target scores 0, one that acts at random about -13."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.target = np.zeros(1, np.float32)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.target = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.target.copy(), {}

    def step(self, action):
        reward = -float(np.sum((np.asarray(action) - self.target) ** 2))
        self.t += 1
        self.target = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.target.copy(), reward, False, self.t >= 10, {}


gym.register("Reach-v0", entry_point=ReachEnv)


class WrongShapeEnv(CountingEnv):
    """Counting, but from its third step the observation has two numbers where its space
    says one (``A3C_TOY_BAD_OBSERVATION=nan``: a NaN instead)."""

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if self.t >= 3:
            bad = os.environ.get("A3C_TOY_BAD_OBSERVATION") == "nan"
            observation = np.array([np.nan], np.float32) if bad else np.zeros(2, np.float32)
        return observation, reward, terminated, truncated, info


gym.register("WrongShape-v0", entry_point=WrongShapeEnv)


class PacedEnv(CountingEnv):
    """Counting at a walker's pace: each step sleeps 5 ms, so that a run that must last some
    seconds (a worker's silence, a time budget) leaves the cores to other tests meanwhile."""

    def step(self, action):
        time.sleep(0.005)
        return super().step(action)


gym.register("Paced-v0", entry_point=PacedEnv)


class HangOnceEnv(PacedEnv):
    """Paced counting, but the first env of the run to reach the third step of its third
    episode there sleeps for good: it makes ``A3C_TOY_HANG_FILE`` (``O_EXCL``, so one env
    only, once, also across restarts). The pre-flight's look at one episode never gets that far."""

    def step(self, action):
        if self.t == 2 and self.episode_index >= 2 and os.environ.get("A3C_TOY_HANG_FILE"):
            try:
                os.close(os.open(os.environ["A3C_TOY_HANG_FILE"], os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                while True:
                    time.sleep(60)
        return super().step(action)


gym.register("HangOnce-v0", entry_point=HangOnceEnv)


class InfoCountingEnv(CountingEnv):
    """Counting, its info saying the step: ``{"t": t}``."""

    def step(self, action):
        observation, reward, terminated, truncated, _ = super().step(action)
        return observation, reward, terminated, truncated, {"t": self.t}


gym.register("InfoCounting-v0", entry_point=InfoCountingEnv)


class MaskedChoiceEnv(gym.Env):
    """RLlib's action-mask convention: the observation is a Dict of a one-hot target among 4
    actions and an ``action_mask`` that allows the target and a random half of the others.
    The target earns 1, another valid action 0; an invalid action raises, so a run that takes
    one crashes. Ten steps an episode. ``others_allowed``: each other action's chance of being
    allowed."""

    def __init__(self, others_allowed: float = 0.5):
        self.others_allowed = others_allowed
        self.observation_space = gym.spaces.Dict({
            "observation": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (4,), np.float32)})
        self.action_space = gym.spaces.Discrete(4)
        self.t = self.target = 0
        self.mask = np.ones(4, np.float32)

    def _observation(self):
        self.target = int(self.np_random.integers(4))
        self.mask = (self.np_random.random(4) < self.others_allowed).astype(np.float32)
        self.mask[self.target] = 1.0
        return {"observation": np.eye(4, dtype=np.float32)[self.target], "action_mask": self.mask.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._observation(), {}

    def step(self, action):
        if not self.mask[int(action)]:
            raise RuntimeError(f"invalid action {int(action)} taken under the mask {self.mask.tolist()}")
        reward = float(int(action) == self.target)
        self.t += 1
        return self._observation(), reward, False, self.t >= 10, {}


gym.register("MaskedChoice-v0", entry_point=MaskedChoiceEnv)


class MaskedChoiceMethodEnv(MaskedChoiceEnv):
    """``MaskedChoice`` with SB3-contrib's convention: the observation is the one-hot target
    alone and ``action_masks()`` says the valid actions."""

    def __init__(self, others_allowed: float = 0.5):
        super().__init__(others_allowed)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (4,), np.float32)

    def _observation(self):
        return super()._observation()["observation"]

    def action_masks(self) -> np.ndarray:
        return self.mask.astype(bool)


gym.register("MaskedChoiceMethod-v0", entry_point=MaskedChoiceMethodEnv)
