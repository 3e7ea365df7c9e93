"""Command line: parse and validate, train, exit with the run's code; a setting found
unusable before any child exists (a bad flag, a --resume file, a --logdir) exits 2."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from a3c.config import ConfigError, exit_on_config_error, parse_config
from a3c.train import train


def main(argv: Sequence[str] | None = None) -> int:
    try:
        result = train(parse_config(argv))
    except ConfigError as error:
        exit_on_config_error(error)
    counters = result.counters
    mean = "n/a" if result.mean_reward is None else f"{result.mean_reward:.2f}"
    print(f"{result.reason}: {counters.frames:,} frames, {counters.episodes:,} episodes, "
          f"{result.seconds:.1f} s, mean-100 reward {mean}; saved {result.run_dir / 'checkpoint.pt'}",
          flush=True)
    if result.message:
        print(f"error: {result.message}", file=sys.stderr, flush=True)
    return result.exit_code
