"""Curriculum: the task every env of a run is given (``set_task(task)``, taking effect at
its next reset), set by the user (``Trainer.set_env_task``, a callback) or by RLlib's
``env_task_fn(result, task_settable_env, env_context)`` after each ``train()``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a3c.config import Config
from a3c.lib.user_envs import EnvContext
from a3c.transport.pool import WorkerPool


class EnvTasks:
    """The run's current task (None: the envs' own) and the env the task function sees."""

    def __init__(self, config: Config):
        self.config = config
        self.task: Any = None
        self.task_fn: Callable[[dict, Any, Any], Any] | None = None
        self._settable: bool | None = None
        self._env: Any = None
        """The learner's own env of the run, made once: ``task_fn``'s ``task_settable_env``."""

    def set(self, task: Any, pool: WorkerPool | None) -> None:
        """Every env's next task, the pool's children's (and later restarts') included;
        ValueError for an env without ``set_task``."""
        if self._settable is None:  # asked once: making an env can take a while
            probe = self.config.env_recipe.make()
            self._settable = hasattr(probe.unwrapped, "set_task")
            probe.close()
        if not self._settable:
            raise ValueError(f"{self.config.env_id} has no set_task(task) method")
        self.task = task
        if pool is not None:
            pool.set_env_task(task)

    def after_iteration(self, result: dict[str, Any], pool: WorkerPool | None) -> None:
        """``task_fn`` as RLlib calls it: with the result, an env holding the current task
        (its ``get_task()`` reads it) and the env's context; its return is every env's task."""
        if self.task_fn is None:
            return
        if self._env is None:
            self._env = self.config.env_recipe.make()
        env = self._env.unwrapped
        if self._settable is None:  # this env answers what ``set`` would make a probe for
            self._settable = hasattr(env, "set_task")
        if self.task is not None and hasattr(env, "set_task"):
            env.set_task(self.task)
        self.set(self.task_fn(result, env, EnvContext(self.config.env_config)), pool)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
