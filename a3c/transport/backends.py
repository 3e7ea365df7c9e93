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


def pool_class(backend: str) -> type[WorkerPool]:
    """The ``WorkerPool`` behind ``--backend``."""
    if backend == "ray":
        from a3c.transport.ray_pool import RayWorkerPool

        return RayWorkerPool
    if backend == "serial":
        from a3c.transport.serial_pool import SerialPool

        return SerialPool
    from a3c.transport.process_pool import ProcessPool

    return ProcessPool


def check_payload(algorithm: Algorithm, config: Config, env_info: EnvInfo) -> None:
    """ConfigError where ``config.backend`` cannot carry what ``algorithm``'s workers send;
    asked by the pre-flight, before any worker."""
    from a3c.algos.base import net_settings

    net = algorithm.build_net(env_info, net_settings(config))
    pool_class(config.backend).check_payload(algorithm, config, algorithm.payload(config, env_info, net))


def make_pool(algorithm: Algorithm, config: Config, env_info: EnvInfo, net: nn.Module,
              version_counter: torch.Tensor, base_seed: int, callbacks: Sequence[Any] = ()) -> WorkerPool:
    """The pool of ``config.backend``; ``callbacks`` run their worker-side hooks in every worker."""
    return pool_class(config.backend)(algorithm, config, env_info, net, version_counter, base_seed, callbacks)
