"""Weights & Biases tracking (``--track``): the run's settings and each iteration's result
logged to a W&B run, as RLlib's WandbLoggerCallback logs its results and CleanRL's
``--track`` its runs. TensorBoard keeps every scalar; W&B gets one row an iteration, which
it takes in as fast as it comes (mirroring the events file instead made W&B fall minutes
behind a CartPole run's thousands of episodes a second)."""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a3c.config import Config
from a3c.lifecycle.callbacks import Callback
from a3c.lifecycle.disk import writing
from a3c.options import ConfigError

if TYPE_CHECKING:
    from a3c.lifecycle.trainer import Trainer

DEFAULT_PROJECT = "a3c"


def tracking_id(run_dir: Path) -> str:
    """The W&B run id of a run folder, from its name: a resumed run (the same folder, on any
    machine) goes on in the same W&B run."""
    return hashlib.sha1(run_dir.name.encode()).hexdigest()[:16]


def figures(result: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The numbers in a result, nested ones (``custom_metrics``) under ``outer/inner``;
    flags, texts and figures not yet known (None) left out."""
    found: dict[str, float] = {}
    for key, value in result.items():
        if isinstance(value, Mapping):
            found.update(figures(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found[prefix + key] = value
    return found


class Tracking(Callback):
    """The W&B run of one run folder, written under it (``wandb/``), with the run's settings
    as its config; ConfigError when W&B cannot start it (no login, say). Each ``train()``
    result's figures go to it at the result's frame; ``finish`` marks it with the exit code."""

    def __init__(self, config: Config, run_dir: Path):
        import wandb

        self._folder = run_dir / "wandb"
        try:
            self._run = wandb.init(
                project=config.wandb_project or DEFAULT_PROJECT, entity=config.wandb_entity, name=run_dir.name,
                id=tracking_id(run_dir), resume="allow", dir=str(run_dir), config=dataclasses.asdict(config),
                settings=wandb.Settings(console="off", silent=True))
        except Exception as exc:  # W&B's own errors, whatever their class: one line, before any child
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"--track: W&B could not start the run: {first_line}") from exc

    def on_train_result(self, trainer: Trainer, result: dict[str, Any]) -> None:
        if self._run is not None:
            with writing(self._folder):  # W&B's offline files, on the run's disk
                self._run.log(figures(result), step=result["frames"])

    def finish(self, exit_code: int) -> None:
        """End the W&B run (once; later calls do nothing); ``OutOfRoom`` if its files could
        not be written."""
        if self._run is not None:
            run, self._run = self._run, None
            with writing(self._folder):
                run.finish(exit_code=exit_code)
