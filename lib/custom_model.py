"""A user's model (``a3c.lib.user_models``) inside an algorithm's net: ``CustomFeatures`` gives
the observations to it in the env's own structure and gives its features to the heads.

The net's rows are flat (a Dict observation flattened, ``a3c.lib.observations``) or Atari's
uint8 frames. The user's model gets them as its ``observation_space`` says: a Dict as a dict
of tensors by key, a Tuple as a tuple, each part in its shape, float32, with uint8 images
scaled to [0, 1] and Discrete parts one-hot (how gymnasium flattens them).

The module pickles by value: the factory travels cloudpickled and the module is built again
from it, then takes the pickled parameters and buffers as its own. So a spawned worker, which
never ran the user's script, shares the learner's weights (``share_memory``) with a model
class defined anywhere, a lambda's or a test function's included.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
import torch
from torch import nn

from a3c.lib.envs import EnvInfo
from a3c.lib.observations import columns_outside_images, image_layout
from a3c.lib.user_models import UnknownModel, model_factory


class CustomModelError(ValueError):
    """A custom model that cannot serve: its factory failed, or its module or features do not fit."""


def model_space(env_info: EnvInfo) -> gym.Space:
    """The observation space the user's model is built for: the env's own (an agent's own on
    a multi-agent env) where the net sees it flattened, else Atari's frames or the flat vector
    (an agent's own observation, without the others' in front or its index after)."""
    if env_info.raw_observation_space is not None:
        return env_info.raw_observation_space
    if env_info.observation_dtype == "uint8":
        return gym.spaces.Box(0, 255, env_info.observation_shape, np.uint8)
    if env_info.agents:
        own = env_info.observation_shape[0] - env_info.global_state_size - len(env_info.agents)
        return gym.spaces.Box(-np.inf, np.inf, (own,), np.float32)
    return gym.spaces.Box(-np.inf, np.inf, env_info.observation_shape, np.float32)


def structured(space: gym.Space, rows: torch.Tensor) -> Any:
    """A batch of ``space``'s observations as the model gets them, from the net's rows (flat,
    or in ``space``'s own shape for a Box)."""
    if isinstance(space, gym.spaces.Box):
        values = rows.reshape(rows.shape[0], *space.shape).float()
        return values / 255.0 if image_layout(space) is not None else values
    parts, offset = {}, 0
    spaces = space.spaces if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)) else None
    if spaces is None:  # Discrete (one-hot), MultiDiscrete, MultiBinary: their flattening as it is
        return rows.float()
    for key, part in (spaces.items() if isinstance(space, gym.spaces.Dict) else enumerate(spaces)):
        size = gym.spaces.flatdim(part)
        parts[key] = structured(part, rows[:, offset:offset + size])
        offset += size
    return parts if isinstance(space, gym.spaces.Dict) else tuple(parts.values())


class CustomFeatures(nn.Module):
    """The features of the user's model ``name`` (built by its factory with ``config``) on a
    batch of the net's rows. ``size`` is their width: the model's ``features_dim``, and on a
    multi-agent env the agent's one-hot index after them, so that a policy shared by several
    agents tells them apart. ``vector_columns`` are the row's columns outside images, for the
    observation normaliser.

    An agent's row ends with its own observation, flattened, then its index (the workers of a
    centralised critic put every agent's observation in front: ``a3c.lib.multiagent``); the
    model reads the agent's own observation alone, in the agent's observation space."""

    def __init__(self, env_info: EnvInfo, name: str, config: Mapping[str, Any] | None = None):
        super().__init__()
        self.name, self.config = name, dict(config or {})
        self.space = model_space(env_info)
        self.agents = len(env_info.agents)
        own = gym.spaces.flatdim(self.space) if self.agents else None
        self.own_columns = slice(None) if own is None else slice(-(own + self.agents), -self.agents)
        """Where the model's observation lies in a row."""
        try:
            self._factory = model_factory(name)
        except UnknownModel as exc:
            raise CustomModelError(str(exc)) from None
        self.model = self._built()
        self.vector_columns = columns_outside_images(int(np.prod(env_info.observation_shape)), env_info.image_parts)

    def _built(self) -> nn.Module:
        model = self._factory(self.space, self.config)
        if not isinstance(model, nn.Module):
            raise CustomModelError(f"custom_model {self.name!r}: its factory returned {type(model).__name__}, "
                                   "not a torch.nn.Module")
        size = getattr(model, "features_dim", None)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise CustomModelError(f"custom_model {self.name!r}: the module needs features_dim, the width of its "
                                   f"features (a whole number >= 1), and has {size!r}")
        self.features_dim, self.size = size, size + self.agents
        return model

    def user_features(self, rows: torch.Tensor) -> torch.Tensor:
        """The user's model's own output on a batch of rows: (N, features_dim) when it keeps its word."""
        return self.model(structured(self.space, rows[:, self.own_columns]))

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        features = self.user_features(rows)
        return torch.cat([features, rows[:, -self.agents:].float()], dim=1) if self.agents else features

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        modules = dict(state["_modules"])
        model = modules.pop("model")
        state["_modules"] = modules
        state["_factory"] = cloudpickle.dumps(self._factory)
        state["_tensors"] = {**dict(model.named_parameters(remove_duplicate=False)),
                             **dict(model.named_buffers(remove_duplicate=False))}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        tensors = state.pop("_tensors")
        state["_factory"] = cloudpickle.loads(state["_factory"])
        super().__setstate__(state)
        model = self._built()
        take_tensors(model, tensors, self.name)
        self._modules["model"] = model


def take_tensors(model: nn.Module, tensors: Mapping[str, torch.Tensor], name: str) -> None:
    """Make ``tensors`` (by dotted name) ``model``'s parameters and buffers themselves, not
    copies, so that shared memory stays shared; CustomModelError where the factory built a
    model of other names or shapes here."""
    own = {**dict(model.named_parameters(remove_duplicate=False)), **dict(model.named_buffers(remove_duplicate=False))}
    if own.keys() != tensors.keys() or any(own[key].shape != tensors[key].shape for key in own):
        raise CustomModelError(f"custom_model {name!r}: its factory built another model in this process "
                               "(other parameter names or shapes)")
    for dotted, tensor in tensors.items():
        path, _, leaf = dotted.rpartition(".")
        holder = model.get_submodule(path)
        if leaf in holder._parameters:
            holder._parameters[leaf] = tensor if isinstance(tensor, nn.Parameter) else nn.Parameter(
                tensor, requires_grad=tensor.requires_grad)
        else:
            holder._buffers[leaf] = tensor


def custom_features(env_info: EnvInfo, model: Mapping[str, Any] | None) -> CustomFeatures | None:
    """The user's model that ``model`` (the model config) names, else None."""
    name = (model or {}).get("custom_model")
    return None if name is None else CustomFeatures(env_info, name, model.get("custom_model_config"))


def check_custom_model(env_info: EnvInfo, model: Mapping[str, Any] | None) -> None:
    """CustomModelError in one line where the config's custom model cannot be built or its
    features on two of the env's observations are not (2, features_dim) floats."""
    if (model or {}).get("custom_model") is None:
        return
    name = model["custom_model"]
    try:
        features = custom_features(env_info, model)
        rows = sample_rows(env_info, features, 2)
        with torch.no_grad():
            out = features.user_features(rows)
    except CustomModelError:
        raise
    except Exception as exc:  # the user's code may fail any way; one line says how
        raise CustomModelError(f"custom_model {name!r} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, features.features_dim) or not out.is_floating_point():
        shown = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise CustomModelError(f"custom_model {name!r}: on a batch of 2 observations it gave {shown}, not "
                               f"(2, {features.features_dim}) floats (its features_dim)")


def sample_rows(env_info: EnvInfo, features: CustomFeatures, count: int) -> torch.Tensor:
    """``count`` net rows of random observations of the model's space: on a multi-agent env
    an agent's rows, its observation where ``features`` reads it, then agent 0's one-hot index."""
    space = features.space
    flat = np.stack([gym.spaces.flatten(space, sample) if env_info.raw_observation_space is not None else sample
                     for sample in (space.sample() for _ in range(count))])
    if not env_info.agents:
        return torch.as_tensor(flat)
    rows = np.zeros((count, env_info.observation_shape[0]), np.float32)
    rows[:, features.own_columns] = flat
    rows[:, -len(env_info.agents)] = 1.0
    return torch.as_tensor(rows)


def features_maker(env_info: EnvInfo, settings: Mapping[str, Any]) -> Callable[[], CustomFeatures] | None:
    """What makes a fresh copy of a run's custom model (its settings' model config), one for
    each part of a net that reads the observation apart (an actor, each critic); None
    without one."""
    model = settings.get("model") or {}
    if model.get("custom_model") is None:
        return None
    return lambda: custom_features(env_info, model)
