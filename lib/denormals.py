"""Flush denormal floats to zero, so that Adam's decaying moments do not slow the learner.

A ReLU unit that stops firing gets zero gradients, and Adam's first moment for its weights
then decays by beta1 = 0.9 a step: within some hundreds of steps it falls below float32's
smallest normal number (1.2e-38) and stays denormal for another ~150 steps on its way to
zero. On x86 each vector instruction with a denormal result takes a microcode assist, and
in a Pong run a third of the moments end up denormal after the first minute or two, which
makes the Adam step several times slower (docs/performance.md; `python -m benchmarks.run
--only denormals` measures it). Flushing (FTZ and DAZ) sets results and inputs below the smallest
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
