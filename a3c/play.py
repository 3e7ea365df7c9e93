"""Play a saved checkpoint: N episodes, greedy or sampled actions, optionally on video.

    python play_a3c.py runs/NAME__ENV__SEED__TIME/best.pt --episodes 5 --greedy --record videos/

Runs on the CPU in this one process; the env id and network come from the checkpoint.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from a3c.algos import get_algorithm
from a3c.algos.base import Algorithm
from a3c.lib.distributions import policy_distribution
from a3c.lib.env_kind import is_multiagent
from a3c.lib.envs import EnvError, EnvRecipe
from a3c.lib.models import evaluate
from a3c.lib.recurrent import is_recurrent
from a3c.lib.recurrent import step as recurrent_step
from a3c.lib.user_envs import search_working_folder
from a3c.lifecycle.checkpoint import CheckpointError, load_checkpoint, saved_algorithm
from a3c.preflight import is_writable_dir

DEFAULT_MAX_STEPS = 27_000
"""Agent steps per episode: 108,000 Atari frames, the usual 30-minute evaluation cap."""


class PlayError(ValueError):
    """Bad input to play; the message is one line for the user."""


@dataclass(frozen=True)
class EpisodePlayed:
    reward: float
    length: int
    cut: bool
    """True when ``max_steps`` ended the episode rather than the env."""


def build_parser(prog: str = "play_a3c.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("checkpoint", help="checkpoint.pt or best.pt of a run")
    parser.add_argument("-e", "--episodes", type=int, default=5, help="episodes to play")
    parser.add_argument("--greedy", action="store_true",
                        help="take the most probable action instead of sampling the policy")
    parser.add_argument("--record", metavar="DIR", default=None,
                        help="write one video per episode into DIR (needs the [video] extra)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode's reset")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                        help="cut an episode after this many agent steps")
    return parser


class SavedPolicy(NamedTuple):
    """What playing a checkpoint needs: its env, made as the net saw it, the algorithm and the net."""

    env: EnvRecipe
    algorithm: Algorithm
    net: nn.Module


def load_policy(path: str) -> SavedPolicy:
    """The env, the algorithm and the trained net of a checkpoint, on the CPU."""
    try:
        state = load_checkpoint(path)
        env = EnvRecipe.from_settings(state["config"])
        algorithm = get_algorithm(saved_algorithm(state))
        net = algorithm.build_net(env.describe(algorithm.central_critic), state["config"])
        net.load_state_dict(state["model"])
    except (CheckpointError, EnvError) as exc:
        raise PlayError(str(exc)) from exc
    except (KeyError, TypeError, RuntimeError) as exc:
        raise PlayError(f"{path!r} does not hold a usable network ({type(exc).__name__})") from exc
    return SavedPolicy(env, algorithm, net.eval())


def make_play_env(policy: SavedPolicy, record_dir: str | None) -> gym.Env:
    """The env ``policy`` was trained on, as its workers made it; recording each episode's
    video in ``record_dir``, if given."""
    env_id = policy.env.env_id
    if record_dir is None:
        return policy.env.make()
    if is_multiagent(env_id):
        raise PlayError(f"--record is for single-agent envs; {env_id} has several agents")
    try:  # RecordVideo needs moviepy, classic-control rendering pygame: fail now, not mid-episode
        import moviepy  # noqa: F401
        import pygame  # noqa: F401
    except ImportError as exc:
        raise PlayError(f'--record needs {exc.name}: pip install -e ".[video]"') from exc
    if not is_writable_dir(record_dir):
        raise PlayError(f"--record {record_dir!r} cannot be written")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # render off-screen, no display needed
    recorder = partial(gym.wrappers.RecordVideo, video_folder=record_dir,
                       episode_trigger=lambda episode: True, name_prefix=env_id.replace("/", "-"))
    return policy.env.make(render_mode="rgb_array", wrap_raw=recorder)


def policy_step(net: nn.Module, algorithm: Algorithm, observations: np.ndarray, greedy: bool,
                state: torch.Tensor | None = None) -> tuple[np.ndarray, torch.Tensor | None]:
    """The actions ``net`` takes on a batch of raw env observations, on the net's device, as
    ``algorithm`` plays: sampled from the policy or its most probable ones (a Q-network's
    greedy ones always), within a Box action space's bounds; and a recurrent net's next state
    (from ``state``, zeros when None), else None."""
    device = next(net.parameters()).device
    observations = torch.as_tensor(np.asarray(observations), device=device)
    if is_recurrent(net):
        state = net.initial_state(len(observations), device) if state is None else state.to(device)
        head, _, state = recurrent_step(net, observations, state)
    else:
        head, _ = evaluate(net, observations)
    distribution = policy_distribution(net)
    return distribution.env_actions(algorithm.play_actions(head, greedy, distribution).cpu().numpy()), state


def policy_actions(net: nn.Module, algorithm: Algorithm, observations: np.ndarray, greedy: bool) -> np.ndarray:
    """``policy_step``'s actions, a recurrent net's from zero states."""
    return policy_step(net, algorithm, observations, greedy)[0]


def act_once(net: nn.Module, algorithm: Algorithm, observation: np.ndarray, state: torch.Tensor | None = None,
             greedy: bool = False) -> tuple[int | np.ndarray, torch.Tensor | None]:
    """The action for one env observation: an int, or one per agent for a multi-agent env's
    joint observation (``a3c.lib.multiagent.JointEnv``); and a recurrent net's next state."""
    actions, state = policy_step(net, algorithm, np.asarray(observation)[None], greedy, state)
    return (int(actions[0]) if actions[0].ndim == 0 else actions[0]), state


def play_episode(env: gym.Env, act: Callable[[np.ndarray, Any], tuple[int | np.ndarray, Any]], seed: int,
                 max_steps: int) -> EpisodePlayed:
    """One episode with ``act(observation, state)`` choosing each action from the raw
    observation and the state its last call returned (None at the start; a recurrent
    policy's memory, which starts each episode empty)."""
    observation, _ = env.reset(seed=seed)
    total, steps, state = 0.0, 0, None
    while steps < max_steps:
        action, state = act(observation, state)
        observation, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
        if terminated or truncated:
            return EpisodePlayed(total, steps, cut=False)
    return EpisodePlayed(total, steps, cut=True)


def play(path: str, episodes: int, greedy: bool = False, record_dir: str | None = None,
         seed: int = 0, max_steps: int = DEFAULT_MAX_STEPS) -> list[EpisodePlayed]:
    """Play and print each episode's return; PlayError on bad input, before any episode."""
    if episodes < 1:
        raise PlayError(f"--episodes must be >= 1, got {episodes}")
    if max_steps < 1:
        raise PlayError(f"--max-steps must be >= 1, got {max_steps}")
    policy = load_policy(path)
    torch.manual_seed(seed)
    env = make_play_env(policy, record_dir)
    played = []
    try:
        for index in range(episodes):
            episode = play_episode(env, partial(act_once, policy.net, policy.algorithm, greedy=greedy),
                                   seed + index, max_steps)
            played.append(episode)
            cut = f" (cut at {max_steps} steps)" if episode.cut else ""
            print(f"episode {index + 1}: return {episode.reward:.1f}, {episode.length} steps{cut}",
                  flush=True)
    finally:
        env.close()
    mode = "greedy" if greedy else "sampled"
    print(f"{policy.env.env_id}, {mode} actions: mean return {np.mean([e.reward for e in played]):.2f} "
          f"over {episodes} episodes" + (f"; videos in {record_dir}" if record_dir else ""), flush=True)
    return played


def main(argv: Sequence[str] | None = None, prog: str = "play_a3c.py") -> int:
    """Play from the command line (``prog`` names the command in its usage and errors); a
    checkpoint of an env in the user's module (``mymodule:name``) finds it from the working
    folder, as training did."""
    search_working_folder()
    args = build_parser(prog).parse_args(argv)
    try:
        play(args.checkpoint, args.episodes, args.greedy, args.record, args.seed, args.max_steps)
    except PlayError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        sys.exit(2)
    return 0


def installed_command() -> int:
    """The ``a3c-play`` command: ``main`` under that name."""
    return main(prog="a3c-play")


if __name__ == "__main__":
    sys.exit(main(prog="python -m a3c.play"))
