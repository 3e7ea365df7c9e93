"""The learner-side state of one run: the shared net, the algorithm's learner, counters,
rewards, the run directory and writer; what a checkpoint saves, resume restores and
summary.json says."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tensorboardX import SummaryWriter

from a3c.algos.base import Algorithm, AlgorithmLearner, net_settings
from a3c.algos.optimizer import new_version_counter
from a3c.config import Config, ConfigError
from a3c.lib.allocator import keep_freed_memory
from a3c.lib.denormals import flush_denormals
from a3c.lib.envs import EnvInfo
from a3c.lib.trackers import RewardTracker
from a3c.lifecycle.checkpoint import (
    CheckpointError,
    check_matches,
    load_checkpoint,
    save_checkpoint,
)
from a3c.lifecycle.disk import replace_text
from a3c.lifecycle.event_file import run_writer
from a3c.lifecycle.rollback import BestState
from a3c.lifecycle.strict_json import strict_dumps

EXIT_CODES = {"solved": 0, "frame_budget": 0, "time_budget": 0, "stopped": 0, "stop_criterion": 0,
              "interrupted": 130, "terminated": 143}
"""Exit code of each ending; every other reason (worker_died, non_finite, error) exits 1."""


@dataclass
class Counters:
    """How far the run has come; saved in checkpoints and continued on resume."""

    frames: int = 0
    transitions: int = 0
    episodes: int = 0
    worker_restarts: int = 0
    """Over this invocation; the budget starts afresh on resume."""
    rollbacks: int = 0
    """Times a locked policy was put back to the weights of the best mean-100."""
    training_iteration: int = 0
    """``train()`` calls so far (RLlib's name), going on after a resume or restore."""


@dataclass
class Run:
    """The learner-side state of one run: what a checkpoint saves and resume restores."""

    config: Config
    learner: AlgorithmLearner
    rewards: RewardTracker
    counters: Counters
    run_dir: Path
    writer: SummaryWriter
    env_info: EnvInfo
    best_state: BestState = dataclasses.field(default_factory=BestState)

    def checkpoint_state(self, with_replay: bool = True) -> dict:
        """The checkpoint: net, optimizer, counters, rewards, settings, RNG, and what the
        algorithm adds (``with_replay``: its replay buffer too, where it keeps one)."""
        return {
            **self.learner.checkpoint_extras(with_replay),
            "model": self.learner.net.state_dict(),
            "optimizer": self.learner.optimizer.state_dict(),
            "counters": dataclasses.asdict(self.counters),
            "policy_version": self.learner.policy_version,
            "recent_rewards": list(self.rewards.recent_rewards),
            "best_mean_reward": self.rewards.best_mean_reward,
            "config": dataclasses.asdict(self.config),
            "torch_rng": torch.get_rng_state(),
        }

    def save(self, name: str, directory: Path | None = None) -> Path:
        path = (self.run_dir if directory is None else Path(directory)) / name
        save_checkpoint(path, self.checkpoint_state())
        return path

    def offer_best(self) -> None:
        """The best mean-100 just rose: keep a copy of the state that earned it."""
        self.best_state.offer(self.checkpoint_state(with_replay=False))

    def save_best(self) -> Path | None:
        """Write ``best.pt`` from the copy taken when the best mean-100 rose, if newer."""
        if self.best_state.state is None or self.best_state.written:
            return None
        path = self.run_dir / "best.pt"
        save_checkpoint(path, self.best_state.state)
        self.best_state.written = True
        return path

    def roll_back(self) -> int:
        """Put back the weights and optimizer state of the best copy (in place: workers act
        on them at their next step); the frame the copy was taken at."""
        state = self.best_state.state
        self.learner.net.load_state_dict(state["model"])
        self.learner.optimizer.load_state_dict(state["optimizer"])
        self.counters.rollbacks += 1
        return state["counters"]["frames"]

    def write_summary(self, reason: str, seconds: float) -> None:
        summary = {"reason": reason, "seconds": round(seconds, 3),
                   "mean_reward_100": self.rewards.mean_reward, **dataclasses.asdict(self.counters)}
        replace_text(self.run_dir / "summary.json", strict_dumps(summary, indent=2) + "\n")


def run_name(config: Config) -> str:
    return f"{config.name}__{config.env_id.replace('/', '-')}__{config.seed}__{int(time.time())}"


def hyperparameter_table(config: Config) -> str:
    rows = "\n".join(f"|{key}|{value}|" for key, value in dataclasses.asdict(config).items())
    return "|parameter|value|\n|-|-|\n" + rows


@dataclass
class SharedNet:
    """What the workers need before they start, and the checkpoint it came from, if any."""

    net: torch.nn.Module
    version_counter: torch.Tensor
    env_info: EnvInfo
    restored: dict | None

    @property
    def transitions_done(self) -> int:
        return 0 if self.restored is None else self.restored["counters"]["transitions"]


def read_checkpoint(path: str, device: torch.device | str = "cpu") -> dict:
    """A checkpoint to resume or restore; ConfigError with the reason if it cannot be read."""
    try:
        return load_checkpoint(path, map_location=device)
    except CheckpointError as exc:
        raise ConfigError(f"--resume: {exc}") from exc


def share_net(config: Config, algorithm: Algorithm, env_info: EnvInfo,
              restored: dict | None = None) -> SharedNet:
    """Build (or restore) the net in shared memory, and nothing the workers do not need.

    This part is quick; the optimizer is not (constructing the first torch optimizer imports
    torch._dynamo, 1-2 s), so it is built while the workers import and start their envs.
    A ``--resume`` file is read here unless already given as ``restored``, once; ConfigError
    if it cannot be resumed.
    """
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    torch.set_num_threads(config.learner_threads)
    keep_freed_memory()
    flush_denormals()  # before the net's first forward pass starts torch's threads
    device = torch.device(config.device)
    net = algorithm.build_net(env_info, net_settings(config)).to(device)
    version_counter = new_version_counter()
    if config.resume is not None:
        if restored is None:
            restored = read_checkpoint(config.resume, device)
        load_weights(restored, config, algorithm, env_info, net, version_counter, "--resume")
        if "torch_rng" in restored:  # a checkpoint made by hand may hold the net alone
            torch.set_rng_state(restored["torch_rng"])
    net.share_memory()
    return SharedNet(net, version_counter, env_info, restored)


def load_weights(state: dict, config: Config, algorithm: Algorithm, env_info: EnvInfo, net: torch.nn.Module,
                 version_counter: torch.Tensor, asked_by: str) -> None:
    """A checkpoint's weights and policy version into ``net`` (in place: workers acting on
    it see them at their next step); ConfigError, naming ``asked_by``, where it was trained
    on another env, by another algorithm or with another net."""
    saved = state.get("config", {})
    shape = algorithm.saved_net_shape(saved)
    if env_info.agents:  # the policies shape a multi-agent net too
        shape = {**shape, "policies": saved.get("policies") or "per-agent"}
    try:
        check_matches(state, config.env_id, config.algo, net, shape)
    except CheckpointError as exc:
        raise ConfigError(f"{asked_by}: {exc}") from exc
    net.load_state_dict(state["model"])
    version_counter.fill_(state["policy_version"])


def load_learner_state(run: Run, state: dict) -> None:
    """A checkpoint's optimizer (its moments; the learning rates stay the run's own, as
    ``--lr`` or a PBT perturbation set them), algorithm extras (replay, target nets), counters
    and reward window into a running run (the weights: ``load_weights``); this invocation's
    worker restarts are kept, as its restart budget is."""
    own_rates = [group["lr"] for group in run.learner.optimizer.param_groups]
    run.learner.optimizer.load_state_dict(state["optimizer"])
    for group, rate in zip(run.learner.optimizer.param_groups, own_rates):  # the run's --lr, not the saved one
        group["lr"] = rate
    run.learner.load_extras(state)
    run.counters = Counters(**{**state["counters"], "worker_restarts": run.counters.worker_restarts})
    run.rewards.recent_rewards.clear()
    run.rewards.recent_rewards.extend(state["recent_rewards"])
    run.rewards.best_mean_reward = state["best_mean_reward"]


RUN_DIR_TRIES = 100
"""Runs of one name, env and seed that may start in the same second, each getting a folder."""


def resumes_in_place(config: Config, saved_name: str | None) -> bool:
    """A resumed run goes on in its checkpoint's folder where ``--name`` is the checkpoint's
    (``saved_name``) and ``--logdir`` the folder that holds its folder; given another name or
    logdir, it writes a new run folder of theirs, and the checkpoint's is left as it was."""
    folder = Path(config.resume).resolve().parent
    return config.name == (saved_name or config.name) and folder.parent == Path(config.logdir).resolve()


def make_run_dir(config: Config, saved_name: str | None = None) -> Path:
    """The run's directory, created now (a resumed run's is the checkpoint's where
    ``resumes_in_place``, given the checkpoint's run name); ConfigError with the system's reason when it cannot be, before any
    worker exists. A run that starts in the same second as another of its name, env and
    seed (a loop in a notebook, runs launched together) gets the name with -2, -3, ...:
    creating a folder is atomic, so two processes never share one."""
    if config.resume is not None and resumes_in_place(config, saved_name):
        return Path(config.resume).resolve().parent
    name = run_name(config)
    for attempt in range(1, RUN_DIR_TRIES + 1):
        run_dir = Path(config.logdir) / (name if attempt == 1 else f"{name}-{attempt}")
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"--logdir {config.logdir!r}: cannot create {run_dir.name} "
                              f"({exc.strerror or exc})") from exc
    raise ConfigError(f"--logdir {config.logdir!r}: {name} and {name}-2 to -{RUN_DIR_TRIES} exist already")


def start_run(config: Config, algorithm: Algorithm, shared: SharedNet, run_dir: Path) -> Run:
    """The learner-side state around the shared net: the algorithm's learner (optimizer and
    the rest), counters, writer."""
    learner = algorithm.make_learner(config, shared.net, shared.version_counter, shared.env_info)
    writer = run_writer(run_dir)
    rewards = RewardTracker(writer, config.stop_reward, (), shared.env_info.agents)
    run = Run(config, learner, rewards, Counters(), run_dir, writer, shared.env_info)
    if shared.restored is not None:
        load_learner_state(run, shared.restored)
    writer.add_text("hyperparameters", hyperparameter_table(config), run.counters.frames)
    return run
