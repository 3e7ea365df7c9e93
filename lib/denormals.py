"""Flush denormal floats to zero, so that Adam's decaying moments do not slow the learner.

A ReLU unit that stops firing gets zero gradients, and Adam's first moment for its weights
then decays by beta1 = 0.9 a step: within some hundreds of steps it falls below float32's
smallest normal number (1.2e-38) and stays denormal for another ~150 steps on its way to
zero. On x86 each vector instruction with a denormal result takes a microcode assist. In
Pong runs 1.2-1.3 million of the net's 3.3 million first-moment entries were denormal at
150-200 s, and from about 80 s (~800 steps) on the fused Adam step took 18-26 ms instead of
about 5 (stepping from a checkpoint: 20.5 ms, against 5.0 flushing), and two trainers fell
from 1,207-1,224 transitions/s at 30-60 s to 1,006-1,055 at 150-180 s. With flushing,
clipping and Adam together stayed at 7-11 ms over runs of 200 and 300 s
(docs/performance.md). Flushing (FTZ and DAZ) sets results and inputs below the smallest
normal to zero: moments that small move no weight (Adam divides them by at least its eps,
1e-3), so learning is unchanged.
"""
from __future__ import annotations

import torch


def flush_denormals() -> bool:
    """Flush denormals in this thread and in the threads it starts from now on (they inherit
    its floating-point mode), so call it before torch's thread pool first runs. False (and
    nothing done) on CPUs without the mode."""
    return torch.set_flush_denormal(True)
