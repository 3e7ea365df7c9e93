"""The run's configuration: one dataclass whose fields are the settings, per-env-family
presets, and the command-line parser and keyword checks built from those fields.

Each field says once what it is (``option``: help, bounds, choices, flag); the parser,
``make_config`` (the keywords of ``Trainer``) and ``validate`` all read that. Settings whose
value depends on the env's family are left unset (None) and taken from its preset: values
that solve Pong for Atari (docs/learning.md), values measured on CartPole for
vector-observation envs.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import typing
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any, NoReturn

from lib.envs import EnvError, EnvInfo, describe_env
from lib.loss import LossSettings
from lib.models import HEADS
from lib.replay import replay_bytes


class ConfigError(ValueError):
    """A setting that cannot work; the message is one line for the user."""


def option(help: str, default: Any = MISSING, *, flag: str | None = None, short: str | None = None,
           choices: Sequence[str] | None = None, at_least: float | None = None,
           above: float | None = None, at_most: float | None = None, family: bool = False) -> Any:
    """A dataclass field that is also a setting: ``--flag`` (the field's name with dashes
    unless ``flag`` is given), the keyword of the same name with underscores, its help, its
    choices and bounds. ``family``: unset means the env family's value (see ``make_config``)."""
    metadata = {"help": help, "flag": flag, "short": short, "choices": choices, "at_least": at_least,
                "above": above, "at_most": at_most, "family": family}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Preset:
    """Hyperparameters tuned for one family of envs; each is a setting of the same name."""

    processes: int = option("child processes stepping envs", at_least=1, family=True)
    envs_per_process: int = option("envs each child steps in lockstep (one inference per vector step)",
                                   at_least=1, family=True)
    learner_threads: int = option("torch threads of the learner process", at_least=1, family=True)
    batch_size: int = option("transitions per optimizer step (grads mode: per child's gradient)",
                             at_least=1, family=True)
    reward_steps: int = option("n of the n-step return", at_least=1, family=True)
    gamma: float = option("discount factor", above=0.0, at_most=1.0, family=True)
    lr: float = option("Adam's learning rate", above=0.0, family=True)
    entropy_beta: float = option("weight of the entropy bonus", at_least=0.0, family=True)
    clip_grad: float = option("maximum global gradient norm", above=0.0, family=True)
    adam_eps: float = option("Adam's epsilon: far above the gradients' RMS it turns Adam into "
                             "SGD at lr / eps", above=0.0, family=True)
    value_weight: float = option("weight of the value loss against the policy loss", above=0.0,
                                 family=True)
    lr_warmup: int = option("optimizer steps over which the learning rate rises linearly from 0",
                            at_least=0, family=True)
    heads: str = option("Atari net: one shared 512-unit layer under linear heads, or separate "
                        "layers (the reference's)", choices=HEADS, family=True)


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


def dqn_vector_preset(cores: int) -> Preset:
    """Q-learning on vector observations (``--algo dqn``): batch 64, 3-step returns, Adam at
    lr 1e-3, clip 10; the layout from ``cores``. The A3C-only settings keep their values.
    From two small sweeps on CartPole (docs/dqn.md)."""
    return dataclasses.replace(vector_preset(cores), batch_size=64, reward_steps=3, lr=1e-3,
                               clip_grad=10.0, adam_eps=1e-8, entropy_beta=0.0)


def dqn_atari_preset(cores: int) -> Preset:
    """Q-learning on Atari frames: batch 32, 3-step returns, Adam at lr 1e-4 eps 1.5e-4
    (Rainbow's), clip 10; the layout from ``cores``."""
    return dataclasses.replace(reference_preset(cores), batch_size=32, reward_steps=3, lr=1e-4,
                               clip_grad=10.0, adam_eps=1.5e-4, entropy_beta=0.0)


DQN_VECTOR_REPLAY = {"replay_size": 100_000, "replay_ratio": 4.0, "learning_starts": 1_000,
                     "target_sync": 250, "beta_steps": 20_000, "epsilon_base": 0.05}
"""The replay and exploration of ``--algo dqn`` on vector observations: from the CartPole
sweeps (docs/dqn.md)."""
DQN_ATARI_REPLAY = {"replay_size": 1_000_000, "replay_ratio": 2.0, "learning_starts": 20_000,
                    "target_sync": 2_000, "beta_steps": 100_000, "epsilon_base": 0.4}
"""On Atari: a million transitions (about 7 GB, frames stored once), Ape-X's epsilons, the
target copied every 2,000 steps; two samples a transition, as the learner's steps on a CPU
are few (docs/dqn.md, "Pong")."""


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
BACKENDS = ("mp", "ray")
MODES = ("data", "grads")
ALGOS = ("a3c", "dqn")


@dataclass(frozen=True)
class Config(Preset):
    """Everything a run needs; picklable, so children receive it whole."""

    name: str = option("run name (names the TensorBoard run)", "a3c", short="-n")
    env_id: str = option("gymnasium env id", "PongNoFrameskip-v4", flag="env")
    stop_reward: float | None = option(
        "mean-100 reward that ends the run; default: the env spec's reward_threshold, 18 for Pong",
        None, family=True)
    max_frames: int | None = option("frame budget: env frames, 4 per step for Atari (unlimited if "
                                    "unset)", None, at_least=1)
    max_seconds: float | None = option("time budget in seconds of training, from the start of the "
                                       "children (unlimited if unset)", None, above=0.0)
    seed: int = option("seed of the whole run", 0)
    logdir: str = option("TensorBoard and checkpoint root", "runs")
    cuda: bool = option("train on the GPU", False)
    bf16: bool = option("act and train under bfloat16 autocast (pays on CPUs with AMX or "
                        "AVX512-BF16 and on recent GPUs; off by default)", False)
    clip_rewards: bool | None = option(
        "train on the sign of each reward (episode rewards stay the game's score); default: on "
        "for Atari, off otherwise", None, family=True)
    preset: str = option("where unset hyperparameters come from: the env family's tuned values, "
                         "or the reference chapter's Pong values for any env", "default",
                         choices=PRESETS)
    queue_size: int = option("messages with arrays in flight (0: enough for two learner batches, "
                             "two per child at least)", 0, at_least=0)
    max_worker_restarts: int = option("dead children replaced over the run before it stops", 3,
                                      at_least=0)
    algo: str = option("a3c: the actor-critic; dqn: Ape-X-style Q-learning from a replay buffer "
                       "the children fill, acting epsilon-greedy", "a3c", choices=ALGOS)
    mode: str = option("data: children send transitions; grads: children compute gradients on "
                       "their own batches and send those (A3C only)", "data", choices=MODES)
    backend: str = option("mp: children are processes on this machine; ray: Ray actors on any "
                          "node of a Ray cluster (the `ray` extra)", "mp", choices=BACKENDS)
    ray_address: str | None = option("--backend ray: HOST:PORT of a running Ray cluster (default: a "
                                     "local Ray, started and stopped with the run)", None)
    grad_batch: int = option("grads mode: children's gradients summed per optimizer step", 2,
                             at_least=1)
    max_policy_lag: int | None = option("grads mode: drop gradients older than this many optimizer "
                                        "steps", None, at_least=0)
    report_interval: float = option("seconds between progress lines; also the length of one "
                                    "training iteration", 5.0, above=0.0)
    save_every: float = option("seconds between periodic checkpoints", 300.0, above=0.0)
    collapse_rollback: bool = option(
        "put back the weights of the best mean-100 when the policy has locked into one action "
        "after a collapse (docs/learning.md, \"Training past the goal\")", True)
    eval_every: int = option("iterations between evaluations of the greedy policy (0: none)", 0,
                             at_least=0)
    eval_episodes: int = option("episodes per evaluation", 5, at_least=1)
    resume: str | None = option("checkpoint.pt of a run to continue", None)
    replay_size: int = option("dqn: transitions the replay buffer holds", None, at_least=1, family=True)
    replay_ratio: float = option("dqn: transitions sampled per transition received; the learner "
                                 "waits for data above it, the children for the learner below", None,
                                 above=0.0, family=True)
    learning_starts: int = option("dqn: transitions stored before the first step", None, at_least=1,
                                  family=True)
    target_sync: int = option("dqn: optimizer steps between hard copies of the net to the target "
                              "net", None, at_least=1, family=True)
    tau: float = option("dqn: Polyak weight of the target net's update every step instead of hard "
                        "copies (0: hard copies)", 0.0, at_least=0.0, at_most=1.0)
    dueling: bool = option("dqn: a dueling head, V(s) + A(s, a) - mean A", True)
    double: bool = option("dqn: Double-DQN targets (the online net chooses, the target net "
                          "evaluates)", True)
    prioritized: bool = option("dqn: prioritized replay by TD error (else uniform)", True)
    priority_alpha: float = option("dqn: priority exponent alpha", 0.6, at_least=0.0)
    priority_beta: float = option("dqn: importance-sampling exponent beta at the start, annealed "
                                  "to 1", 0.4, at_least=0.0, at_most=1.0)
    beta_steps: int = option("dqn: optimizer steps over which beta rises to 1", None, at_least=1,
                             family=True)
    epsilon_base: float = option("dqn: the most exploring env's epsilon; env i of N explores with "
                                 "base ** (1 + alpha * i / (N - 1)) (Ape-X's 0.4 for Atari; lower for "
                                 "vector envs, where the mean-100 counts every env's episodes)", None,
                                 above=0.0, at_most=1.0, family=True)
    save_replay: bool = option("dqn: keep the replay buffer in checkpoints (as large as the buffer "
                               "itself); without it a resumed run refills it first", False)
    epsilon_alpha: float = option("dqn: how fast the envs' epsilons fall from the first to the "
                                  "last", 7.0, at_least=0.0)

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


SETTINGS = dataclasses.fields(Config)
_TYPES = typing.get_type_hints(Config)


def keyword(setting: dataclasses.Field) -> str:
    """The setting's keyword (``Trainer(env=...)``) and, with dashes, its flag (``--env``)."""
    return setting.metadata["flag"] or setting.name


def flag(setting: dataclasses.Field) -> str:
    return "--" + keyword(setting).replace("_", "-")


def value_type(setting: dataclasses.Field) -> type:
    """int, float, str or bool: the field's type without its None."""
    kinds = [kind for kind in typing.get_args(_TYPES[setting.name]) if kind is not type(None)]
    return kinds[0] if kinds else _TYPES[setting.name]


KEYWORDS = {keyword(setting): setting for setting in SETTINGS}


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default where it has one; a family setting's help says its values itself."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.required:
            return action.help
        return super()._get_help_string(action)


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors print one line and exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _help(setting: dataclasses.Field) -> str:
    text = setting.metadata["help"]
    if setting.name in DQN_ATARI_REPLAY:
        text += (f"; default: {DQN_ATARI_REPLAY[setting.name]:g} for Atari, "
                 f"{DQN_VECTOR_REPLAY[setting.name]:g} for vector observations")
    if setting.name in PRESET_NAMES:
        atari, vector = getattr(ATARI_PRESET, setting.name), getattr(VECTOR_PRESET, setting.name)
        reference = getattr(REFERENCE_PRESET, setting.name)
        text += (f"; default on this machine ({CORES} cores): {atari} for Atari, {vector} for "
                 f"vector observations, {reference} with --preset reference")
    return text


PRESET_NAMES = {setting.name for setting in dataclasses.fields(Preset)}


def build_parser() -> argparse.ArgumentParser:
    """Every setting of ``Config`` as a flag; family settings default to None (the preset's)."""
    parser = _OneLineParser(
        prog="run_a3c.py",
        description="A3C. Unset hyperparameters come from the env family's preset.",
        formatter_class=_DefaultsHelpFormatter,
    )
    run_group = parser.add_argument_group("the run")
    tuned_group = parser.add_argument_group(
        "hyperparameters", "unset, each takes the env family's value (or --preset reference's)")
    for setting in sorted(SETTINGS, key=lambda setting: setting.name in PRESET_NAMES):
        group = tuned_group if setting.name in PRESET_NAMES else run_group
        names = ([setting.metadata["short"]] if setting.metadata["short"] else []) + [flag(setting)]
        kind = value_type(setting)
        default = None if setting.metadata["family"] else setting.default
        extra: dict[str, Any] = {"dest": keyword(setting), "default": default, "help": _help(setting)}
        if kind is bool:
            family_or_on = setting.metadata["family"] or setting.default is True
            action = argparse.BooleanOptionalAction if family_or_on else "store_true"
            group.add_argument(*names, action=action, **extra)
        else:
            group.add_argument(*names, type=kind, choices=setting.metadata["choices"],
                                required=setting.name == "name", **extra)
    return parser


def make_config(**settings: Any) -> Config:
    """A validated Config from keywords named as the flags (``env``, ``lr``, ...): unset or
    None family settings come from the env's preset. ConfigError on the first bad one."""
    unknown = sorted(set(settings) - set(KEYWORDS))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; the settings are the flags of "
                          "run_a3c.py --help, with underscores")
    values = {setting.name: setting.default for setting in SETTINGS if setting.default is not MISSING}
    for name, value in settings.items():
        if value is not None or not KEYWORDS[name].metadata["family"]:
            values[KEYWORDS[name].name] = value
    _check_types(values)
    try:
        env_info = describe_env(values["env_id"])
    except EnvError as exc:
        raise ConfigError(str(exc)) from exc
    if values["preset"] not in PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {values['preset']!r}")
    for name, value in _family_values(values, env_info).items():
        if values.get(name) is None:
            values[name] = value
    config = Config(**values)
    validate(config, env_info)
    return config


def _family_values(values: dict[str, Any], env_info: EnvInfo) -> dict[str, Any]:
    """What the env's family (and ``--preset``, ``--mode``) gives every family setting."""
    if values["algo"] == "dqn":
        preset = dqn_atari_preset(CORES) if env_info.atari else dqn_vector_preset(CORES)
    elif values["preset"] == "reference":
        preset = REFERENCE_PRESET
    else:
        preset = ATARI_PRESET if env_info.atari else VECTOR_PRESET
    if values["mode"] == "grads":
        preset = grads_layout(preset, CORES, env_info.atari)
    return {**dataclasses.asdict(preset), **(DQN_ATARI_REPLAY if env_info.atari else DQN_VECTOR_REPLAY),
            "clip_rewards": env_info.atari, "stop_reward": _stop_reward(env_info)}


def _stop_reward(env_info: EnvInfo) -> float | None:
    if env_info.reward_threshold is not None:
        return float(env_info.reward_threshold)
    for game, reward in ATARI_STOP_REWARDS.items():
        if env_info.atari and game in env_info.env_id:
            return reward
    return None


def _check_types(values: dict[str, Any]) -> None:
    """ConfigError for a value of the wrong type; paths given as ``Path`` become strings."""
    for setting in SETTINGS:
        value, kind = values.get(setting.name), value_type(setting)
        if value is None:
            continue
        if kind is str and isinstance(value, os.PathLike):
            value = values[setting.name] = os.fspath(value)
        fits = (isinstance(value, kind) and not (kind is int and isinstance(value, bool))) or (
            kind is float and isinstance(value, int) and not isinstance(value, bool))
        if not fits:
            raise ConfigError(f"{flag(setting)} must be {kind.__name__}, got {value!r}")


def validate(config: Config, env_info: EnvInfo) -> None:
    """Raise ConfigError for the first setting that cannot work: each field's bounds and
    choices, then the checks that span settings or ask the machine."""
    for setting in SETTINGS:
        value, meta = getattr(config, setting.name), setting.metadata
        if value is None:
            continue
        name = flag(setting)
        if meta["choices"] and value not in meta["choices"]:
            raise ConfigError(f"{name} must be one of {', '.join(meta['choices'])}, got {value!r}")
        if meta["at_least"] is not None and value < meta["at_least"]:
            raise ConfigError(f"{name} must be >= {meta['at_least']:g}, got {value}")
        if meta["above"] is not None and meta["at_most"] is not None and not (
                meta["above"] < value <= meta["at_most"]):
            raise ConfigError(f"{name} must be in ({meta['above']:g}, {meta['at_most']:g}], got {value}")
        if meta["above"] is not None and value <= meta["above"]:
            raise ConfigError(f"{name} must be > {meta['above']:g}, got {value}")
        if meta["at_most"] is not None and value > meta["at_most"]:
            raise ConfigError(f"{name} must be <= {meta['at_most']:g}, got {value}")
    if config.name.strip() == "":
        raise ConfigError("--name must not be empty")
    if config.algo == "dqn" and config.mode == "grads":
        raise ConfigError("--mode grads is for A3C; --algo dqn learns from a replay buffer in data mode")
    if config.algo == "dqn":
        _check_replay_fits(config, env_info)
    _check_backend(config)
    if config.heads == "shared" and not env_info.atari and config.algo == "a3c":
        raise ConfigError("--heads shared is for the Atari net; vector observations use separate MLPs")
    if config.cuda:
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--cuda given but CUDA is not available on this machine")
    if not is_writable_dir(config.logdir):
        raise ConfigError(f"--logdir {config.logdir!r} cannot be written")


def _check_replay_fits(config: Config, env_info: EnvInfo) -> None:
    needed = replay_bytes(config.replay_size, env_info.observation_shape, env_info.observation_dtype,
                          env_info.frame_stack)
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not a system that says: do not guess
        return
    if needed > available:
        raise ConfigError(f"--replay-size {config.replay_size:,} needs {needed / 2**30:.1f} GiB of "
                          f"memory and {available / 2**30:.1f} GiB are free")


def _check_backend(config: Config) -> None:
    if config.backend != "ray":
        if config.ray_address is not None:
            raise ConfigError("--ray-address is for --backend ray")
        return
    if importlib.util.find_spec("ray") is None:
        raise ConfigError("--backend ray needs Ray: pip install 'a3c[ray]'")
    if config.mode == "grads":
        raise ConfigError("--backend ray runs data mode: children send transitions, not gradients")
    if config.ray_address is not None:
        from a3c.ray_cluster import check_address

        check_address(config.ray_address)


def is_writable_dir(path: str) -> bool:
    """True if ``path`` is a directory we can write, or one we could create."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    return os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK)


def parse_config(argv: Sequence[str] | None = None) -> Config:
    """Parse the command line and make the validated Config; ConfigError on bad input."""
    return make_config(**vars(build_parser().parse_args(argv)))


def exit_on_config_error(error: ConfigError) -> NoReturn:
    print(f"run_a3c.py: error: {error}", file=sys.stderr)
    sys.exit(2)
