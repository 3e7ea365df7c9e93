"""Environment construction: Atari with the standard preprocessing, anything else as-is.

Atari envs are recognised by their ALE entry point and get the standard preprocessing
(grey frames of 84x84 or 42x42 pixels, frame skip 4 with max-pooling, up to 30 no-ops, a
4-frame stack, uint8 end to end). Training steps them in ale-py's native vector env, which
does that preprocessing in C++ and costs about half a core-millisecond per step where
gymnasium's Python wrappers cost over one; a single env (play, the SB3 peer) uses
gymnasium's wrappers, which produce the same pixels. Envs stepped one by one use SAME_STEP autoreset so that the final
observation of an episode is reported in ``info["final_obs"]`` and no step is spent on a
dummy reset; gymnasium's numpy-vectorised envs only have NEXT_STEP, which the n-step
accumulator also handles.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from a3c.lib.env_kind import _spec, check_stackable, is_atari, is_multiagent, registered_by_user
from a3c.lib.memory_task import register as register_memory_task
from a3c.lib.multiagent import (
    AgentSlots,
    JointEnv,
    MultiAgentEnvError,
    agent_spaces,
    make_parallel_env,
    observation_width,
    reward_threshold,
)
from a3c.lib.observations import (
    MIN_IMAGE_SIDE,
    EnvError,
    ImagePart,
    MaskInObservation,
    StackedObservations,
    flat_observations,
    has_action_masks,
    image_parts,
    mask_columns,
    needs_flattening,
    unflattened_space,
)
from a3c.lib.user_envs import EnvContext

ATARI_FRAME_SKIP = 4
ATARI_FRAME_STACK = 4
ATARI_SCREEN_SIZE = 84
SCREEN_SIZES = (84, 42)
"""The Atari frame sides the nets take: the Nature DQN's 84 pixels, or 42 (as
universe-starter-agent and pytorch-a3c use), a quarter of the pixels."""
ATARI_NOOP_MAX = 30
FIRE = 1
"""The ALE's action number of FIRE, where a game has it."""



def _register_atari() -> None:
    """Register ale-py's ids, and keep its warnings but not its banner, which it printed
    above a run's first line (and above a bad input's one-line error)."""
    try:
        import ale_py
    except ImportError:  # Atari is optional at import time; unknown ids are reported later
        return
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Warning)
    gym.register_envs(ale_py)


_register_atari()
register_memory_task()


def run_frames_per_step(config: Any) -> int:
    """Env frames the whole run advances per vector step of one worker (every worker's envs
    step once): what a worker multiplies its own steps by to estimate the run's frames."""
    return config.processes * config.envs_per_process * (ATARI_FRAME_SKIP if is_atari(config.env_id) else 1)










def make_env(env_id: str, render_mode: str | None = None,
             wrap_raw: Callable[[gym.Env], gym.Env] | None = None,
             noop_max: int = ATARI_NOOP_MAX, screen_size: int | None = None,
             env_config: Mapping[str, Any] | None = None, worker_index: int = 0, vector_index: int = 0,
             frame_stack: int = 1) -> gym.Env:
    """One env, preprocessed the way the models expect it; Atari frames are
    ``screen_size`` pixels square (None: ``ATARI_SCREEN_SIZE``); any other env's observation
    is its last ``frame_stack`` observations (``StackedObservations``), flattened where the
    nets need it.

    ``env_config`` goes to a registered env's creator as an ``EnvContext`` (with the worker's
    and the env's index), or to ``gymnasium.make`` as keywords for any other id.

    ``wrap_raw`` wraps the env before any preprocessing: a video recorder placed there
    sees every frame in colour rather than the net's small grey, frame-skipped view.
    The frame stack starts from zero frames, as the native vector env's does.
    """
    check_stackable(env_id, frame_stack)
    if is_multiagent(env_id):
        return JointEnv(env_id)
    kwargs = {} if render_mode is None else {"render_mode": render_mode}
    if registered_by_user(env_id):
        kwargs["env_config"] = EnvContext(env_config, worker_index, vector_index)
    else:
        kwargs.update(env_config or {})
    if not is_atari(env_id):
        env = gym.make(env_id, **kwargs)
        if wrap_raw is not None:
            env = wrap_raw(env)
        if has_action_masks(env):
            env = MaskInObservation(env)
        if frame_stack > 1:
            env = StackedObservations(env, frame_stack)
        return flat_observations(env) if needs_flattening(env.observation_space) else env
    if env_id.startswith("ALE/"):
        kwargs["frameskip"] = 1
    env = gym.make(env_id, **kwargs)
    if wrap_raw is not None:
        env = wrap_raw(env)
    env = FireResetPreprocessing(
        env, noop_max=noop_max, frame_skip=ATARI_FRAME_SKIP,
        screen_size=screen_size or ATARI_SCREEN_SIZE, terminal_on_life_loss=False,
        grayscale_obs=True, scale_obs=False,
    )
    return gym.wrappers.FrameStackObservation(env, ATARI_FRAME_STACK, padding_type="zero")


class FireResetPreprocessing(gym.wrappers.AtariPreprocessing):
    """gymnasium's Atari preprocessing, and after each reset's no-ops one frame of FIRE where
    the game has that action, as the native vector env does (``use_fire_reset``): games such
    as Breakout wait for it before play begins. Where FIRE does nothing at the start (Pong) it
    is one more frame of no-op."""

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict]:
        observation, info = super().reset(**kwargs)
        if "FIRE" not in self.env.unwrapped.get_action_meanings():
            return observation, info
        _, _, terminated, truncated, _ = self.env.step(FIRE)
        if terminated or truncated:
            return super().reset(**kwargs)
        if self.grayscale_obs:
            self.ale.getScreenGrayscale(self.obs_buffer[0])
        else:
            self.ale.getScreenRGB(self.obs_buffer[0])
        self.obs_buffer[1].fill(0)
        return self._get_obs(), info


def sync_vector_env(env_fns: list[Callable[[], gym.Env]]) -> SyncVectorEnv:
    """An env from each of ``env_fns``, stepped in lockstep, with the final observation kept in info."""
    return SyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP)


def make_vector_env(env_id: str, num_envs: int, noop_max: int = ATARI_NOOP_MAX,
                    screen_size: int | None = None, env_config: Mapping[str, Any] | None = None,
                    worker_index: int = 0, global_state: bool = False, frame_stack: int = 1) -> VectorEnv:
    """The envs a worker steps: ale-py's native vector env for Atari, the env's own numpy
    vectorisation where gymnasium registers one (CartPole: NEXT_STEP autoreset, about a
    fifth of the time of 16 separate envs) unless ``env_config`` or ``frame_stack`` is given,
    else ``sync_vector_env`` of ``make_env`` (each env told its ``worker_index`` and its
    index). A multi-agent env gives ``AgentSlots``: a slot per agent of each of the
    ``num_envs`` envs."""
    if is_multiagent(env_id):
        return AgentSlots(env_id, num_envs, global_state)
    spec = _spec(env_id)
    if not is_atari(env_id):
        if spec.vector_entry_point is not None and not env_config and frame_stack == 1:
            return gym.make_vec(spec, num_envs=num_envs, vectorization_mode="vector_entry_point")
        return sync_vector_env([partial(make_env, env_id, env_config=env_config, worker_index=worker_index,
                                        vector_index=index, frame_stack=frame_stack) for index in range(num_envs)])
    screen_size = screen_size or ATARI_SCREEN_SIZE
    from ale_py.vector_env import AtariVectorEnv

    # make_env runs the ALE at frameskip 1, so a registered TimeLimit counts raw frames too
    limits = [spec.kwargs.get("max_num_frames_per_episode"), spec.max_episode_steps]
    frames_limit = min((limit for limit in limits if limit), default=108_000)
    return AtariVectorEnv(
        spec.kwargs["game"], num_envs, num_threads=1,
        autoreset_mode=AutoresetMode.SAME_STEP,
        repeat_action_probability=float(spec.kwargs.get("repeat_action_probability", 0.25)),
        full_action_space=bool(spec.kwargs.get("full_action_space", False)),
        max_num_frames_per_episode=frames_limit,
        img_height=screen_size, img_width=screen_size, grayscale=True,
        stack_num=ATARI_FRAME_STACK, frameskip=ATARI_FRAME_SKIP, maxpool=True, noop_max=noop_max,
        episodic_life=False, reward_clipping=False, use_fire_reset=True,
    )






@dataclass(frozen=True)
class EnvInfo:
    """What the trainer needs to know about an env before any worker starts."""

    env_id: str
    observation_shape: tuple[int, ...]
    observation_dtype: str
    n_actions: int
    atari: bool
    frames_per_step: int
    reward_threshold: float | None
    agents: tuple[str, ...] = ()
    """A multi-agent env's agents, in order; each observation ends with the agent's one-hot
    index among them (``a3c.lib.multiagent``)."""
    action_low: tuple[float, ...] | None = None
    """A Box action space's bounds (``n_actions`` is then its size); None for Discrete."""
    action_high: tuple[float, ...] | None = None
    action_nvec: tuple[int, ...] | None = None
    """A MultiDiscrete action space's sizes (``n_actions`` is then their sum); None otherwise."""
    raw_observation_space: gym.Space | None = None
    """The env's own observation space where the net sees it flattened (Dict, Tuple, Discrete, images)."""
    global_state_size: int = 0
    """A multi-agent observation's leading part holding every agent's own (``AgentSlots``'s
    ``global_state``), 0 without it."""
    image_parts: tuple[ImagePart, ...] = ()
    """The images in a flattened observation, each read by a conv net of its own (``a3c.lib.models``)."""
    action_mask: tuple[int, int] | None = None
    """Where a Dict observation's ``action_mask`` lies in the flattened row, (offset, size)
    (``a3c.lib.action_masks``), the offset from the row's end where negative (a multi-agent
    env's, whose rows may lead with the global state); None without one."""

    @property
    def continuous(self) -> bool:
        return self.action_low is not None

    @property
    def bounded(self) -> bool:
        """Box actions whose every bound is finite (uniform draws and squashing need them)."""
        return self.continuous and all(math.isfinite(bound) for bound in (*self.action_low, *self.action_high))

    @property
    def discrete(self) -> bool:
        """One Discrete action (a Categorical policy)."""
        return self.action_low is None and self.action_nvec is None

    @property
    def action_space(self) -> str:
        """The action space's kind: "Discrete", "Box" or "MultiDiscrete"."""
        return "Box" if self.continuous else "MultiDiscrete" if self.action_nvec is not None else "Discrete"

    @property
    def action_shape(self) -> tuple[int, ...]:
        """One action's shape: () for Discrete, (size,) for Box."""
        if self.action_nvec is not None:
            return (len(self.action_nvec),)
        return (self.n_actions,) if self.continuous else ()

    @property
    def action_dtype(self) -> str:
        return "float32" if self.continuous else "int64"

    @property
    def frame_stack(self) -> int | None:
        """How many frames each observation stacks on its first axis (Atari), else None."""
        return ATARI_FRAME_STACK if self.atari else None


def describe_env(env_id: str, screen_size: int | None = None, env_config: Mapping[str, Any] | None = None,
                 global_state: bool = False, frame_stack: int = 1) -> EnvInfo:
    """Build one env (Atari frames ``screen_size`` pixels square, None: the default), check
    that the nets can take it, and report its shapes.

    Raises EnvError for unknown ids, actions neither Discrete nor a flat MultiDiscrete or Box, and
    observations that are neither a flat vector, Atari frames nor an image (``image_layout``).
    A multi-agent env is described as one agent sees it: its own observation and one-hot index
    (after every agent's, with ``global_state``), its actions. With ``frame_stack``, the
    observation is that many of the env's own (``StackedObservations``): an image's frames as
    its channels, anything else end to end.
    """
    check_stackable(env_id, frame_stack)
    if is_multiagent(env_id):
        return _describe_multiagent(env_id, global_state)
    atari = is_atari(env_id)
    env = make_env(env_id, screen_size=screen_size, env_config=env_config, frame_stack=frame_stack)
    try:
        action_space, obs_space = env.action_space, env.observation_space
        raw_space = None if atari else unflattened_space(env)
    finally:
        env.close()
    box_actions = isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1
    multi_discrete = isinstance(action_space, gym.spaces.MultiDiscrete) and len(action_space.shape) == 1
    if not isinstance(action_space, gym.spaces.Discrete) and not box_actions and not multi_discrete:
        raise EnvError(
            f"{env_id} has a {type(action_space).__name__} action space of shape {action_space.shape}; "
            "the actions must be Discrete, a flat MultiDiscrete or a flat Box"
        )
    nvec = tuple(int(count) for count in action_space.nvec) if multi_discrete else None
    if not isinstance(obs_space, gym.spaces.Box):
        raise EnvError(f"{env_id} has a {type(obs_space).__name__} observation space; need a Box")
    if not atari and len(obs_space.shape) != 1:
        raise EnvError(
            f"{env_id} observations have shape {obs_space.shape}; the MLP needs a flat vector, the "
            f"conv nets Atari frames or uint8 images of 0-255 (height, width, channels, or channels "
            f"first) at least {MIN_IMAGE_SIDE} pixels a side, with fewer channels"
        )
    mask = mask_columns(raw_space, frame_stack)
    if mask is not None and (box_actions or mask[1] != (sum(nvec) if nvec else action_space.n)):
        raise EnvError(f"{env_id}'s action_mask has {mask[1]} values; it needs one per action of its "
                       f"{type(action_space).__name__} action space (Discrete or MultiDiscrete)")
    return EnvInfo(
        env_id=env_id,
        observation_shape=tuple(obs_space.shape),
        observation_dtype=np.dtype(obs_space.dtype).name,
        n_actions=int(action_space.shape[0] if box_actions else sum(nvec) if nvec else action_space.n),
        atari=atari,
        frames_per_step=ATARI_FRAME_SKIP if atari else 1,
        reward_threshold=_spec(env_id).reward_threshold,
        action_low=tuple(map(float, action_space.low)) if box_actions else None,
        action_high=tuple(map(float, action_space.high)) if box_actions else None,
        action_nvec=nvec,
        raw_observation_space=raw_space,
        image_parts=image_parts(raw_space) if raw_space is not None else (),
        action_mask=mask,
    )


@dataclass(frozen=True)
class EnvRecipe:
    """How a run makes its env: the id and every setting that shapes what the net sees.
    The workers, evaluation, play and a checkpoint all make the env from one recipe, so an
    env setting is a field here (and a keyword of ``make_env``), not a parameter threaded
    through each of them."""

    env_id: str
    screen_size: int | None = None
    """Atari frames' side in pixels (None: ``ATARI_SCREEN_SIZE``)."""
    env_config: Mapping[str, Any] | None = None
    frame_stack: int = 1

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> EnvRecipe:
        """The recipe among a run's settings (a Config's fields or a checkpoint's saved
        config); a setting that an older checkpoint lacks takes its default."""
        return cls(**{field.name: settings[field.name] for field in fields(cls) if field.name in settings})

    def make(self, render_mode: str | None = None, wrap_raw: Callable[[gym.Env], gym.Env] | None = None,
             worker_index: int = 0, vector_index: int = 0) -> gym.Env:
        """One env (``make_env``)."""
        return make_env(self.env_id, render_mode, wrap_raw, screen_size=self.screen_size,
                        env_config=self.env_config, worker_index=worker_index, vector_index=vector_index,
                        frame_stack=self.frame_stack)

    def make_vector(self, num_envs: int, worker_index: int = 0, global_state: bool = False) -> VectorEnv:
        """A worker's envs (``make_vector_env``)."""
        return make_vector_env(self.env_id, num_envs, screen_size=self.screen_size, env_config=self.env_config,
                               worker_index=worker_index, global_state=global_state, frame_stack=self.frame_stack)

    def describe(self, global_state: bool = False) -> EnvInfo:
        """The env's facts (``describe_env``)."""
        return describe_env(self.env_id, self.screen_size, self.env_config, global_state, self.frame_stack)


def _describe_multiagent(env_id: str, global_state: bool) -> EnvInfo:
    parallel_env = make_parallel_env(env_id)
    try:
        spaces = agent_spaces(env_id, parallel_env)
    except MultiAgentEnvError as exc:
        raise EnvError(str(exc)) from exc
    finally:
        parallel_env.close()
    mask = None
    if spaces.mask is not None:  # counted from the row's end: play's rows lack the global state workers' have
        offset, size = spaces.mask
        mask = (offset - spaces.observation_size - len(spaces.agents), size)
    return EnvInfo(env_id=env_id, observation_shape=(observation_width(spaces, global_state),),
                   observation_dtype="float32", n_actions=spaces.n_actions, atari=False, frames_per_step=1,
                   reward_threshold=reward_threshold(env_id), agents=spaces.agents,
                   global_state_size=len(spaces.agents) * spaces.observation_size if global_state else 0,
                   raw_observation_space=spaces.observation_space, action_mask=mask)
