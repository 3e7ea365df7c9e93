"""``Trainer``: one run of any registered algorithm (A3C by default, ``algo="dqn"``, ...)
as an object, driven one ``train()`` iteration at a time.

    from a3c import Trainer

    with Trainer(env="CartPole-v1", seed=0) as trainer:
        while not (result := trainer.train())["done"]:
            print(result["frames"], result["episode_reward_mean"])
        path = trainer.save()
    trainer = Trainer.restore(path)
    action = trainer.compute_action(observation, greedy=True)

The keywords are the flags of ``run_a3c.py`` with underscores (``env`` for ``--env``) and
are checked the same way; ``run_a3c.py`` is a loop over ``train()``. Children start at the
first ``train()`` and keep acting between calls until their bounded queues fill, so nothing
is lost between iterations. ``stop()`` (or leaving the ``with`` block) ends them.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from a3c.algos import get_algorithm
from a3c.algos.optimizer import NonFiniteLoss
from a3c.config import Config, ConfigError, env_goal, make_config, resumed_settings
from a3c.lib.env_kind import is_multiagent
from a3c.lib.envs import EnvInfo
from a3c.lib.episodes import CallbackError
from a3c.lib.hook_call import call_hook
from a3c.lib.methods import class_or_instance_method
from a3c.lib.multiagent import agent_rows, env_agents
from a3c.lib.observation_check import check_observation_size
from a3c.lib.observations import flattened
from a3c.lib.policies import PolicyMappingError, mapping_setting
from a3c.lib.recurrent import is_recurrent
from a3c.lifecycle.callbacks import Callback, child_callbacks, given_callbacks, load_callbacks
from a3c.lifecycle.checkpoint import keep_in_history, saved_algorithm
from a3c.lifecycle.disk import OutOfRoom
from a3c.lifecycle.env_tasks import EnvTasks
from a3c.lifecycle.loop import EventLoop, StepMeans, describe_death
from a3c.lifecycle.reporter import Reporter
from a3c.lifecycle.results import (
    LearningNotAchieved,
    exit_code,
    stop_criterion_met,
    train_result,
    unsolved,
)
from a3c.lifecycle.run import (
    Run,
    load_learner_state,
    load_weights,
    make_run_dir,
    read_checkpoint,
    share_net,
    start_run,
)
from a3c.lifecycle.run_files import RunFiles
from a3c.lifecycle.tracking import Tracking
from a3c.lifecycle.workers import WorkerSet
from a3c.play import DEFAULT_MAX_STEPS, act_once, play_episode, policy_actions
from a3c.preflight import preflight
from a3c.transport.backends import make_pool
from a3c.transport.pool import WorkerDied, WorkerPool


class RunEnded(RuntimeError):
    """``train()`` was called after the run had ended."""


class Trainer:
    """One run: ``train`` / ``save`` / ``restore`` / ``compute_action`` / ``stop``.

    Bad settings raise ``ConfigError`` here, before any worker exists. The net is built (or
    restored) at once; workers, the optimizer and the TensorBoard writer come with the
    first ``train()``, so a trainer restored only to act starts no process.
    """

    def __init__(self, env: str = "PongNoFrameskip-v4", *, callbacks: Any = (),
                 policy_mapping: Callable[[str], str] | None = None, reporter: Reporter | None = None,
                 env_task_fn: Callable[[dict, Any, Any], Any] | None = None, **settings: Any):
        """``policy_mapping``, on a multi-agent env: the name of the policy that acts for
        each agent id (agents mapped to one name share its net); the ``policies`` setting
        in Python form. ``reporter``: what the run tells a person; by default only warnings,
        ``a3c.ConsoleReporter()`` prints what ``run_a3c.py`` prints. ``callbacks``: instances,
        classes, lists of them, "module:Class" (what ``--callbacks`` and sweeps give) or a
        dict of functions by hook, as RLlib takes them (``given_callbacks``). ``env_task_fn``:
        RLlib's curriculum function, ``env_task_fn(result, task_settable_env, env_context)``
        called after each ``train()``, its return set as every env's task."""
        callbacks, named = given_callbacks(callbacks)
        if named:
            settings["callbacks"] = ",".join(filter(None, [settings.get("callbacks", ""), named]))
        if policy_mapping is not None:
            if settings.get("policies") is not None:
                raise ConfigError("give policies or policy_mapping, not both")
            if not is_multiagent(env):
                raise ConfigError(f"policy_mapping is for multi-agent envs; {env} has one agent")
            try:
                settings["policies"] = mapping_setting(policy_mapping, env_agents(env))
            except PolicyMappingError as exc:
                raise ConfigError(str(exc)) from exc
        self._setup(make_config(env=env, **settings), callbacks, reporter=reporter)
        self._tasks.task_fn = env_task_fn

    @classmethod
    def from_config(cls, config: Config, callbacks: Sequence[Callback] = (),
                    restored: dict | None = None, env_info: EnvInfo | None = None,
                    reporter: Reporter | None = None) -> Trainer:
        """A trainer for a Config already made (the CLI's path); ``restored``: the
        checkpoint of ``config.resume``, if the caller has read it already; ``env_info``:
        the pre-flight's answer, if the caller has asked already."""
        trainer = cls.__new__(cls)
        trainer._setup(config, callbacks, restored, env_info, reporter)
        return trainer

    @classmethod
    def from_checkpoint(cls, path: str | Path, callbacks: Any = (), reporter: Reporter | None = None,
                        **overrides: Any) -> Trainer:
        """A new trainer of the run saved at ``path``, with its settings (``overrides``
        replace some, as a budget): counters, ``training_iteration``, optimizer, reward
        window and TensorBoard axis go on in its directory, or in a new run folder where
        ``name`` or ``logdir`` name another (``run.resumes_in_place``). The file is read once."""
        state = read_checkpoint(str(path))
        settings = resumed_settings(path, {**state.get("config", {}), "algo": saved_algorithm(state)})
        callbacks, named = given_callbacks(callbacks)
        if named:
            overrides["callbacks"] = named
        config = make_config(**{**settings, **overrides})
        return cls.from_config(config, callbacks, restored=state, reporter=reporter)

    def _restore_in_place(self, path: str | Path) -> None:
        """This trainer goes on from the checkpoint at ``path``, as RLlib's ``restore``: its
        weights (the workers act on them from their next step), optimizer, algorithm extras,
        counters, ``training_iteration`` and reward window; its own settings and run folder
        stay. ConfigError for a checkpoint of another env, algorithm or net; RunEnded after
        the run has ended (``Trainer.from_checkpoint`` goes on from there)."""
        if self._ended is not None:
            raise RunEnded(f"the run has ended ({self._ended}); Trainer.from_checkpoint(path) goes on from a checkpoint")
        state = read_checkpoint(str(path))
        load_weights(state, self.config, self.algorithm, self._shared.env_info, self.net, self._shared.version_counter,
                     "restore")
        if self._run is None:  # not started: the learner's state is built from it at the start
            self._shared.restored = state
        else:
            load_learner_state(self._run, state)

    restore = class_or_instance_method(from_checkpoint.__func__, _restore_in_place)

    def _setup(self, config: Config, callbacks: Sequence[Callback], restored: dict | None = None,
               env_info: EnvInfo | None = None, reporter: Reporter | None = None) -> None:
        self.config = config
        self.algorithm = get_algorithm(config.algo)
        self.callbacks = [*callbacks, *load_callbacks(config.callbacks)]
        self.reporter = Reporter() if reporter is None else reporter
        env_info = preflight(config) if env_info is None else env_info
        self._goal = env_goal(env_info)
        """The mean-100 that solves the env (its spec's, 18 for Pong; else --stop-reward):
        the collapse guard measures the best's climb against it (``rollback.climbed``)."""
        if self._goal is None:
            self._goal = config.stop_reward
        self._shared = share_net(config, self.algorithm, env_info, restored)
        self.run_dir = make_run_dir(config, (self._shared.restored or {}).get("config", {}).get("name"))
        self._tracking = Tracking(config, self.run_dir) if config.track else None
        if self._tracking is not None:  # last: it logs the result as the other callbacks leave it
            self.callbacks.append(self._tracking)
        self._pool: WorkerPool | None = None
        self._run: Run | None = None
        self._loop: EventLoop | None = None
        self._stop_reason: str | None = None
        self._ended: str | None = None
        self._files: RunFiles | None = None
        self.ending = False
        """True from the moment the run starts its ending (the CLI's second Ctrl-C leaves then)."""
        self.checkpoint_written = False
        """Whether the ending wrote checkpoint.pt (not after a non-finite loss or on a full disk)."""
        self._seconds = 0.0
        self._tasks = EnvTasks(config)

    # the public calls
    @property
    def net(self) -> torch.nn.Module:
        """The shared net (actor-critic, or Q-network) the workers act with and the learner trains."""
        return self._shared.net

    def train(self, seconds: float | None = None, frames: int | None = None) -> dict[str, Any]:
        """Train for one iteration: ``seconds`` of training, or ``frames`` env frames, else
        ``report_interval`` seconds; the run may end sooner (solved, a budget, a stop).

        Returns a flat dict: counters, ``episode_reward_mean`` (mean-100, None before the
        first episode), rates, the iteration's mean loss terms, ``policy_lag``, ``seconds``,
        ``done`` and ``reason`` (as in summary.json), ``eval/...`` after an evaluation; and
        RLlib's keys (``episode_reward_max``/``min`` and ``episode_len_mean`` over the last 100
        episodes, ``episodes_this_iter``, ``episodes_total``, ``timesteps_total``: agent steps,
        ``training_iteration``, ``custom_metrics``). The run ends ("stop_criterion") after the
        first iteration where a ``stop`` key's value reaches its bound.
        """
        self._start()
        run = self._run
        started, start_frames, start_episodes = time.monotonic(), run.counters.frames, run.counters.episodes
        if seconds is None and frames is None:
            seconds = self.config.report_interval
        iteration_end = None if seconds is None else started + seconds
        step_means = StepMeans(run.learner.stats_type)
        reason, message = None, ""
        try:
            while reason is None:
                reason = self._out_of_time(started) or self._loop.turn(step_means) or self._stop_reason
                if reason is None and ((iteration_end is not None and time.monotonic() >= iteration_end) or (
                        frames is not None and run.counters.frames - start_frames >= frames)):
                    break
        except WorkerDied as exc:
            if exc.fatal:  # the user's callback raised in a worker: the run ends as for one in the learner
                self._seconds += time.monotonic() - started
                self._end("error")
                raise CallbackError(exc.child_traceback or str(exc)) from None
            reason = "worker_died"
            message = f"{describe_death(exc)}; no restarts left ({self.config.max_worker_restarts} allowed)"
        except NonFiniteLoss as exc:
            reason, message = "non_finite", f"{exc}; kept the last good checkpoint"
        except OutOfRoom as exc:
            reason, message = "disk_full", str(exc)
        except BaseException as exc:
            self._seconds += time.monotonic() - started
            self._end("interrupted" if isinstance(exc, KeyboardInterrupt) else "error")
            raise
        iteration_seconds = time.monotonic() - started
        self._seconds += iteration_seconds
        run.counters.training_iteration += 1
        result = train_result(run, step_means, run.counters.frames - start_frames, iteration_seconds,
                              run.counters.episodes - start_episodes, self._seconds)
        try:
            if self.config.eval_every and run.counters.training_iteration % self.config.eval_every == 0 and reason is None:
                result.update(self.evaluate())
            for callback in self.callbacks:
                call_hook(callback.on_train_result, {"trainer": self, "algorithm": self, "result": result},
                          (self, result))
            if reason is None:
                self._tasks.after_iteration(result, self._pool)
            every = self.config.checkpoint_every_iterations
            if every and reason is None and run.counters.training_iteration % every == 0:
                self._save_latest()
        except OutOfRoom as exc:  # W&B's files (--track) filled the disk
            reason, message = "disk_full", str(exc)
        except BaseException as exc:
            self._end("interrupted" if isinstance(exc, KeyboardInterrupt) else "error")
            raise
        reason = reason or self._stop_reason or stop_criterion_met(self.config.stop, result)
        if reason is not None:
            reason, message = self._end(reason, message)
            result.update(done=True, reason=reason, message=message, checkpoint_written=self.checkpoint_written)
        try:
            self._files.add(result)
        except OutOfRoom as exc:
            if reason is None:  # an ended run's own message says what could not be written
                reason, message = self._end("disk_full", str(exc))
                result.update(done=True, reason=reason, message=message, checkpoint_written=self.checkpoint_written)
        if reason is not None:
            self._check_learning_achieved(result)
        return result

    def _check_learning_achieved(self, result: dict[str, Any]) -> None:
        """With ``as_test``: LearningNotAchieved after the ending of a run left unsolved."""
        if self.config.as_test:
            problem = unsolved(result, self._goal)
            if problem:
                raise LearningNotAchieved(f"--as-test: {problem}", result)

    def evaluate(self, episodes: int | None = None) -> dict[str, float]:
        """Greedy episodes in this process on a fresh env; logged under ``eval/``."""
        episodes = self.config.eval_episodes if episodes is None else episodes
        env = self.config.env_recipe.make()
        try:
            played = [play_episode(env, self._act_greedily, self.config.seed + 10_000 + index, DEFAULT_MAX_STEPS)
                      for index in range(episodes)]
        finally:
            env.close()
        figures = {"eval/episode_reward_mean": float(np.mean([episode.reward for episode in played])),
                   "eval/episode_length_mean": float(np.mean([episode.length for episode in played])),
                   "eval/episodes": episodes}
        for tag, value in figures.items():
            self.log_scalar(tag, value)
        return figures

    def save(self, path: str | Path | None = None) -> Path:
        """Write a checkpoint (the CLI's format): to ``path`` itself where it ends in ``.pt``,
        else as ``checkpoint.pt`` in the folder ``path``, by default the run's; its path.
        ``Trainer.restore(path)`` or ``run_a3c.py --resume path`` goes on from it."""
        if path is None:
            return self._save_latest()
        path = Path(path)
        folder, name = (path.parent, path.name) if path.suffix == ".pt" else (path, "checkpoint.pt")
        folder.mkdir(parents=True, exist_ok=True)
        return self._save(name, folder)

    def compute_action(self, observation: np.ndarray, greedy: bool = False, agent: str | None = None,
                       state: np.ndarray | None = None) -> int | np.ndarray | tuple[int | np.ndarray, np.ndarray]:
        """The action for one raw env observation, in this process (no worker involved). On a
        multi-agent env: ``agent``'s action for its own observation, or without ``agent`` one
        action per agent for the joint observation that ``play`` steps. With memory (``lstm``, attention): the
        action and the next state, ``state`` being the last call's (None: an episode's start).
        With ``frame_stack``: the stacked observation, as ``a3c.lib.envs.make_env(env,
        frame_stack=N)`` gives it (a stacked image also as an image, its frames as channels)."""
        if agent is not None:
            return self.compute_actions({agent: observation}, greedy)[agent]
        check_observation_size(self._shared.env_info, self.config.frame_stack, observation)
        recurrent = is_recurrent(self.net)
        if state is not None and not recurrent:
            raise ValueError("state is for a policy with memory (lstm=True, or the model config's use_attention)")
        raw_space = self._shared.env_info.raw_observation_space
        action, next_state = act_once(self.net, self.algorithm, flattened(raw_space, observation),
                                      None if state is None else torch.as_tensor(state)[None], greedy)
        return (action, next_state[0].numpy()) if recurrent else action

    def compute_actions(self, observations: np.ndarray | Mapping[str, np.ndarray],
                        greedy: bool = False) -> np.ndarray | dict[str, int]:
        """Actions for a batch of raw env observations: sampled from the policy, or its
        most probable ones with ``greedy``; as the algorithm acts in play (a Q-network's
        greedy ones always). On a multi-agent env, a dict of agents' observations gives a
        dict of their actions, each from its agent's policy. A Dict, Tuple or Discrete
        observation space's observations are flattened as the workers' are; rows of
        another size than the net takes are a ValueError."""
        env_info = self._shared.env_info
        if not isinstance(observations, Mapping):
            for observation in observations:
                check_observation_size(env_info, self.config.frame_stack, observation)
        raw_space = env_info.raw_observation_space
        if isinstance(observations, Mapping):  # each agent's own, flattened where its space is a Dict
            rows = agent_rows({agent: flattened(raw_space, seen) for agent, seen in observations.items()}, env_info.agents)
            actions = policy_actions(self.net, self.algorithm, rows, greedy)
            return {agent: int(action) for agent, action in zip(observations, actions)}
        if raw_space is not None:
            observations = np.stack([flattened(raw_space, observation) for observation in observations])
        return policy_actions(self.net, self.algorithm, observations, greedy)

    def export_policy(self, directory: str | Path, format: str = "torchscript") -> Path:
        """``policy.pt`` (TorchScript) or ``policy.onnx`` and ``policy.json`` (``a3c.export``)."""
        from a3c.export import export_policy

        return export_policy(self.net, self.algorithm, vars(self.config), self._shared.env_info, directory, format)

    def log_scalar(self, tag: str, value: float) -> None:
        """A scalar of the user's in the run's TensorBoard, at the current frame."""
        run = self._learner_state()
        run.writer.add_scalar(tag, value, run.counters.frames)

    def request_stop(self, reason: str = "stopped") -> None:
        """End the run at the next chance (within a second): workers stopped, saved."""
        self._stop_reason = self._stop_reason or reason

    @property
    def workers(self) -> WorkerSet:
        """RLlib's worker set: ``trainer.workers.foreach_worker(fn)`` (``a3c.lifecycle.workers``)."""
        return WorkerSet(self)

    def set_env_task(self, task: Any) -> None:
        """Give every env ``task`` through its ``set_task(task)``, to take effect at its next
        reset: curriculum learning. Children started later (restarts) get it too."""
        self._tasks.set(task, self._pool)

    def kill(self) -> None:
        """SIGKILL every worker now (the CLI's second Ctrl-C); no checkpoint is written."""
        if self._pool is not None:
            self._pool.kill()

    def stop(self) -> None:
        """Stop the workers in order and flush the writer; nothing is saved (``save()`` is).
        Calling it again does nothing; the trainer can still act and save. Leaving a ``with``
        block also closes the writer."""
        try:
            if self._ended is None and self._run is not None:
                self._ended = "stopped"
                if self._loop is not None:
                    self._loop.log_scalars()
        finally:  # the children stop whatever the logging did
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        if self._run is not None:
            self._run.writer.flush()

    def __enter__(self) -> Trainer:  # noqa: PYI034 - Self needs Python 3.11
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        self._tasks.close()
        if self._run is not None:
            self._run.writer.close()
        if self._tracking is not None:  # a run that ended has finished it already
            self._tracking.finish(0)

    # the parts of an iteration
    def _start(self) -> None:
        """Children first (they take seconds to import and start), the learner meanwhile."""
        if self._ended is not None:
            raise RunEnded(f"the run has ended ({self._ended}); Trainer.restore(path) goes on from a checkpoint")
        if self._pool is not None:
            return
        config, shared = self.config, self._shared
        pool = make_pool(self.algorithm, config, shared.env_info, shared.net, shared.version_counter,
                         base_seed=config.seed + shared.transitions_done, callbacks=child_callbacks(self.callbacks))
        if self._tasks.task is not None:
            pool.set_env_task(self._tasks.task)
        pool.start()  # a pool that cannot start stops what it began and raises
        self._pool = pool
        run = self._learner_state()
        if self._loop is None:
            self.reporter.info(
                f"run {run.run_dir} | {config.env_id} | {self.algorithm.describe(config)} | "
                f"{config.processes} processes x {config.envs_per_process} envs | device {config.device}"
                f"{', bfloat16' if config.bf16 else ''}"
                + (f" | resumed at frame {run.counters.frames:,} from {config.resume}" if config.resume else ""))
            run.learner.begin(run.writer, run.counters.frames, shared.restored, self.reporter)
            self._files = RunFiles(run.run_dir, config)
            self._loop = EventLoop(self, run, pool, self.callbacks, self.reporter, self._goal,
                                   save_checkpoint=self._save_latest,
                                   save_best=self._save_best)

    def _learner_state(self) -> Run:
        if self._run is None:
            self._run = start_run(self.config, self.algorithm, self._shared, self.run_dir)
        return self._run

    def _out_of_time(self, iteration_started: float) -> str | None:
        """``time_budget`` once the run's training seconds reach ``--max-seconds``."""
        budget = self.config.max_seconds
        if budget is not None and self._seconds + time.monotonic() - iteration_started >= budget:
            return "time_budget"
        return None

    def _end(self, reason: str, message: str = "") -> tuple[str, str]:
        """The run's ending: checkpoint.pt (not after a non-finite loss, which keeps the last
        good one), best.pt and summary.json first, then the workers stopped in order. Saved
        first, the checkpoint cannot be lost to workers, actors or a cluster that are slow
        to stop or already gone (a SIGTERM to the whole process group reaches them too).

        Each write is tried whatever the one before did: a disk that fills makes the reason
        ``disk_full`` (a signal keeps its own), the message naming the first file that could
        not be written and which of checkpoint.pt and summary.json were not; returned."""
        self.ending = True
        self._ended = reason
        signalled = reason in ("interrupted", "terminated")
        if signalled:
            self.reporter.info(f"{reason}: saving the checkpoint, then stopping the children "
                               "(a second Ctrl-C or SIGTERM leaves at once)")
        run = self._run
        unwritten: list[OutOfRoom] = []

        def attempt(write: Callable[[], object]) -> bool:
            try:
                write()
            except OutOfRoom as exc:
                unwritten.append(exc)
                return False
            return True

        try:
            at_end = reason != "non_finite" and (self.config.checkpoint_at_end or signalled)
            self.checkpoint_written = at_end and attempt(self._save_latest)
            if reason != "non_finite":
                attempt(self._save_best)
            if unwritten and not signalled:
                reason = "disk_full"
            self._ended = reason
            summary_written = attempt(lambda: run.write_summary(reason, self._seconds))
            if self._loop is not None:  # after the saves: nothing here can cost a checkpoint
                attempt(self._loop.log_scalars)
            attempt(run.writer.flush)
            if unwritten or reason == "disk_full":
                logging.raiseExceptions = False  # W&B's log file is on the full disk: no report per line
            if self._tracking is not None:
                attempt(lambda: self._tracking.finish(exit_code(reason)))
            if signalled:
                self.reporter.info("checkpoint saved; stopping the children" if self.checkpoint_written else
                                   "stopping the children")
        finally:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        if unwritten or reason == "disk_full":
            message = "; ".join([message or str(unwritten[0]),
                                 *([] if self.checkpoint_written else ["checkpoint.pt not written"]),
                                 *([] if summary_written else ["summary.json not written"])])
        return reason, message

    def _save_latest(self) -> Path:
        """The run's checkpoint.pt, kept in the history too with ``keep_checkpoints``."""
        run = self._learner_state()
        path = run.save("checkpoint.pt")
        if self.config.keep_checkpoints:
            keep_in_history(path, run.counters.training_iteration, self.config.keep_checkpoints)
        self._said_saved(path)
        return path

    def _save(self, name: str, directory: Path | None = None) -> Path:
        path = self._learner_state().save(name, directory)
        self._said_saved(path)
        return path

    def _save_best(self) -> None:
        path = self._run.save_best()
        if path is not None:
            self._said_saved(path)

    def _said_saved(self, path: Path) -> None:  # each callback's on_checkpoint
        for callback in self.callbacks:
            call_hook(callback.on_checkpoint, {"trainer": self, "algorithm": self, "path": path}, (self, path))

    def _act_greedily(self, observation: np.ndarray, state: torch.Tensor | None) -> tuple[int | np.ndarray, Any]:
        raw_space = self._shared.env_info.raw_observation_space
        return act_once(self.net, self.algorithm, flattened(raw_space, observation), state, True)
