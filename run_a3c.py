#!/usr/bin/env python3
"""Train data-parallel A3C: ``python run_a3c.py --cuda -n pong1`` or ``--env CartPole-v1``."""
import gc
import sys

if __name__ == "__main__":
    # Imported here, not above: spawned children re-import this file as __mp_main__ and
    # should not pay for the learner's imports (tensorboardX, the training loop).
    from a3c.cli import main

    exit_code = main()
    # The run is saved and its files closed; frozen objects are left out of the collection
    # at interpreter exit, which walks every object torch created (about 0.7 s on 2 cores).
    gc.freeze()
    sys.exit(exit_code)
