"""Ape-X's exploration: a fixed epsilon for each of many actors, and epsilon-greedy choice."""
from __future__ import annotations

import numpy as np
import torch

from a3c.lib.action_masks import masked_any, uniform_valid


def actor_epsilons(count: int, base: float = 0.4, alpha: float = 7.0) -> np.ndarray:
    """Ape-X's fixed exploration rates: actor i of N acts with base ** (1 + alpha * i / (N - 1)),
    from ``base`` for the first down to ``base ** (1 + alpha)`` for the last."""
    if count == 1:
        return np.array([base])
    return base ** (1.0 + alpha * np.arange(count) / (count - 1))


def epsilon_greedy(q_values: torch.Tensor, epsilons: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Per row: a uniformly random action with probability ``epsilons[row]``, else the
    greedy one."""
    greedy = q_values.argmax(dim=-1)
    explore = torch.rand(len(q_values), generator=generator, device=q_values.device) < epsilons
    if masked_any(q_values):  # among the valid actions only
        random_actions = uniform_valid(q_values, generator)[0]
    else:
        random_actions = torch.randint(q_values.shape[-1], (len(q_values),), generator=generator,
                                       device=q_values.device)
    return torch.where(explore, random_actions, greedy)
