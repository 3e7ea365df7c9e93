"""How observations reach the nets: the images in a space found (``image_layout``,
``image_parts``), spaces the nets take flat flattened (``flat_observations``), and an env's
last N observations stacked (``StackedObservations``, ``--frame-stack``)."""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

STRUCTURED = (gym.spaces.Dict, gym.spaces.Tuple)
FLATTENED = (*STRUCTURED, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
"""Observation spaces the nets take flattened: Discrete as one-hot, Dict (keys in sorted
order) and Tuple as their parts' flattenings one after the other; an image (``image_layout``)
travels flattened too, and its net puts it back together."""
MIN_IMAGE_SIDE = 36
"""The smallest height and width the Nature CNN's three layers reduce to at least one cell;
smaller uint8 grids go to the MLP with the other features."""


class EnvError(ValueError):
    """The env id or its spaces cannot be used by this trainer."""


@dataclass(frozen=True)
class ImagePart:
    """Where an image lies in a flattened observation: ``size`` values from ``offset``, in
    the env's own layout ``shape``, (height, width, channels) when ``channels_last``."""

    offset: int
    shape: tuple[int, int, int]
    channels_last: bool

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def channels_first_shape(self) -> tuple[int, int, int]:
        height, width, channels = self.shape if self.channels_last else (*self.shape[1:], self.shape[0])
        return channels, height, width


def image_layout(space: gym.Space) -> tuple[int, int, int] | None:
    """``space``'s shape if it is an image, else None: a uint8 Box of 0-255 in three axes, two
    of them at least ``MIN_IMAGE_SIDE`` pixels and the third, the last or else the first, fewer
    (its channels: colours, or stacked frames)."""
    if not (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3):
        return None
    if not (np.all(space.low == 0) and np.all(space.high == 255)):
        return None
    height, width, last = space.shape
    if min(height, width) >= MIN_IMAGE_SIDE > last or min(width, last) >= MIN_IMAGE_SIDE > height:
        return tuple(space.shape)
    return None


def image_parts(space: gym.Space, offset: int = 0) -> tuple[ImagePart, ...]:
    """The images in ``space`` (itself, or inside a Dict or Tuple, at any depth), where
    gymnasium's flattening puts them."""
    shape = image_layout(space)
    if shape is not None:
        return (ImagePart(offset, shape, channels_last=shape[2] < MIN_IMAGE_SIDE),)
    if not isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        return ()
    parts: list[ImagePart] = []
    for part in (space.spaces.values() if isinstance(space, gym.spaces.Dict) else space.spaces):
        parts += image_parts(part, offset)
        offset += gym.spaces.flatdim(part)
    return tuple(parts)


def columns_outside_images(size: int, parts: Sequence[ImagePart]) -> list[int]:
    """The columns of a flat row of ``size`` values that no image of ``parts`` covers."""
    in_images = {column for part in parts for column in range(part.offset, part.offset + part.size)}
    return [column for column in range(size) if column not in in_images]


def needs_flattening(space: gym.Space) -> bool:
    return isinstance(space, FLATTENED) or image_layout(space) is not None


class FlatObservations(gym.wrappers.TransformObservation):
    """``flat_observations``'s wrapper, by its own type, so that ``unflattened_space`` never
    takes a user's flattening for this project's."""


def flat_observations(env: gym.Env) -> gym.Env:
    """``env`` with its observations flattened to float32 vectors (gymnasium's flattening)."""
    flat = gym.wrappers.FlattenObservation(env)
    space = flat.observation_space
    float_space = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)
    return FlatObservations(flat, lambda observation: observation.astype(np.float32), float_space)


def stacked_space(space: gym.Space, frames: int) -> gym.Space:
    """The space of ``frames`` observations of ``space`` stacked (``stack_observations``)."""
    layout = image_layout(space)
    if layout is not None:
        channels_last = layout[2] < MIN_IMAGE_SIDE
        shape = (*layout[:2], frames * layout[2]) if channels_last else (frames * layout[0], *layout[1:])
        return gym.spaces.Box(0, 255, shape, np.uint8)
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({key: stacked_space(part, frames) for key, part in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return gym.spaces.Tuple([stacked_space(part, frames) for part in space.spaces])
    flat = gym.spaces.flatten_space(space)
    return gym.spaces.Box(np.tile(flat.low, frames).astype(np.float32), np.tile(flat.high, frames).astype(np.float32),
                          dtype=np.float32)


def stack_observations(space: gym.Space, observations: Sequence[Any]) -> Any:
    """``observations`` of ``space``, oldest first (None: zeros, before an episode's first),
    as one of ``stacked_space``: an image's as more channels, a Dict's or Tuple's part by
    part, anything else flattened to float32 and end to end."""
    layout = image_layout(space)
    if layout is not None:
        frames = [np.zeros(layout, np.uint8) if part is None else np.asarray(part) for part in observations]
        return np.concatenate(frames, axis=2 if layout[2] < MIN_IMAGE_SIDE else 0)
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        keys = space.spaces.keys() if isinstance(space, gym.spaces.Dict) else range(len(space.spaces))
        parts = {key: stack_observations(space[key], [None if whole is None else whole[key] for whole in observations])
                 for key in keys}
        return parts if isinstance(space, gym.spaces.Dict) else tuple(parts.values())
    size = gym.spaces.flatdim(space)
    return np.concatenate([np.zeros(size, np.float32) if part is None
                           else gym.spaces.flatten(space, part).astype(np.float32) for part in observations])


class StackedObservations(gym.Wrapper):
    """``env`` whose observation is its last ``frames`` observations, oldest first: an image's
    as more channels (``frames`` times its own), a Dict's or Tuple's part by part, anything
    else flattened and end to end. An episode starts from zeros and its first observation
    last, so the net sees how far in it is (SB3's VecFrameStack, for motion or memory without
    a recurrent net)."""

    def __init__(self, env: gym.Env, frames: int):
        super().__init__(env)
        for part in image_parts(env.observation_space):  # more channels would read as a grid for the MLP
            channels = part.channels_first_shape[0]
            if frames * channels >= MIN_IMAGE_SIDE:
                env.close()
                raise EnvError(f"--frame-stack {frames}: {env.spec.id if env.spec else 'the env'}'s images of "
                               f"{channels} channels would stack to {frames * channels}; an image has fewer "
                               f"than {MIN_IMAGE_SIDE}")
        self.observation_space = stacked_space(env.observation_space, frames)
        self._last: deque = deque(maxlen=frames)

    def _stacked(self, observation: Any) -> Any:
        self._last.append(observation)
        return stack_observations(self.env.observation_space, list(self._last))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._last.extend([None] * self._last.maxlen)
        return self._stacked(observation), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._stacked(observation), reward, terminated, truncated, info


def unflattened_space(env: gym.Env) -> gym.Space | None:
    """The observation space ``flat_observations`` flattened, where ``env`` is its result (the
    env's own space, or its wrappers' where they change it); None for any other env, one the
    user flattened included, whose observations arrive flat."""
    return env.env.env.observation_space if isinstance(env, FlatObservations) else None


def flattened(raw_space: gym.Space | None, observation: Any) -> np.ndarray:
    """One raw observation as the net takes it: flattened where the env's space (``raw_space``,
    an ``EnvInfo``'s ``raw_observation_space``) needs it."""
    if raw_space is None:
        return np.asarray(observation)
    if isinstance(raw_space, STRUCTURED) and isinstance(observation, np.ndarray):
        return observation.astype(np.float32)  # a Dict's or Tuple's flattened already, as make_env gives it
    return gym.spaces.flatten(raw_space, observation).astype(np.float32)


MASK_KEY = "action_mask"


def mask_columns(space: gym.Space | None, frames: int = 1) -> tuple[int, int] | None:
    """Where a Dict observation's ``action_mask`` lies in its flattened row (gymnasium's
    flattening, the Dict's order): (offset, size); None where there is none. Of ``frames``
    stacked observations (``StackedObservations``, whose mask part holds every frame's, oldest
    first), the current one's: the last."""
    if not isinstance(space, gym.spaces.Dict) or MASK_KEY not in space.spaces:
        return None
    offset = 0
    for key, part in space.spaces.items():
        if key == MASK_KEY:
            size = gym.spaces.flatdim(part) // frames
            return offset + (frames - 1) * size, size
        offset += gym.spaces.flatdim(part)
    return None


def has_action_masks(env: gym.Env) -> bool:
    """Whether ``env`` says its valid actions by an ``action_masks()`` method (SB3-contrib's
    convention) rather than in its observations."""
    return callable(getattr(env.unwrapped, "action_masks", None)) and not (
        isinstance(env.observation_space, gym.spaces.Dict) and MASK_KEY in env.observation_space.spaces)


class MaskInObservation(gym.ObservationWrapper):
    """SB3-contrib's ``action_masks()`` put into each observation as RLlib's convention has it:
    a Dict of the env's observation and its ``action_mask`` (1: allowed), so that one path,
    the mask in the row, serves both."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.action_space
        actions = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(space.nvec))
        self.observation_space = gym.spaces.Dict({
            "observation": env.observation_space, MASK_KEY: gym.spaces.Box(0.0, 1.0, (actions,), np.float32)})

    def observation(self, observation: Any) -> dict[str, Any]:
        mask = np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=np.float32).reshape(-1)
        return {"observation": observation, MASK_KEY: mask}


def random_valid_action(env: gym.Env, observation: Any) -> Any:
    """A random action of ``env``'s, among those its last ``observation``'s ``action_mask``
    (or its ``action_masks()``) allows where it has one."""
    return valid_sample(env.action_space, current_mask(env, observation))


def current_mask(env: gym.Env, observation: Any) -> Any | None:
    """The actions ``env`` allows after ``observation``: its ``action_mask``, else the env's
    ``action_masks()``; None where it says neither."""
    mask = mask_of(observation)
    if mask is None and has_action_masks(env):
        mask = env.get_wrapper_attr("action_masks")()
    return mask


def mask_of(observation: Any) -> Any | None:
    """An observation's ``action_mask`` where it is a Dict holding one."""
    return observation[MASK_KEY] if isinstance(observation, Mapping) and MASK_KEY in observation else None


def allowed_actions(space: gym.Space, mask: Any) -> np.ndarray:
    """``mask`` as booleans, one per action of ``space`` (Discrete, or MultiDiscrete's
    dimensions one after the other); stacked masks end with the current one."""
    actions = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(space.nvec))
    return np.asarray(mask).reshape(-1)[-actions:] > 0.5


def allowed_per_dimension(space: gym.Space, mask: Any) -> list[np.ndarray]:
    """``allowed_actions`` split by the action's dimensions: one for a Discrete, one per
    dimension of a MultiDiscrete."""
    allowed = allowed_actions(space, mask)
    return [allowed] if isinstance(space, gym.spaces.Discrete) else np.split(allowed, np.cumsum(space.nvec)[:-1])


def first_valid(space: gym.Space, mask: Any, action: Any) -> Any:
    """``action`` where ``mask`` allows it, else the first action it allows (per dimension of
    a MultiDiscrete); a dimension with none allowed keeps its action."""
    parts = allowed_per_dimension(space, mask)
    chosen = [int(value) if part[int(value)] or not part.any() else int(np.argmax(part))
              for value, part in zip(np.atleast_1d(action), parts)]
    return chosen[0] if isinstance(space, gym.spaces.Discrete) else np.asarray(chosen, dtype=space.dtype)


def valid_sample(space: gym.Space, mask: Any | None) -> Any:
    """A random action of ``space`` among those ``mask`` (1: allowed; stacked masks end with
    the current one) allows; any action without a mask."""
    if mask is None:
        return space.sample()
    parts = [part.astype(np.int8) for part in allowed_per_dimension(space, mask)]
    return space.sample(mask=tuple(parts) if isinstance(space, gym.spaces.MultiDiscrete) else parts[0])
