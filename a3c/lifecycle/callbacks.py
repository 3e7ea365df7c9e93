"""Callbacks: code of the user's that a run calls at its events, in two places.

Subclass ``Callback`` and override what you need. In the workers (each gets its own copy,
pickled by value): ``on_episode_start``, ``on_episode_step`` and ``on_episode_end``, with
keyword arguments (``episode``: a ``a3c.lib.episodes.Episode`` with ``user_data``,
``custom_metrics``, ``hist_data``, ``last_observation``, ``length``, ``total_reward``;
``env``, ``env_index``, ``worker_index``; take ``**kwargs`` for the rest). What
``on_episode_end`` puts in ``episode.custom_metrics`` reaches the result (``NAME_mean``,
``_min``, ``_max`` over the last 100 episodes), TensorBoard and progress.jsonl;
``hist_data`` becomes TensorBoard histograms; ``on_postprocess_trajectory`` and
``on_sample_end`` get each batch of rows before it is sent. In the learner, with the trainer,
which can log its own scalars (``trainer.log_scalar``), stop the run (``trainer.request_stop``)
or give the envs a new task (``trainer.set_env_task``): ``on_episode_result``,
``on_learn_on_batch``, ``on_train_result`` and ``on_checkpoint``. An exception in a callback,
in a worker as in the learner, ends the run: workers stopped, checkpoint saved, the
exception (with a worker's traceback) raised from ``train()``.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a3c.lib.experience import EpisodeResult

if TYPE_CHECKING:
    from a3c.lib.episodes import Episode
    from a3c.lifecycle.trainer import Trainer


CHILD_HOOKS = ("on_episode_start", "on_episode_step", "on_episode_end", "on_postprocess_trajectory", "on_sample_end")


class Callback:
    """Does nothing at every event; subclasses override the events they want."""

    # in the workers
    def on_episode_start(self, *, episode: Episode, env: Any, env_index: int, **kwargs: Any) -> None:
        """An env began an episode: ``episode.last_observation`` is its first observation."""

    def on_episode_step(self, *, episode: Episode, env: Any, env_index: int, **kwargs: Any) -> None:
        """An env took a step: ``episode.last_observation`` is where it led."""

    def on_episode_end(self, *, episode: Episode, env: Any, env_index: int, **kwargs: Any) -> None:
        """An env finished an episode; fill ``episode.custom_metrics`` and ``hist_data`` here."""

    def on_postprocess_trajectory(self, *, postprocessed_batch: Any, **kwargs: Any) -> None:
        """A worker made a batch of rows and is about to send it: ``postprocessed_batch``
        reads as RLlib's SampleBatch, and assigning a column (``["rewards"]``) changes what
        the learner trains on (the rows as the algorithm sends them: A3C's n-step sums)."""

    def on_sample_end(self, *, worker: Any, samples: Any, **kwargs: Any) -> None:
        """Right after ``on_postprocess_trajectory``, on the same rows (``samples``, with
        ``samples.count``), as RLlib's rollout worker ends a sample; in the worker."""

    # in the learner
    def on_episode_result(self, trainer: Trainer, episode: EpisodeResult) -> None:
        """The learner got a finished episode: its return, length and custom metrics."""


    def on_learn_on_batch(self, trainer: Trainer, result: dict[str, Any]) -> None:
        """The learner took an optimizer step; ``result`` has its figures by name. Taken as
        RLlib's ``(*, policy, train_batch, result, **kwargs)``: ``train_batch`` holds the rows
        the step trained on, as a SampleBatch (None in A3C's grads mode, whose rows stay in
        the workers)."""

    def on_train_result(self, trainer: Trainer, result: dict[str, Any]) -> None:
        """``train()`` is about to return ``result``; changes to it are returned too."""

    def on_checkpoint(self, trainer: Trainer, path: Path) -> None:
        """A checkpoint was written to ``path`` (periodic, best, final or ``save()``)."""


def child_callbacks(callbacks: Sequence[Callback]) -> list[Callback]:
    """The callbacks that override a worker-side hook: only these travel to the workers."""
    return [callback for callback in callbacks
            if any(getattr(type(callback), hook, None) not in (None, getattr(Callback, hook)) for hook in CHILD_HOOKS)]


def load_callbacks(spec: str) -> list[Callback]:
    """The ``callbacks`` setting's "module:Class" (or "module:Class,module:Other") as instances;
    ConfigError when one cannot be imported or made."""
    from a3c.options import ConfigError

    loaded = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        module_name, _, class_name = item.partition(":")
        try:
            loaded.append(getattr(importlib.import_module(module_name), class_name)())
        except (ImportError, AttributeError, TypeError, ValueError) as error:
            raise ConfigError(f"--callbacks {item!r}: {type(error).__name__}: {error}") from None
    return loaded


LEARNER_HOOKS = ("on_episode_result", "on_learn_on_batch", "on_train_result", "on_checkpoint")


class FunctionCallbacks(Callback):
    """RLlib's older form, a dict of functions by hook (``{"on_train_result": fn}``), each
    called with one ``info`` dict of the hook's keyword arguments (``info["trainer"]``,
    ``info["result"]``; a worker's hooks: ``info["episode"]``, ``info["env"]``, ...)."""

    def __init__(self, functions: Mapping[str, Callable[[dict[str, Any]], Any]]):
        from a3c.options import ConfigError

        unknown = sorted(set(functions) - {*CHILD_HOOKS, *LEARNER_HOOKS})
        if unknown:
            raise ConfigError(f"callbacks: no hook named {', '.join(unknown)}; the hooks are "
                              f"{', '.join([*CHILD_HOOKS, *LEARNER_HOOKS])}")
        self.functions = dict(functions)

    def _info(self, hook: str, **info: Any) -> None:
        function = self.functions.get(hook)
        if function is not None:
            function(info)


def _forwarded(hook: str) -> Callable[..., None]:
    def forward(self: FunctionCallbacks, **kwargs: Any) -> None:
        self._info(hook, **kwargs)

    forward.__name__ = hook
    return forward


for _hook in (*CHILD_HOOKS, *LEARNER_HOOKS):  # each hook calls the function given for it, if any
    setattr(FunctionCallbacks, _hook, _forwarded(_hook))


def given_callbacks(given: Any) -> tuple[list[Any], str]:
    """What ``Trainer(callbacks=...)`` was given, as RLlib's users give it (a class, an
    instance, a list of those, "module:Class", a dict of functions by hook), split into
    instances and the ``callbacks`` setting's "module:Class" text."""
    if isinstance(given, str):
        return [], given
    items = given if isinstance(given, (list, tuple)) else [given]
    instances, names = [], []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, Mapping):
            instances.append(FunctionCallbacks(item))
        elif isinstance(item, type):
            instances.append(item())
        else:
            instances.append(item)
    return instances, ",".join(names)
