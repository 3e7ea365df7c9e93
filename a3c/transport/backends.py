"""The backends behind ``--backend``: which ``WorkerPool`` each name gives. Ray's is
imported only when chosen, so the base install runs without Ray."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.lib.envs import EnvInfo
    from a3c.transport.pool import WorkerPool


def make_pool(algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
              version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()) -> WorkerPool:
    """The pool of ``config.backend``; ``callbacks`` run their worker-side hooks in every worker."""
    if config.backend == "ray":
        from a3c.transport.ray_pool import RayWorkerPool

        return RayWorkerPool(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
    if config.backend == "serial":
        from a3c.transport.serial_pool import SerialPool

        return SerialPool(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
    from a3c.transport.process_pool import ProcessPool

    return ProcessPool(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
