"""The optimizer step every algorithm's learner takes: Adam, the clipped step that refuses a non-finite
loss, target nets that follow the online ones, and the policy version (optimizer steps
applied) kept in shared memory."""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
from torch import nn


class NonFiniteLoss(RuntimeError):
    """The loss or gradient norm was NaN or infinite; the step was not applied."""


def make_adam(net: nn.Module, lr: float, eps: float) -> torch.optim.Adam:
    """Adam, fused where this torch build has a fused kernel for the net's device.

    On the CPU the fused step takes a fraction of the per-parameter loop's time
    (docs/performance.md); older builds without it get the plain loop.
    """
    try:
        return torch.optim.Adam(net.parameters(), lr=lr, eps=eps, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(net.parameters(), lr=lr, eps=eps)


DECAY_FLOOR = 0.1
"""The share of its start a decayed learning rate or entropy bonus holds once its frames are past."""


def decayed(start: float, frames: int, decay_frames: int) -> float:
    """``start`` falling linearly with the frames trained on, to ``DECAY_FLOOR`` of itself at
    ``decay_frames`` and held there (0: ``start`` throughout), as ``--lr-decay-frames`` and
    ``--entropy-decay-frames`` say. The floor keeps a run that goes past the planned length
    learning, where PPO's common ports decay the rate to 0 at its end."""
    if not decay_frames:
        return start
    return start * max(DECAY_FLOOR, 1.0 - (1.0 - DECAY_FLOOR) * frames / decay_frames)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def new_version_counter() -> torch.Tensor:
    """A shared-memory policy version (optimizer steps applied) at 0."""
    return torch.zeros((), dtype=torch.int64).share_memory_()


def clip_and_step(net: nn.Module, optimizer: torch.optim.Optimizer, clip_grad: float, loss_total: float,
                  version_counter: torch.Tensor) -> float:
    """Clip the gradients already in ``net`` to ``clip_grad``, step and count one more policy
    version; the norm before the clip. Raises NonFiniteLoss, stepping nothing, when the loss
    or the norm is not finite."""
    grad_norm = float(nn.utils.clip_grad_norm_(net.parameters(), clip_grad))
    if not (math.isfinite(loss_total) and math.isfinite(grad_norm)):
        raise NonFiniteLoss(f"non-finite training signal at step {int(version_counter)}: "
                            f"loss {loss_total}, gradient norm {grad_norm}")
    optimizer.step()
    version_counter += 1
    return grad_norm


def step_parts(optimizer: torch.optim.Optimizer, parts: Sequence[tuple[torch.Tensor, list[nn.Parameter]]],
               clip_grad: float, version_counter: torch.Tensor) -> list[float]:
    """One step in which each ``(loss, parameters)`` part moves its own parameters only (an
    actor's loss reaches the critics through Q, and must not move them): the gradients taken
    part by part and clipped to ``clip_grad`` apart; their norms before the clip. Raises
    NonFiniteLoss, stepping nothing, when a loss or norm is not finite."""
    for loss, parameters in parts:
        for parameter, grad in zip(parameters, torch.autograd.grad(loss, parameters)):
            parameter.grad = grad
    norms = [float(nn.utils.clip_grad_norm_(parameters, clip_grad)) for _, parameters in parts]
    losses = [float(loss.detach()) for loss, _ in parts]
    if not all(math.isfinite(value) for value in (*losses, *norms)):
        raise NonFiniteLoss(f"non-finite training signal at step {int(version_counter)}: losses {losses}, "
                            f"gradient norms {norms}")
    optimizer.step()
    version_counter += 1
    return norms


def frozen_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` that no loss trains: a target net, moved only by ``follow`` or a
    hard copy."""
    target = copy.deepcopy(module)
    for parameter in target.parameters():
        parameter.requires_grad_(False)
    return target


def follow(target: nn.Module, online: nn.Module, tau: float) -> None:
    """Move ``target``'s weights a share ``tau`` of the way to ``online``'s (Polyak averaging)."""
    with torch.no_grad():
        for target_parameter, online_parameter in zip(target.parameters(), online.parameters()):
            target_parameter.lerp_(online_parameter, tau)
