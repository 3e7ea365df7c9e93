"""Invalid actions masked out: an env whose observation is a Dict with an ``action_mask`` key
(RLlib's convention: 1 where the action may be taken) gets its invalid actions' logits, or
Q-values, set to the lowest float32 before any action is chosen.

The mask is part of the observation row, so it travels with the row: the learner's rerun of
the net on the same rows masks the same actions, and its log-probabilities and entropy are the
masked distribution's (a masked action has probability 0 and adds 0 to the entropy). Random
actions (epsilon-greedy, ``--random-frames``) are drawn among the valid ones.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

MASKED = torch.finfo(torch.float32).min
"""What a masked action's logit or Q-value becomes: finite, so that 0 * log-probability is 0."""


class ActionMasked(nn.Module):
    """``net`` with its policy head masked by the mask in each observation row: a logit (or a
    Q-value, ``q_values``, whose greedy value is then taken among the valid actions) becomes
    ``MASKED`` where the row's mask is 0. Attributes the net has (its distribution, say) read
    through."""

    def __init__(self, net: nn.Module, columns: tuple[int, int], q_values: bool = False):
        super().__init__()
        self.net = net
        self.columns = columns
        self.head_is_q_values = q_values

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("net"), name)

    def forward(self, observations: torch.Tensor, *rest: torch.Tensor) -> tuple[torch.Tensor, ...]:
        head, second, *others = self.net(observations, *rest)
        head = self.mask(head, observations)
        if self.head_is_q_values:
            second = head.max(dim=-1).values
        return (head, second, *others)

    def mask(self, head: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """``head`` (float32) with each row's masked actions at ``MASKED``; ``observations`` are
        the rows it was computed from (a recurrent learner's rerun masks its heads this way)."""
        return head.float().masked_fill(~valid_actions(observations, self.columns), MASKED)


def valid_actions(observations: torch.Tensor, columns: tuple[int, int]) -> torch.Tensor:
    """Which actions each row's mask allows (True: valid), the mask at ``columns`` (offset,
    size) of the rows' last dimension: rows (N, size), or joint rows (N, agents, size)."""
    offset, size = columns
    return observations[..., offset:(offset + size) or None] > 0.5  # an offset from the row's end may end it


def masked_any(head: torch.Tensor) -> bool:
    """Whether any action of ``head`` is masked (a cheap test before the slower draw)."""
    return bool((head <= MASKED).any())


def uniform_valid(head: torch.Tensor, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A uniformly random valid action per row (``head``'s last dimension) and the log of its
    probability, 1 over the valid actions' count."""
    valid = head > MASKED
    noise = torch.rand(head.shape, generator=generator, device=head.device)
    return (noise + valid).argmax(dim=-1), -valid.sum(dim=-1).float().log()
