"""Callbacks: code of the user's that a run calls at its events.

Subclass ``Callback`` and override what you need. A callback gets the trainer, so it can log
its own scalars (``trainer.log_scalar``), stop the run (``trainer.request_stop``) or give the
envs a new task (``trainer.set_env_task``, curriculum learning). An exception raised in a
callback ends the run as any failure does: workers stopped, checkpoint saved, the
exception raised from ``train()``.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lib.experience import EpisodeResult

if TYPE_CHECKING:
    from a3c.lifecycle.trainer import Trainer


class Callback:
    """Does nothing at every event; subclasses override the events they want."""

    def on_episode_end(self, trainer: Trainer, episode: EpisodeResult) -> None:
        """A worker's env finished an episode (its undiscounted return and length)."""

    def on_train_result(self, trainer: Trainer, result: dict[str, Any]) -> None:
        """``train()`` is about to return ``result``; changes to it are returned too."""

    def on_checkpoint(self, trainer: Trainer, path: Path) -> None:
        """A checkpoint was written to ``path`` (periodic, best, final or ``save()``)."""
