"""The run's configuration: one dataclass, per-env-family presets, and the command-line parser.

Flags left unset take the preset of the env's family: values that solve Pong for Atari
(docs/learning.md), values measured on CartPole for vector-observation envs.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from lib.envs import EnvError, EnvInfo, describe_env
from lib.loss import LossSettings
from lib.models import HEADS


class ConfigError(ValueError):
    """A setting that cannot work; the message is one line for the user."""


@dataclass(frozen=True)
class Preset:
    """Hyperparameters tuned for one family of envs; each is a flag of the same name."""

    processes: int
    """Child processes stepping envs."""
    envs_per_process: int
    """Envs each child steps in lockstep (one inference per vector step)."""
    learner_threads: int
    """torch threads of the learner process."""
    batch_size: int
    """Transitions per optimizer step (grads mode: per child's gradient)."""
    reward_steps: int
    """n of the n-step return."""
    gamma: float
    lr: float
    entropy_beta: float
    clip_grad: float
    """Maximum global gradient norm."""
    adam_eps: float
    """Adam's epsilon: far above the gradients' RMS it turns Adam into SGD at lr / eps."""
    value_weight: float
    """Weight of the value loss against the policy loss."""
    lr_warmup: int
    """Optimizer steps over which the learning rate rises linearly from 0 to ``lr``."""
    heads: str
    """Atari net: "shared" 512-unit layer with linear heads, or "separate" layers (reference)."""


def _layout(cores: int, envs_in_total: int) -> dict[str, int]:
    """Processes, envs and learner threads for ``cores``: the learner gets its own core(s)
    and the children the rest, so no process waits for a core another one holds.

    Measured on 2 cores (docs/performance.md): one child plus a one-thread learner beats two
    or four children and a learner with torch's default threads, on Pong and on CartPole.
    On more cores the learner takes a quarter of them; that part is not measured.
    """
    learner_threads = 1 if cores <= 4 else cores // 4
    processes = max(1, cores - learner_threads)
    return {"processes": processes, "envs_per_process": max(8, envs_in_total // processes),
            "learner_threads": learner_threads}


def reference_preset(cores: int) -> Preset:
    """The reference chapter's Pong values (Adam lr 1e-3 eps 1e-3, clip 0.1, 4-step, batch
    128, entropy 0.01, value weight 1), with the layout from ``cores``: ``--preset reference``."""
    return Preset(**_layout(cores, envs_in_total=32), batch_size=128, reward_steps=4,
                  gamma=0.99, lr=1e-3, entropy_beta=0.01, clip_grad=0.1, adam_eps=1e-3,
                  value_weight=1.0, lr_warmup=0, heads="separate")


def atari_preset(cores: int) -> Preset:
    """The reference layout and batch with what let the policy learn (docs/learning.md): a
    shared 512-unit layer under linear heads, a scale-free Adam (eps 1e-5) warmed up over
    500 steps, 20-step returns, the value loss at half weight; layout from ``cores``."""
    return dataclasses.replace(reference_preset(cores), heads="shared", adam_eps=1e-5, lr_warmup=500,
                               lr=7e-4, reward_steps=20, value_weight=0.5, clip_grad=0.5)


def vector_preset(cores: int) -> Preset:
    """Values measured on CartPole-v1 (lr 3e-3, clip 1.0, entropy bonus 0.01, 32 envs); layout
    from ``cores``. A child's step costs little more for 32 envs than for 16, so frames/s
    rises by about half, and frames to solve stayed the same. Without the entropy bonus a
    run now and then locks into one action for good (docs/learning.md, "CartPole")."""
    return Preset(**_layout(cores, envs_in_total=32), batch_size=128, reward_steps=4,
                  gamma=0.99, lr=3e-3, entropy_beta=0.01, clip_grad=1.0, adam_eps=1e-3,
                  value_weight=1.0, lr_warmup=0, heads="separate")


def grads_layout(preset: Preset, cores: int, atari: bool) -> Preset:
    """In grads mode the children also train and the learner only sums and steps, so the
    children get every core. Atari keeps the data-mode envs in total; vector envs are halved,
    which solved CartPole in fewer frames and no more time (docs/performance.md)."""
    data_envs = preset.processes * preset.envs_per_process
    envs_in_total = data_envs if atari else data_envs // 2
    return dataclasses.replace(preset, processes=cores, envs_per_process=max(1, envs_in_total // cores))


CORES = os.cpu_count() or 1
ATARI_PRESET = atari_preset(CORES)
VECTOR_PRESET = vector_preset(CORES)
REFERENCE_PRESET = reference_preset(CORES)
PRESETS = ("default", "reference")
ATARI_STOP_REWARDS = {"Pong": 18.0}
MODES = ("data", "grads")


@dataclass(frozen=True)
class Config(Preset):
    """Everything a run needs; picklable, so children receive it whole."""

    name: str
    """Run name; the TensorBoard run directory starts with it."""
    env_id: str
    stop_reward: float | None
    """Stop when the mean return of the last 100 episodes reaches this."""
    max_frames: int | None = None
    """Stop after this many env frames (Atari: 4 per step) even if unsolved."""
    max_seconds: float | None = None
    """Stop after this many seconds of training even if unsolved."""
    seed: int = 0
    logdir: str = "runs"
    cuda: bool = False
    bf16: bool = False
    """Act and train under bfloat16 autocast: pays on CPUs with bfloat16 instructions (AMX,
    AVX512-BF16) and on recent GPUs."""
    clip_rewards: bool = False
    """Train on the sign of each reward; episodes still report the game's score."""
    preset: str = "default"
    """default: the env family's tuned values; reference: the reference chapter's."""
    queue_size: int = 0
    """Messages with arrays in flight; 0: enough for two learner batches, two per child at least."""
    max_worker_restarts: int = 3
    """Dead children replaced over the run before it stops."""
    mode: str = "data"
    """data: children send transitions, the learner computes gradients; grads: children
    compute gradients on their own batches of ``batch_size`` and send those."""
    grad_batch: int = 2
    """Grads mode: children's gradients summed per optimizer step."""
    max_policy_lag: int | None = None
    """Grads mode: drop gradients computed more than this many optimizer steps ago."""
    report_interval: float = 5.0
    """Seconds between console progress lines."""
    save_every: float = 300.0
    """Seconds between periodic checkpoints."""
    resume: str | None = None
    """Checkpoint to continue from; the run goes on in that checkpoint's directory."""

    @property
    def queue_capacity(self) -> int:
        """Smaller and the learner waits on children that wait on it: with fewer than a
        batch of transitions in flight, collecting and learning take turns."""
        if self.queue_size:
            return self.queue_size
        per_batch = self.batch_size if self.mode == "grads" else self.envs_per_process
        two_batches = -(-2 * self.batch_size // per_batch)
        return max(2 * self.processes, two_batches)

    @property
    def slots_per_child(self) -> int:
        """Micro-batches one child may have in flight: its share of the queue, at least one."""
        return max(1, -(-self.queue_capacity // self.processes))

    @property
    def device(self) -> str:
        return "cuda" if self.cuda else "cpu"

    @property
    def loss_settings(self) -> LossSettings:
        return LossSettings(self.gamma, self.entropy_beta, self.value_weight, self.bf16)


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default where it has one; a preset flag's help says its values itself."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors print one line and exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="run_a3c.py",
        description="Data-parallel A3C. Unset hyperparameters come from the env family's preset.",
        formatter_class=_DefaultsHelpFormatter,
    )
    parser.add_argument("-n", "--name", required=True, help="run name (names the TensorBoard run)")
    parser.add_argument("--env", default="PongNoFrameskip-v4", help="gymnasium env id")
    parser.add_argument("--cuda", action="store_true", help="train on the GPU")
    parser.add_argument("--bf16", action="store_true",
                        help="act and train under bfloat16 autocast (Pong: 1.1-1.4x the "
                             "transitions/s on CPUs with AMX or AVX512-BF16; off by default)")
    parser.add_argument("--mode", choices=MODES, default="data",
                        help="data: children send transitions; grads: children send gradients")
    parser.add_argument("--grad-batch", type=int, default=2,
                        help="grads mode: children's gradients summed per optimizer step")
    parser.add_argument("--max-policy-lag", type=int, default=None,
                        help="grads mode: drop gradients older than this many optimizer steps")
    parser.add_argument("--clip-rewards", action=argparse.BooleanOptionalAction, default=None,
                        help="train on the sign of each reward (episode rewards stay the game's "
                             "score); default: on for Atari, off otherwise")
    parser.add_argument("--preset", choices=PRESETS, default="default",
                        help="where unset hyperparameters come from: the env family's tuned "
                             "values, or the reference chapter's Pong values for any env")
    for field in dataclasses.fields(Preset):
        atari, vector = getattr(ATARI_PRESET, field.name), getattr(VECTOR_PRESET, field.name)
        reference = getattr(REFERENCE_PRESET, field.name)
        parser.add_argument(
            "--" + field.name.replace("_", "-"), type=type(atari), default=None,
            help=f"default on this machine ({CORES} cores): {atari} for Atari, "
                 f"{vector} for vector observations, {reference} with --preset reference",
        )
    parser.add_argument("--stop-reward", type=float, default=None,
                        help="mean-100 reward that ends the run; default: the env spec's "
                             "reward_threshold, 18 for Pong")
    parser.add_argument("--max-frames", type=int, default=None, help="frame budget (unlimited if unset)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="time budget in seconds, from the start of the children (unlimited if unset)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run")
    parser.add_argument("--logdir", default="runs", help="TensorBoard and checkpoint root")
    parser.add_argument("--queue-size", type=int, default=0,
                        help="messages with arrays in flight (0: enough for two learner batches)")
    parser.add_argument("--max-worker-restarts", type=int, default=3,
                        help="dead children replaced over the run before it stops")
    parser.add_argument("--save-every", type=float, default=300.0, help="seconds between checkpoints")
    parser.add_argument("--report-interval", type=float, default=5.0,
                        help="seconds between console progress lines (and frames/s in TensorBoard)")
    parser.add_argument("--resume", default=None, help="checkpoint.pt of a run to continue")
    return parser


def config_from_args(args: argparse.Namespace, env_info: EnvInfo) -> Config:
    if args.preset == "reference":
        preset = REFERENCE_PRESET
    else:
        preset = ATARI_PRESET if env_info.atari else VECTOR_PRESET
    if args.mode == "grads":
        preset = grads_layout(preset, CORES, env_info.atari)
    tuned = {
        field.name: getattr(preset, field.name) if getattr(args, field.name) is None
        else getattr(args, field.name)
        for field in dataclasses.fields(Preset)
    }
    return Config(
        name=args.name, env_id=args.env, stop_reward=_stop_reward(args.stop_reward, env_info),
        max_frames=args.max_frames, max_seconds=args.max_seconds, seed=args.seed,
        logdir=args.logdir, cuda=args.cuda, bf16=args.bf16, preset=args.preset,
        clip_rewards=env_info.atari if args.clip_rewards is None else args.clip_rewards,
        queue_size=args.queue_size, max_worker_restarts=args.max_worker_restarts,
        mode=args.mode, grad_batch=args.grad_batch,
        max_policy_lag=args.max_policy_lag,
        report_interval=args.report_interval, save_every=args.save_every, resume=args.resume, **tuned,
    )


def _stop_reward(requested: float | None, env_info: EnvInfo) -> float | None:
    if requested is not None:
        return requested
    if env_info.reward_threshold is not None:
        return float(env_info.reward_threshold)
    for game, reward in ATARI_STOP_REWARDS.items():
        if env_info.atari and game in env_info.env_id:
            return reward
    return None


def validate(config: Config) -> None:
    """Raise ConfigError for the first setting that cannot work."""
    checks = [
        (config.name.strip() != "", "--name must not be empty"),
        (config.processes >= 1, f"--processes must be >= 1, got {config.processes}"),
        (config.envs_per_process >= 1, f"--envs-per-process must be >= 1, got {config.envs_per_process}"),
        (config.batch_size >= 1, f"--batch-size must be >= 1, got {config.batch_size}"),
        (config.reward_steps >= 1, f"--reward-steps must be >= 1, got {config.reward_steps}"),
        (0.0 < config.gamma <= 1.0, f"--gamma must be in (0, 1], got {config.gamma}"),
        (config.lr > 0.0, f"--lr must be > 0, got {config.lr}"),
        (config.entropy_beta >= 0.0, f"--entropy-beta must be >= 0, got {config.entropy_beta}"),
        (config.clip_grad > 0.0, f"--clip-grad must be > 0, got {config.clip_grad}"),
        (config.adam_eps > 0.0, f"--adam-eps must be > 0, got {config.adam_eps}"),
        (config.value_weight > 0.0, f"--value-weight must be > 0, got {config.value_weight}"),
        (config.lr_warmup >= 0, f"--lr-warmup must be >= 0, got {config.lr_warmup}"),
        (config.heads in HEADS, f"--heads must be one of {', '.join(HEADS)}, got {config.heads!r}"),
        (config.max_frames is None or config.max_frames >= 1,
         f"--max-frames must be >= 1, got {config.max_frames}"),
        (config.max_seconds is None or config.max_seconds > 0,
         f"--max-seconds must be > 0, got {config.max_seconds}"),
        (config.queue_size >= 0, f"--queue-size must be >= 0, got {config.queue_size}"),
        (config.mode in MODES, f"--mode must be one of {', '.join(MODES)}, got {config.mode!r}"),
        (config.grad_batch >= 1, f"--grad-batch must be >= 1, got {config.grad_batch}"),
        (config.max_policy_lag is None or config.max_policy_lag >= 0,
         f"--max-policy-lag must be >= 0, got {config.max_policy_lag}"),
        (config.learner_threads >= 1, f"--learner-threads must be >= 1, got {config.learner_threads}"),
        (config.max_worker_restarts >= 0,
         f"--max-worker-restarts must be >= 0, got {config.max_worker_restarts}"),
        (config.save_every > 0, f"--save-every must be > 0, got {config.save_every}"),
        (config.report_interval > 0, f"--report-interval must be > 0, got {config.report_interval}"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    if config.cuda:
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--cuda given but CUDA is not available on this machine")
    if not is_writable_dir(config.logdir):
        raise ConfigError(f"--logdir {config.logdir!r} cannot be written")


def is_writable_dir(path: str) -> bool:
    """True if ``path`` is a directory we can write, or one we could create."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    return os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK)


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse, describe the env, fill in the preset and validate; ConfigError on bad input."""
    args = build_parser().parse_args(argv)
    try:
        env_info = describe_env(args.env)
    except EnvError as exc:
        raise ConfigError(str(exc)) from exc
    config = config_from_args(args, env_info)
    if config.heads == "shared" and not env_info.atari:
        raise ConfigError("--heads shared is for the Atari net; vector observations use separate MLPs")
    validate(config)
    return config


def exit_on_config_error(error: ConfigError) -> NoReturn:
    print(f"run_a3c.py: error: {error}", file=sys.stderr)
    sys.exit(2)
