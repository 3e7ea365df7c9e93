#!/usr/bin/env python3
"""Train: ``python run_a3c.py --cuda -n pong1`` or ``--env CartPole-v1`` (installed, the same
command is ``a3c-train`` or ``python -m a3c``)."""
from a3c.__main__ import train

if __name__ == "__main__":
    train()
