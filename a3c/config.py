"""The run's configuration: one dataclass whose fields are the settings, and the
command-line parser and keyword checks built from those fields.

``Config`` joins the settings of the run (here), the hyperparameters every algorithm has
(``a3c.options.Preset``) and each built-in algorithm's own (``a3c.algos``). Each field says
once what it is (``option``: help, bounds, choices, flag); the parser, ``make_config`` (the
keywords of ``Trainer``) and ``validate`` all read that. Settings whose value depends on the
env's family are left unset (None) and taken from the algorithm's values for that family.

Building a Config is pure: the env's family comes from its registration, and nothing here
imports torch, makes an env, reads the memory or opens a socket. What the machine must give
the run is checked once, before any worker, by ``a3c.preflight``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import typing
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, NoReturn

from a3c.algos import BUILT_IN, algorithm_names, get_algorithm
from a3c.algos.base import NoSettings
from a3c.lib.env_kind import EnvFamily, env_family
from a3c.lib.envs import ATARI_SCREEN_SIZE, SCREEN_SIZES, EnvError, EnvInfo, EnvRecipe
from a3c.model_config import apply_model
from a3c.options import ConfigError, Preset, option
from a3c.transport.ray_cluster import parse_address

__all__ = ["Config", "ConfigError", "make_config", "parse_config"]

STOP_KEYS = ("frames", "transitions", "episodes", "episode_reward_mean", "episode_reward_max",
             "episode_reward_min", "episode_len_mean", "episodes_total", "timesteps_total", "training_iteration",
             "policy_version", "seconds")
"""Result keys a ``stop`` criterion may name: the run's own, known before it starts."""

ATARI_STOP_REWARDS = {"Pong": 18.0}
BACKENDS = ("mp", "ray", "serial")


@dataclass(frozen=True)
class RunSettings:
    """What every run has whatever its algorithm: names, budgets, the backend, checkpoints."""

    name: str = option("run name (names the TensorBoard run)", "a3c", short="-n")
    env_id: str = option("gymnasium env id, or a multi-agent env: TwoStepGame or a PettingZoo "
                         "parallel env's module (mpe2.simple_spread_v3)", "PongNoFrameskip-v4", flag="env")
    env_config: dict | None = option(  # noqa: RUF009 - the default is None, no shared dict
        "settings of the env: a JSON object handed to a creator registered with a3c.register_env (as "
        "its env_config), or keywords of gymnasium.make for any other id", None)
    policies: str = option("multi-agent envs: which policy acts for each agent: shared (one net, "
                           "the agent's index in its input), per-agent, or AGENT=POLICY,...",
                           "per-agent")
    algo: str = option("the algorithm (see the list above)", BUILT_IN[0].name)
    stop_reward: float | None = option(
        "mean-100 reward that ends the run; default: the env spec's reward_threshold, 18 for Pong; "
        "inf: none, the run goes on to its budget",
        None, family=True)
    max_frames: int | None = option("frame budget: env frames, 4 per step for Atari (unlimited if "
                                    "unset)", None, at_least=1)
    max_seconds: float | None = option("time budget in seconds of training, from the start of the "
                                       "workers (unlimited if unset)", None, above=0.0)
    as_test: bool = option("end with exit 1 and one line where the run ends unsolved (its mean-100 below "
                           "--stop-reward or the env's threshold), as RLlib's --as-test: a script or CI "
                           "then fails on a run that did not learn", False)
    stop: dict | None = option(  # noqa: RUF009 - the default is None, no shared dict
        "KEY=VALUE: end the run after the first report whose result KEY is at least VALUE (repeatable; "
        "any holds). Keys: " + ", ".join(STOP_KEYS), None)
    callbacks: str = option("module:Class of an a3c.Callback subclass run at the run's events (its "
                            "episode hooks in every worker); several comma-separated", "")
    random_frames: int = option("uniformly random actions for the run's first N frames, then the "
                                "algorithm's own (every algorithm; each worker counts its share)", 0,
                                at_least=0)
    seed: int = option("seed of the whole run", 0, at_least=0, at_most=2**32 - 1)  # numpy's range
    logdir: str = option("TensorBoard and checkpoint root", "runs")
    track: bool = option("log each iteration's results and the run's settings to a Weights & Biases run "
                         "(the wandb extra; WANDB_MODE=offline keeps it on disk for `wandb sync`)", False)
    wandb_project: str | None = option("--track: the W&B project; default: a3c", None)
    wandb_entity: str | None = option("--track: the W&B team or user; default: your own", None)
    cuda: bool = option("train on the GPU", False)
    bf16: bool | None = option(
        "act and train under bfloat16 autocast (weights, gradients and Adam stay float32); "
        "default: on for --algo a3c and ppo on Atari where the CPU has bfloat16 instructions "
        "(AVX512-BF16 or AMX) and the run is not on CUDA, else off", None, family=True)
    screen_size: int | None = option(
        "Atari frames' side in pixels: 84, or 42 (a quarter of the pixels: the net's first layer "
        "takes 4x4 patches at stride 2 instead of 8x8 at 4; more frames to solve Pong so far); "
        "default: 84", None, choices=SCREEN_SIZES, family=True)
    frame_stack: int = option(
        "any env but Atari (whose frames stack 4): the net sees the last N observations (an image's "
        "as its channels, others end to end), zeros before an episode's first; motion or memory for "
        "a net without --lstm, as SB3's frame_stack", 1,
        at_least=1)
    clip_rewards: bool | None = option(
        "train on the sign of each reward (episode rewards stay the game's score); default: on "
        "for Atari, off otherwise", None, family=True)
    life_loss: bool | None = option(
        "Atari: a lost life ends the training episode (no value bootstrapped across it) while the "
        "score counts the whole game; default: on for Atari", None, family=True)
    model: dict | None = option(  # noqa: RUF009 - the default is None, no shared dict
        "the nets' shape as RLlib's model config, a JSON object: fcnet_hiddens (widths), fcnet_activation, "
        "conv_filters ([[channels, [k, k], stride], ...]), vf_share_layers, use_lstm, lstm_cell_size, "
        "max_seq_len, use_attention and its attention_* sizes, custom_model (a3c.register_model's name, or "
        "module:factory) and custom_model_config; "
        "each algorithm takes the keys its nets can honour. --mlp-hidden, --conv, --heads, "
        "--lstm, --lstm-cell-size and --seq-len are shorthands of it", None)
    preset: str = option("where unset hyperparameters come from: default, the env family's tuned "
                         "values, or a named preset of the algorithm", "default")
    queue_size: int = option("messages with arrays in flight (0: enough for two learner batches, "
                             "two per worker at least)", 0, at_least=0)
    max_worker_restarts: int = option("dead or stuck workers replaced over the run before it stops", 3,
                                      at_least=0)
    worker_timeout: float = option(
        "seconds a worker (a process, a Ray actor once built, a serial worker's one step) may send nothing "
        "while the learner reads the others before it is named, killed and restarted, counted against --max-worker-restarts; long enough for a slow env's "
        "reset", 120.0, above=0.0)
    backend: str = option("mp: workers are processes on this machine; ray: Ray actors on any "
                          "node of a Ray cluster (the `ray` extra); serial: every worker's envs "
                          "stepped in turn in this process, for debugging (breakpoints in an env "
                          "stop; a seed gives the same run)", "mp", choices=BACKENDS)
    ray_address: str | None = option("--backend ray: HOST:PORT of a running Ray cluster (default: a "
                                     "local Ray, started and stopped with the run)", None)
    ray_actor_resource: str | None = option(
        "--backend ray: place actors only on nodes that carry this custom resource (`ray start "
        "--resources '{\"NAME\": 1}'`), keeping them off a GPU learner's host, say", None)
    report_interval: float = option("seconds between progress lines; also the length of one "
                                    "training iteration", 5.0, above=0.0)
    save_every: float = option("seconds between periodic checkpoints", 300.0, above=0.0)
    checkpoint_every_iterations: int = option(
        "also write checkpoint.pt after every N-th iteration (a train() call; --report-interval seconds on "
        "the command line); 0: by --save-every alone", 0, at_least=0)
    keep_checkpoints: int = option(
        "keep the newest K checkpoints as checkpoint-ITERATION.pt beside checkpoint.pt (hard links, so "
        "no extra room); 0: checkpoint.pt alone", 0, at_least=0)
    checkpoint_at_end: bool = option(
        "write checkpoint.pt as the run ends (--no-checkpoint-at-end: the periodic ones only; Ctrl-C and "
        "SIGTERM still save)", True)
    collapse_rollback: bool = option(
        "put back the weights of the best mean-100 when the policy has locked into one action "
        "after a collapse (docs/learning.md, \"Training past the goal\")", True)
    eval_every: int = option("iterations between evaluations of the greedy policy (0: none)", 0,
                             at_least=0)
    eval_episodes: int = option("episodes per evaluation", 5, at_least=1)
    resume: str | None = option("checkpoint.pt of a run to continue", None)


_ALGORITHM_SETTINGS = tuple(dict.fromkeys(
    algorithm.settings for algorithm in reversed(BUILT_IN) if algorithm.settings is not NoSettings))


@dataclass(frozen=True)
class Config(RunSettings, *_ALGORITHM_SETTINGS, Preset):
    """Everything a run needs; picklable, so workers receive it whole. Settings of an
    algorithm other than ``algo`` keep their defaults (None for family settings)."""

    @property
    def device(self) -> str:
        return "cuda" if self.cuda else "cpu"

    @property
    def env_recipe(self) -> EnvRecipe:
        """How this run's processes make its env."""
        return EnvRecipe.from_settings(vars(self))


SETTINGS = dataclasses.fields(Config)
_TYPES = typing.get_type_hints(Config)
OWNERS: dict[str, tuple[str, ...]] = {}
"""The algorithms each algorithm setting belongs to (several where their settings share a
base, as the actor-critics' do); the other settings belong to every run."""
for _algorithm in BUILT_IN:
    if _algorithm.settings is not NoSettings:
        for _setting in dataclasses.fields(_algorithm.settings):
            OWNERS[_setting.name] = (*OWNERS.get(_setting.name, ()), _algorithm.name)
PRESET_NAMES = {setting.name for setting in dataclasses.fields(Preset)}


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


def settings_of(algo: str) -> list[dataclasses.Field]:
    """The settings a run of ``algo`` reads: every run's and ``algo``'s own."""
    return [setting for setting in SETTINGS if algo in OWNERS.get(setting.name, (algo,))]


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


def _help(setting: dataclasses.Field, algo: str) -> str:
    """The field's help and, for a family setting, ``algo``'s values on this machine."""
    text = setting.metadata["help"]
    algorithm = get_algorithm(algo)
    if setting.name == "preset":
        named = [f"{name} ({line})" for name, line in algorithm.presets.items()]
        return f"{text}; named: {'; '.join(named)}" if named else text
    if setting.name not in OWNERS and setting.name not in PRESET_NAMES:
        return text  # a run setting's help says its default itself
    note = algorithm.defaults_help(setting.name)
    return text if note is None else f"{text}; default: {note}"


def algo_of(argv: Sequence[str] | None) -> str:
    """The ``--algo`` a command line names (the default where it names none or an unknown
    one, which the full parse then refuses)."""
    named = argparse.ArgumentParser(add_help=False)
    named.add_argument("--algo", default=BUILT_IN[0].name)
    algo = named.parse_known_args(sys.argv[1:] if argv is None else argv)[0].algo
    return algo if algo in algorithm_names() else BUILT_IN[0].name


COMMAND = "run_a3c.py"
"""The train command's name in its usage and errors, unless the command says it was started as another."""


def build_parser(prog: str = COMMAND, algo: str = BUILT_IN[0].name) -> argparse.ArgumentParser:
    """Every setting of ``Config`` as a flag; family settings default to None (their
    algorithm's value for the env's family). ``--help`` shows the run's settings and
    ``algo``'s; the other algorithms' flags are parsed but not shown, so that one given to
    the wrong algorithm is refused in one line (``make_config``)."""
    algorithm = get_algorithm(algo)
    parser = _OneLineParser(
        prog=prog,
        description=f"Train an agent with asynchronous actors and one learner. --algo {algo}: "
                    f"{algorithm.summary}. Unset hyperparameters come from its values for the env's family. "
                    f"The algorithms: {', '.join(algorithm_names())}; `{prog} --algo NAME --help` shows "
                    "one's settings.",
        formatter_class=_DefaultsHelpFormatter,
    )
    run_group = parser.add_argument_group("the run")
    tuned_group = parser.add_argument_group(
        "hyperparameters", "unset, each takes the algorithm's value for the env family")
    own_group = parser.add_argument_group(f"--algo {algo}")

    def place(setting: dataclasses.Field) -> int:  # the run's, the hyperparameters, the algorithm's
        return 2 if setting.name in OWNERS else int(setting.name in PRESET_NAMES)

    for setting in sorted(SETTINGS, key=place):
        shown = algo in OWNERS.get(setting.name, (algo,))
        if setting.name in OWNERS:
            group = own_group if shown else parser
        else:
            group = tuned_group if setting.name in PRESET_NAMES else run_group
        names = ([setting.metadata["short"]] if setting.metadata["short"] else []) + [flag(setting)]
        kind = value_type(setting)
        default = None if setting.metadata["family"] else setting.default
        choices = algorithm_names() if setting.name == "algo" else setting.metadata["choices"]
        extra: dict[str, Any] = {"dest": keyword(setting), "default": default,
                                 "help": _help(setting, algo) if shown else argparse.SUPPRESS}
        if kind is bool:
            family_or_on = setting.metadata["family"] or setting.default is True
            action = argparse.BooleanOptionalAction if family_or_on else "store_true"
            group.add_argument(*names, action=action, **extra)
        elif setting.name == "stop":
            group.add_argument(*names, action="append", type=stop_pair, **extra)
        else:
            group.add_argument(*names, type=json_object if kind is dict else kind, choices=choices, **extra)
    return parser


def stop_pair(text: str) -> tuple[str, float]:
    """``--stop KEY=VALUE``."""
    key, _, value = text.partition("=")
    try:
        return key.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE with a number") from None


def json_object(text: str) -> dict:
    """A flag's JSON object (``--env-config '{"size": 5}'``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {text!r}")
    return value


def make_config(**settings: Any) -> Config:
    """A validated Config from keywords named as the flags (``env``, ``lr``, ...): unset or
    None family settings come from the algorithm's values for the env's family. ConfigError
    on the first bad one."""
    unknown = sorted(set(settings) - set(KEYWORDS))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; the settings are the flags of "
                          "run_a3c.py --help, with underscores")
    values = {setting.name: setting.default for setting in SETTINGS if setting.default is not MISSING}
    for name, value in settings.items():
        if value is not None or not KEYWORDS[name].metadata["family"]:
            values[KEYWORDS[name].name] = value
    if isinstance(values.get("stop"), list):  # --stop KEY=VALUE, repeated
        values["stop"] = dict(values["stop"])
    _check_types(values)
    if values["algo"] not in algorithm_names():
        raise ConfigError(f"--algo must be one of {', '.join(algorithm_names())}, got {values['algo']!r}")
    try:
        family = env_family(values["env_id"])
    except EnvError as exc:
        raise ConfigError(str(exc)) from exc
    presets = ("default", *get_algorithm(values["algo"]).presets)
    if values["preset"] not in presets:
        raise ConfigError(f"--preset of --algo {values['algo']} must be one of {', '.join(presets)}, "
                          f"got {values['preset']!r}")
    family_values = _family_values(values, family)
    apply_model(values, family_values, get_algorithm(values["algo"]).model_keys,
                {setting.name: setting.default for setting in SETTINGS})
    _check_other_algorithms(values)
    for name, value in family_values.items():
        if values.get(name) is None:
            values[name] = value
    if values["stop_reward"] == math.inf:  # no reward ends the run, the env's threshold included
        values["stop_reward"] = None
    config = Config(**values)
    validate(config, family)
    return config


def _check_other_algorithms(values: dict[str, Any]) -> None:
    """A setting of another algorithm than ``algo`` must be left at its default."""
    defaults = {setting.name: setting.default for setting in SETTINGS}
    for setting in SETTINGS:
        owners = OWNERS.get(setting.name, (values["algo"],))
        if values["algo"] not in owners and values[setting.name] != defaults[setting.name]:
            raise ConfigError(f"{flag(setting)} is a setting of --algo {' and '.join(owners)}, "
                              f"not of --algo {values['algo']}")


def _family_values(values: dict[str, Any], family: EnvFamily) -> dict[str, Any]:
    """What the env's family gives every family setting of the run and of its algorithm."""
    defaults = get_algorithm(values["algo"]).family_defaults(family.atari, values)
    return {"bf16": False, **defaults, "clip_rewards": family.atari, "life_loss": family.atari,
            "stop_reward": env_goal(family),
            "screen_size": ATARI_SCREEN_SIZE if family.atari else None}


def env_goal(family: EnvFamily | EnvInfo) -> float | None:
    """The mean-100 that solves the env: its spec's reward threshold, 18 for Pong."""
    if family.reward_threshold is not None:
        return float(family.reward_threshold)
    for game, reward in ATARI_STOP_REWARDS.items():
        if family.atari and game in family.env_id:
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


def _bound(value: float) -> str:
    """A bound as an error message writes it: an int whole, a float in its shortest form."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def validate(config: Config, family: EnvFamily) -> None:
    """Raise ConfigError for the first setting that cannot work: each field's bounds and
    choices, then the checks that span settings (the algorithm's among them)."""
    for setting in SETTINGS:
        value, meta = getattr(config, setting.name), setting.metadata
        if value is None:
            continue
        name = flag(setting)
        if meta["choices"] and value not in meta["choices"]:
            raise ConfigError(f"{name} must be one of {', '.join(map(str, meta['choices']))}, got {value!r}")
        if meta["at_least"] is not None and value < meta["at_least"]:
            raise ConfigError(f"{name} must be >= {_bound(meta['at_least'])}, got {value}")
        if meta["above"] is not None and meta["at_most"] is not None and not (
                meta["above"] < value <= meta["at_most"]):
            raise ConfigError(f"{name} must be in ({_bound(meta['above'])}, {_bound(meta['at_most'])}], got {value}")
        if meta["above"] is not None and value <= meta["above"]:
            raise ConfigError(f"{name} must be > {_bound(meta['above'])}, got {value}")
        if meta["at_most"] is not None and value > meta["at_most"]:
            raise ConfigError(f"{name} must be <= {_bound(meta['at_most'])}, got {value}")
    if config.name.strip() == "":
        raise ConfigError("--name must not be empty")
    if "/" in config.name or "\0" in config.name:
        raise ConfigError(f"--name {config.name!r} begins a folder's name under --logdir: no '/' in it")
    if config.backend != "ray":
        for name in ("ray_address", "ray_actor_resource"):
            if getattr(config, name) is not None:
                raise ConfigError(f"--{name.replace('_', '-')} is for --backend ray")
    if config.ray_address is not None:
        parse_address(config.ray_address)
    if not config.track:
        for name in ("wandb_project", "wandb_entity"):
            if getattr(config, name) is not None:
                raise ConfigError(f"--{name.replace('_', '-')} is for --track")
    if config.screen_size is not None and not family.atari:
        raise ConfigError(f"--screen-size is for Atari frames; {config.env_id} has none")
    if config.life_loss and not family.atari:
        raise ConfigError(f"--life-loss is for Atari games; {config.env_id} has no lives")
    if config.frame_stack > 1 and (family.atari or family.multiagent):
        raise ConfigError(f"--frame-stack is for envs with one agent and no Atari frames (which stack 4); "
                          f"{config.env_id} has {'Atari frames' if family.atari else 'several agents'}")
    for key, bound in (config.stop or {}).items():
        if key not in STOP_KEYS:
            raise ConfigError(f"--stop {key}: not a result key a run can stop on; those are {', '.join(STOP_KEYS)}")
        if isinstance(bound, bool) or not isinstance(bound, (int, float)):
            raise ConfigError(f"--stop {key}: the bound must be a number, got {bound!r}")
    if config.env_config and (family.atari or family.multiagent):
        raise ConfigError(f"--env-config is for envs made one by one with gymnasium.make or a registered "
                          f"creator; {config.env_id} is made another way")
    if config.policies != "per-agent" and not family.multiagent:
        raise ConfigError(f"--policies is for multi-agent envs; {config.env_id} has one agent")
    get_algorithm(config.algo).check(config, family.atari)


def parse_config(argv: Sequence[str] | None = None, prog: str = COMMAND) -> Config:
    """Parse the command line and make the validated Config; ConfigError on bad input.
    ``-n`` is needed unless ``--resume`` is given: a resumed run takes its env, algorithm and
    settings from the checkpoint (``resumed_settings``), the flags given beside it override."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(prog, algo_of(argv))
    values = vars(parser.parse_args(argv))
    given = given_settings(parser, argv)
    if values["resume"] is None:
        if "name" not in given:
            parser.error("the following arguments are required: -n/--name")
        return make_config(**values)
    saved = resumed_settings(values["resume"])
    if "preset" in given:  # the preset given picks the values of its family's settings the flags leave unset
        picked = {keyword(setting) for setting in SETTINGS
                  if setting.name in PRESET_NAMES or setting.metadata["family"]}
        saved = {key: value for key, value in saved.items() if key not in picked}
    return make_config(**{**saved, **{key: value for key, value in values.items() if key in given}})


def given_settings(parser: argparse.ArgumentParser, argv: Sequence[str]) -> set[str]:
    """The keywords of the flags ``argv`` gives (``parser``'s defaults are set aside for good:
    call it after the parse that needs them)."""
    for action in parser._actions:  # argparse has no public way to tell a default from a given value
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def resumed_settings(path: str | Path, saved: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keywords that remake the run saved at ``path``: its settings as saved (the env,
    the algorithm and its own, the net's shape; ``saved``, where the caller has read them),
    ``logdir`` the folder that holds its run folder (wherever it moved), ``resume`` the
    path; ConfigError if it cannot be read."""
    if saved is None:
        from a3c.lifecycle.checkpoint import CheckpointError, saved_settings

        try:
            saved = saved_settings(path)
        except CheckpointError as exc:
            raise ConfigError(f"--resume: {exc}") from exc
    algorithm = get_algorithm(saved.get("algo", "a3c"))
    saved = {**saved, **algorithm.saved_net_shape(saved)}
    settings = {keyword(setting): saved[setting.name] for setting in settings_of(algorithm.name) if setting.name in saved}
    return {**settings, "logdir": str(Path(path).resolve().parent.parent), "resume": str(path)}


def exit_on_config_error(error: ConfigError, prog: str = COMMAND) -> NoReturn:
    print(f"{prog}: error: {error}", file=sys.stderr)
    sys.exit(2)
