"""The peer: Stable-Baselines3 A2C (or DQN, PPO, SAC, TD3) on the same envs, run in its own process.

Prints one JSON object: throughput over a window after warm-up, or time to the stop reward
with the mean-100 curve. Envs come from ``a3c.lib.envs.make_env``, so the Atari preprocessing is
exactly the trainer's. Run by ``benchmarks.run``; usable alone:

    python -m benchmarks.sb3_peer --env CartPole-v1 --n-envs 8 --ent-coef 0 --stop-reward 475
    python -m benchmarks.sb3_peer --env CartPole-v1 --n-envs 1 --algo dqn --stop-reward 475
    python -m benchmarks.sb3_peer --env CartPole-v1 --n-envs 8 --algo ppo --stop-reward 475
    python -m benchmarks.sb3_peer --env Pendulum-v1 --n-envs 4 --algo ppo --max-seconds 600
    python -m benchmarks.sb3_peer --env HalfCheetah-v5 --n-envs 1 --algo ppo --max-seconds 7200
    python -m benchmarks.sb3_peer --env Pendulum-v1 --n-envs 1 --algo sac --stop-reward -200 --max-seconds 900
    python -m benchmarks.sb3_peer --env Pendulum-v1 --n-envs 1 --algo td3 --stop-reward -200 --max-seconds 900
    python -m benchmarks.sb3_peer --env BreakoutNoFrameskip-v4 --n-envs 8 --algo ppo --zoo-atari \
        --max-frames 10000000 --max-seconds 20000
    python -m benchmarks.sb3_peer --env BreakoutNoFrameskip-v4 --n-envs 16 --zoo-atari --sb3-wrappers \
        --max-frames 10000000 --max-seconds 20000

PPO with ``--zoo-atari``, and A2C with ``--zoo-atari --sb3-wrappers``, are the RL zoo's whole
Atari recipes, SB3's own AtariWrapper included (life loss ends a training episode, FIRE at
reset, clipped rewards) and 4 stacked frames; its Monitor sits under the wrapper, so the
scores are whole games in the game's points, as the trainer counts them. A2C without
``--sb3-wrappers`` steps this trainer's preprocessing (the throughput benchmark's peer).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from stable_baselines3 import A2C, DQN, PPO, SAC, TD3
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

from a3c.lib.env_kind import is_atari
from a3c.lib.envs import ATARI_FRAME_SKIP, make_env
from benchmarks.mujoco import ZOO_HALFCHEETAH_PPO, ZOO_HALFCHEETAH_PPO_STEPS


class Watch(BaseCallback):
    """Records (seconds, env frames, mean-100) once a second, frames being agent steps times
    ``frames_per_step`` (4 on Atari), as the trainer counts them; stops at the reward or the
    time limit."""

    def __init__(self, stop_reward: float | None, max_seconds: float, frames_per_step: int,
                 max_frames: int | None = None):
        super().__init__()
        self.max_frames = max_frames
        self.frames_per_step = frames_per_step
        self.stop_reward = stop_reward
        self.max_seconds = max_seconds
        self.started = time.monotonic()
        self.curve: list[tuple[float, int, float | None]] = []
        self.solved_at: tuple[float, int] | None = None
        self._next_point = 0.0

    def _mean_100(self) -> float | None:
        buffer = self.model.ep_info_buffer
        return sum(info["r"] for info in buffer) / len(buffer) if buffer else None

    def _on_step(self) -> bool:
        elapsed = time.monotonic() - self.started
        if elapsed >= self._next_point:
            self.curve.append((round(elapsed, 3), self.num_timesteps * self.frames_per_step, self._mean_100()))
            self._next_point = elapsed + 1.0
        buffer = self.model.ep_info_buffer
        full = len(buffer) == buffer.maxlen
        if self.stop_reward is not None and full and self._mean_100() >= self.stop_reward:
            self.solved_at = (elapsed, self.num_timesteps)
            return False
        out_of_frames = self.max_frames is not None and self.num_timesteps * self.frames_per_step >= self.max_frames
        return elapsed < self.max_seconds and not out_of_frames


ZOO_DQN_STEPS = 50_000
"""The RL zoo trains its CartPole DQN for 50k steps; its epsilon falls over 16% of them."""
DQN_MAX_STEPS = 10**6
ZOO_CARTPOLE_DQN = {
    "learning_rate": 2.3e-3, "batch_size": 64, "buffer_size": 100_000, "learning_starts": 1000,
    "gamma": 0.99, "target_update_interval": 10, "train_freq": 256, "gradient_steps": 128,
    "exploration_fraction": 0.16 * ZOO_DQN_STEPS / DQN_MAX_STEPS, "exploration_final_eps": 0.04,
    "policy_kwargs": {"net_arch": [256, 256]},
}
"""rl-baselines3-zoo's DQN values for CartPole-v1 (its hyperparams/dqn.yml). The run may go
on past the zoo's 50k steps until solved, so the exploration fraction is rescaled to fall
over the same 8,000 steps."""

ZOO_PPO_STEPS = 100_000
ZOO_CARTPOLE_PPO = {
    "n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "ent_coef": 0.0,
    "learning_rate": lambda remaining: 1e-3 * remaining, "clip_range": lambda remaining: 0.2 * remaining,
}
"""rl-baselines3-zoo's PPO values for CartPole-v1 (its hyperparams/ppo.yml, 8 envs): the
learning rate and the clip fall linearly to 0 over its 100k steps, so the run stops there."""

ZOO_ATARI_PPO_STEPS = 10_000_000
ZOO_ATARI_PPO = {
    "n_steps": 128, "n_epochs": 4, "batch_size": 256, "vf_coef": 0.5, "ent_coef": 0.01,
    "learning_rate": lambda remaining: 2.5e-4 * remaining, "clip_range": lambda remaining: 0.1 * remaining,
}
"""rl-baselines3-zoo's PPO values for Atari (its hyperparams/ppo.yml, 8 envs, 4 stacked frames):
the learning rate and the clip fall linearly over its 1e7 steps (40M frames), so a run cut
short by --max-frames sees the first part of the same schedules."""


ZOO_PENDULUM_PPO_STEPS = 100_000
ZOO_PENDULUM_PPO = {
    "n_steps": 1024, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10, "ent_coef": 0.0, "learning_rate": 1e-3,
    "clip_range": 0.2, "use_sde": True, "sde_sample_freq": 4,
}
"""rl-baselines3-zoo's PPO values for Pendulum-v1 (its hyperparams/ppo.yml, 4 envs, 1e5 steps,
generalized state-dependent exploration)."""


ZOO_PENDULUM_SAC = {"learning_rate": 1e-3}
"""rl-baselines3-zoo's SAC values for Pendulum-v1 (its hyperparams/sac.yml): SB3's defaults
(batch 256, one gradient step an env step, learning from 100 steps, a learned temperature)
at a learning rate of 1e-3."""
ZOO_MUJOCO_SAC = {"learning_starts": 10_000}
"""Its MuJoCo SAC: SB3's defaults, learning from 10,000 steps."""
ZOO_PENDULUM_TD3 = {"gamma": 0.98, "buffer_size": 200_000, "learning_starts": 10_000, "gradient_steps": -1,
                    "train_freq": (1, "episode"), "learning_rate": 1e-3, "policy_kwargs": {"net_arch": [400, 300]}}
"""rl-baselines3-zoo's TD3 values for Pendulum-v1 (its hyperparams/td3.yml), with Gaussian
action noise of std 0.1: after each episode as many gradient steps as it had steps."""
ZOO_MUJOCO_TD3 = {"learning_starts": 10_000}
"""TD3 elsewhere: SB3's defaults (its paper values) learning from 10,000 steps, noise 0.1."""


def halfcheetah_policy() -> dict:
    """The zoo's HalfCheetah net: separate 256x256 ReLU MLPs, log-std starting at -2, no
    orthogonal initialisation."""
    from torch import nn

    return {"log_std_init": -2, "ortho_init": False, "activation_fn": nn.ReLU,
            "net_arch": {"pi": [256, 256], "vf": [256, 256]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--n-envs", type=int, required=True)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--stop-reward", type=float, default=None)
    parser.add_argument("--max-seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algo", choices=["a2c", "dqn", "ppo", "sac", "td3"], default="a2c",
                        help="dqn: the RL zoo's tuned CartPole DQN (pass --n-envs 1); ppo: its "
                             "tuned CartPole PPO (pass --n-envs 8), on Pendulum-v1 its Pendulum "
                             "PPO (pass --n-envs 4), on HalfCheetah its HalfCheetah PPO (--n-envs 1); "
                             "sac, td3: its Pendulum SAC or TD3, else its MuJoCo values (pass --n-envs 1)")
    parser.add_argument("--zoo-atari", action="store_true",
                        help="the RL zoo's tuned Atari A2C: value weight 0.25, RMSprop as TF has it "
                             "with eps 1e-5 (pass --n-envs 16 and the default --ent-coef 0.01); with "
                             "--algo ppo its Atari PPO and wrappers (pass --n-envs 8)")
    parser.add_argument("--sb3-wrappers", action="store_true",
                        help="Atari through SB3's make_atari_env and 4 stacked frames, as the RL zoo "
                             "trains (always so for --algo ppo --zoo-atari)")
    parser.add_argument("--max-frames", type=int, default=None, help="stop after this many env frames")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch's threads (default: torch's own, one a core); beside other "
                             "processes two threads that wait on each other crawl")
    args = parser.parse_args()
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    zoo_atari_ppo = args.zoo_atari and args.algo == "ppo"
    if zoo_atari_ppo or args.sb3_wrappers:
        envs = VecFrameStack(make_atari_env(args.env, n_envs=args.n_envs, seed=args.seed), n_stack=4)
    else:
        envs = DummyVecEnv([lambda: Monitor(make_env(args.env))] * args.n_envs)
    policy = "CnnPolicy" if is_atari(args.env) else "MlpPolicy"
    tuned = {}
    if args.zoo_atari:
        tuned = {"vf_coef": 0.25, "policy_kwargs": {"optimizer_class": RMSpropTFLike,
                                                    "optimizer_kwargs": {"eps": 1e-5}}}
    if args.algo == "dqn":
        model = DQN(policy, envs, seed=args.seed, device="cpu", **ZOO_CARTPOLE_DQN)
    elif zoo_atari_ppo:
        model = PPO(policy, envs, seed=args.seed, device="cpu", **ZOO_ATARI_PPO)
    elif args.algo == "ppo" and args.env.startswith("HalfCheetah"):
        envs = VecNormalize(envs, gamma=ZOO_HALFCHEETAH_PPO["gamma"])
        model = PPO(policy, envs, seed=args.seed, device="cpu", policy_kwargs=halfcheetah_policy(),
                    **ZOO_HALFCHEETAH_PPO)
    elif args.algo == "ppo" and args.env == "Pendulum-v1":
        model = PPO(policy, envs, seed=args.seed, device="cpu", **ZOO_PENDULUM_PPO)
    elif args.algo == "ppo":
        model = PPO(policy, envs, seed=args.seed, device="cpu", **ZOO_CARTPOLE_PPO)
    elif args.algo == "sac":
        tuned_sac = ZOO_PENDULUM_SAC if args.env == "Pendulum-v1" else ZOO_MUJOCO_SAC
        model = SAC(policy, envs, seed=args.seed, device="cpu", **tuned_sac)
    elif args.algo == "td3":
        tuned_td3 = ZOO_PENDULUM_TD3 if args.env == "Pendulum-v1" else ZOO_MUJOCO_TD3
        size = envs.action_space.shape[0]
        noise = NormalActionNoise(np.zeros(size), 0.1 * np.ones(size))
        model = TD3(policy, envs, seed=args.seed, device="cpu", action_noise=noise, **tuned_td3)
    else:
        model = A2C(policy, envs, ent_coef=args.ent_coef, seed=args.seed, device="cpu", **tuned)
    frames_per_step = ATARI_FRAME_SKIP if is_atari(args.env) else 1
    watch = Watch(args.stop_reward, args.max_seconds, frames_per_step, args.max_frames)
    ppo_steps = ZOO_ATARI_PPO_STEPS if zoo_atari_ppo else (
        ZOO_PENDULUM_PPO_STEPS if args.env == "Pendulum-v1" else
        ZOO_HALFCHEETAH_PPO_STEPS if args.env.startswith("HalfCheetah") else ZOO_PPO_STEPS)
    steps = {"dqn": DQN_MAX_STEPS, "ppo": ppo_steps}.get(args.algo, 10**9)
    model.learn(total_timesteps=steps, callback=watch)
    print(json.dumps({
        "solved": watch.solved_at is not None,
        "seconds": watch.solved_at[0] if watch.solved_at else time.monotonic() - watch.started,
        "frames": (watch.solved_at[1] if watch.solved_at else model.num_timesteps) * frames_per_step,
        "curve": watch.curve,
        "torch_threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
