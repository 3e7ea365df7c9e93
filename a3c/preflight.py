"""Pre-flight: what the machine must give a run, asked once, before any worker starts: the
env's spaces (one env is made), a second env stepped by gymnasium's env checker where a
user's creator makes it and by the check of its observations against its space, the
algorithm's needs (a replay buffer's memory), memory for the children, CUDA, a writable
``--logdir``, wandb for ``--track``, and Ray with an address that answers. Each failure is one ConfigError line,
so the CLI exits 2 before anything starts."""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import TypeVar

import gymnasium as gym
from gymnasium.error import DependencyNotInstalled

from a3c.algos import algorithm_names, get_algorithm
from a3c.config import Config
from a3c.lib.env_kind import registered_by_user
from a3c.lib.envs import EnvError, EnvInfo
from a3c.lib.multiagent import make_parallel_env
from a3c.lib.observation_check import check_agent_observations, check_observations
from a3c.lib.policies import PolicyMappingError, parse_policy_mapping
from a3c.lib.time_limit import TimeLimitExceeded, time_limit
from a3c.options import ConfigError, available_memory
from a3c.transport.backends import check_payload

T = TypeVar("T")

CHILD_MEMORY_FLOOR = 128 * 2**20
"""Less private memory than any child process was measured to take (its torch, its envs;
docs/performance.md, "Memory"): more children than fit at this much cannot all start."""


def check_children_fit(config: Config) -> None:
    """ConfigError where ``--processes`` children could not all start in the memory free now,
    instead of the kernel's out-of-memory killer picking processes, other runs' among them."""
    available = available_memory()
    if config.backend != "mp" or available is None:
        return
    if config.processes * CHILD_MEMORY_FLOOR > available:
        raise ConfigError(f"--processes {config.processes}: each child process takes at least "
                          f"{CHILD_MEMORY_FLOOR >> 20} MiB and {available / 2**30:.1f} GiB are free, "
                          f"room for {available // CHILD_MEMORY_FLOOR} children")


def preflight(config: Config) -> EnvInfo:
    """The env's facts for the run; ConfigError for the first thing this machine lacks."""
    try:
        users = registered_by_user(config.env_id)
    except EnvError as exc:
        raise ConfigError(str(exc)) from exc
    try:
        env_info = config.env_recipe.describe(get_algorithm(config.algo).central_critic)
    except EnvError as exc:
        raise ConfigError(str(exc)) from exc
    except (DependencyNotInstalled, ImportError) as exc:  # Box2D's or MuJoCo's envs without their package
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{config.env_id} needs what is not installed: {first_line}") from exc
    except Exception as exc:  # a user's env or settings may fail any way; one line says how
        if not (users or config.env_config):
            raise
        raise ConfigError(f"making {config.env_id} failed: {type(exc).__name__}: {exc}") from exc
    if env_info.agents:
        try:
            parse_policy_mapping(config.policies, env_info.agents)
        except PolicyMappingError as exc:
            raise ConfigError(str(exc)) from exc
    if config.random_frames and env_info.continuous and not env_info.bounded:
        raise ConfigError(f"--random-frames draws Box actions uniformly within their bounds; "
                          f"{config.env_id}'s are unbounded")
    algorithm = get_algorithm(config.algo)
    kind = env_info.action_space
    if kind not in algorithm.action_spaces:
        takers = ", ".join(name for name in algorithm_names() if kind in get_algorithm(name).action_spaces)
        raise ConfigError(f"--algo {config.algo} takes {' and '.join(sorted(algorithm.action_spaces))} actions "
                          f"and {config.env_id}'s are {kind}; --algo {takers} take {kind} actions")
    algorithm.preflight(config, env_info)
    check_model_builds(config, env_info)
    if env_info.agents:
        check_agent_env_steps(config)
    elif not env_info.atari:
        check_env_steps(config, users)
    if config.cuda:
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--cuda given but CUDA is not available on this machine")
    check_children_fit(config)
    if not is_writable_dir(config.logdir):
        raise ConfigError(f"--logdir {config.logdir!r} cannot be written")
    if config.track and importlib.util.find_spec("wandb") is None:
        raise ConfigError("--track needs wandb: pip install 'a3c[wandb]'")
    check_payload(algorithm, config, env_info)
    if config.backend == "ray":
        if importlib.util.find_spec("ray") is None:
            raise ConfigError("--backend ray needs Ray: pip install 'a3c[ray]'")
        if config.ray_address is not None:
            from a3c.transport.ray_cluster import check_address

            check_address(config.ray_address)
    return env_info


def check_model_builds(config: Config, env_info: EnvInfo) -> None:
    """ConfigError where the model config's custom model cannot be built or gives features of
    the wrong shape (``a3c.lib.custom_model``)."""
    if (config.model or {}).get("custom_model") is None:
        return
    from a3c.lib.custom_model import CustomModelError, check_custom_model

    try:
        check_custom_model(env_info, config.model)
    except CustomModelError as exc:
        raise ConfigError(f"--model {exc}") from None


def check_env_steps(config: Config, by_user: bool) -> None:
    """One env, stepped by the checks that need it: gymnasium's env checker where a creator
    given to ``register_env`` makes it (what it finds wrong is a ConfigError, its warnings
    are shown and the run goes on), then its observations over a reset and a few random
    steps against its observation space (shape, dtype, each Dict key, finite values: every
    worker would crash on a mismatch, or train on NaN)."""
    raw: list[gym.Env] = []
    env = config.env_recipe.make(wrap_raw=lambda inner: raw.append(inner) or inner)
    try:
        if by_user:
            bounded(config, lambda: check_user_env(config, raw[0]))
        problem = bounded(config, lambda: check_observations(raw[0], config.seed))
    finally:
        env.close()
    if problem:
        raise ConfigError(f"{config.env_id}'s observations do not match its observation space {problem}")


def check_agent_env_steps(config: Config) -> None:
    """``check_env_steps`` for a multi-agent env: each agent's observations over a reset and
    a few random steps against its own space."""
    parallel_env = make_parallel_env(config.env_id)
    try:
        problem = bounded(config, lambda: check_agent_observations(parallel_env, config.seed))
    finally:
        parallel_env.close()
    if problem:
        raise ConfigError(f"{config.env_id}'s observations do not match their agents' observation spaces {problem}")


def bounded(config: Config, check: Callable[[], T]) -> T:
    """What ``check`` (which steps the user's env) returns; a ConfigError where it raises
    (one line, saying how) or takes longer than ``--worker-timeout``: not a start that
    never ends (the main thread's timer; elsewhere it waits)."""
    try:
        with time_limit(config.worker_timeout):
            try:
                return check()
            except ConfigError:
                raise
            except Exception as exc:  # a user's env may fail any way
                raise ConfigError(f"stepping {config.env_id} failed: {type(exc).__name__}: {exc}") from exc
    except TimeLimitExceeded:
        raise ConfigError(f"{config.env_id} took more than --worker-timeout {config.worker_timeout:g} s over a "
                          "reset and a few steps") from None


def check_user_env(config: Config, env: gym.Env) -> None:
    """gymnasium's env checker on ``env``, made by a creator given to ``register_env``; on an
    env that masks its actions, with only the actions its observations allow (``ValidActions``)."""
    from gymnasium.utils.env_checker import check_env

    from a3c.lib.observation_check import ValidActions
    from a3c.lib.observations import has_action_masks, mask_columns

    raw = env.unwrapped
    masked = mask_columns(raw.observation_space) is not None or has_action_masks(raw)
    try:
        check_env(ValidActions(raw) if masked else raw, skip_render_check=True)
    except Exception as exc:  # the checker asserts, and the env may raise anything
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{config.env_id} fails gymnasium's env checker: {first_line}") from exc


def is_writable_dir(path: str) -> bool:
    """True if ``path`` is a directory we can write, or one we could create."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    return os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK)
