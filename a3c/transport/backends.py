"""The backends behind ``--backend``: which ``WorkerPool`` each name gives. Ray's is
imported only when chosen, so the base install runs without Ray."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn

    from a3c.algos.base import Algorithm
    from a3c.config import Config
    from a3c.transport.pool import WorkerPool
    from lib.envs import EnvInfo


def make_pool(algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
              version_counter: torch.Tensor, base_seed: int) -> WorkerPool:
    """The pool of ``config.backend``."""
    if config.backend == "ray":
        from a3c.transport.ray_pool import RayWorkerPool

        return RayWorkerPool(algorithm, config, env_info, net, version_counter, base_seed)
    from a3c.transport.process_pool import ProcessPool

    return ProcessPool(algorithm, config, env_info, net, version_counter, base_seed)
