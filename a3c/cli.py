"""Command line: parse and validate, then a loop over ``Trainer.train()`` until the run ends;
exit with its code. A setting found unusable before any worker exists (a bad flag, a
--resume file, a --logdir) exits 2."""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from a3c.config import COMMAND, ConfigError, exit_on_config_error, parse_config
from a3c.lifecycle.reporter import ConsoleReporter
from a3c.lifecycle.results import LearningNotAchieved, exit_code
from a3c.lifecycle.signals import REASONS, StopSignals, early_signal
from a3c.lifecycle.trainer import Trainer
from a3c.preflight import preflight


def main(argv: Sequence[str] | None = None, prog: str = COMMAND) -> int:
    """Train from the command line (``prog`` names the command in its usage and errors);
    the run's exit code."""
    try:
        config = parse_config(argv, prog)
        env_info = preflight(config)
    except ConfigError as error:
        exit_on_config_error(error, prog)
    signum = early_signal()
    if signum is not None:  # before any run folder, child or actor: nothing to stop or save
        print(f"{REASONS[signum]} before the run started: nothing was written", file=sys.stderr, flush=True)
        return 128 + signum
    try:
        trainer = Trainer.from_config(config, env_info=env_info, reporter=ConsoleReporter())
    except ConfigError as error:
        exit_on_config_error(error, prog)

    def exit_now(code: int) -> None:
        """A second Ctrl-C or SIGTERM: kill the workers and leave at once. The ending saves
        first, so this costs the final checkpoint only when it comes during the save; the last
        one on disk stays readable either way, since checkpoints are replaced by rename."""
        trainer.kill()
        print("second interrupt: children killed, exiting at once",
              file=sys.stderr, flush=True)
        os._exit(code)

    unsolved = None
    with trainer, StopSignals(exit_now, trainer.request_stop, lambda: trainer.ending):
        try:
            while not (result := trainer.train())["done"]:
                pass
        except ConfigError as error:  # what only the backend can tell, before any worker
            exit_on_config_error(error, prog)
        except LearningNotAchieved as error:  # the run has ended and saved
            result, unsolved = error.result, error
    mean = result["episode_reward_mean"]
    mean_text = "n/a" if mean is None else f"{mean:.2f}"
    print(f"{result['reason']}: {result['frames']:,} frames, {result['episodes']:,} episodes, "
          f"{result['seconds']:.1f} s, mean-100 reward {mean_text}; {checkpoint_said(result)}", flush=True)
    if result["message"]:
        print(f"error: {result['message']}", file=sys.stderr, flush=True)
    if unsolved is not None:
        print(f"error: {unsolved}", file=sys.stderr, flush=True)
        return 1
    return exit_code(result["reason"])


def checkpoint_said(result: dict) -> str:
    """What the closing line says of the checkpoint: only a file that exists is named, and a
    run whose ending did not write one (a non-finite signal, a full disk) kept an older one."""
    path = os.path.join(result["run_dir"], "checkpoint.pt")
    if not os.path.exists(path):
        return "no checkpoint was written"
    written = result.get("checkpoint_written", result["reason"] not in ("non_finite", "disk_full"))
    return f"saved {path}" if written else f"kept the last good checkpoint {path}"
