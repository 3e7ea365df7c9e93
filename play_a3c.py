#!/usr/bin/env python3
"""Play a checkpoint: ``python play_a3c.py runs/RUN/best.pt --episodes 5 --record videos``."""
import sys

from a3c.play import main

if __name__ == "__main__":
    sys.exit(main())
