#!/usr/bin/env python3
"""Train data-parallel A3C: ``python run_a3c.py --cuda -n pong1`` or ``--env CartPole-v1``."""
import sys

if __name__ == "__main__":
    # Imported here, not above: spawned children re-import this file as __mp_main__ and
    # should not pay for the learner's imports (tensorboardX, the training loop).
    from a3c.cli import main

    sys.exit(main())
