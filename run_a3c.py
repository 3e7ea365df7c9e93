#!/usr/bin/env python3
"""Train data-parallel A3C: ``python run_a3c.py --cuda -n pong1`` or ``--env CartPole-v1``."""
import sys

from a3c.cli import main

if __name__ == "__main__":
    sys.exit(main())
