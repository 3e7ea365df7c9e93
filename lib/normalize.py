"""Running statistics for vector envs, as the MuJoCo baselines use them: observations
standardised by their running mean and deviation, rewards scaled by the running deviation
of the discounted return.

The observation statistics live in the net (``ObservationNormalizer``, buffers of the
shared net): the learner merges each batch it trains on into them, the workers read them
with the weights, and checkpoints, play and ``compute_action`` get them with the state dict.
The reward scale lives in each worker (``RewardScaler``): it changes only what is trained on,
never what the policy sees, so each worker keeps its own.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import torch
from torch import nn

CLIP = 10.0
"""Standardised observations and scaled rewards are clipped to [-CLIP, CLIP]."""
EPSILON = 1e-8
INITIAL_COUNT = 1e-4
"""The count the prior (mean 0, variance 1) starts with: the first batch all but replaces it."""

Moments = TypeVar("Moments", np.ndarray, torch.Tensor)


def merged_moments(mean: Moments, var: Moments, count: float, batch_mean: Moments, batch_var: Moments,
                   batch_count: float) -> tuple[Moments, Moments, float]:
    """Mean, variance and count of two sets of samples from each set's own (Chan et al.'s
    parallel formula): the same as computing them over the samples together."""
    total = count + batch_count
    delta = batch_mean - mean
    new_mean = mean + delta * (batch_count / total)
    m2 = var * count + batch_var * batch_count + delta * delta * (count * batch_count / total)
    return new_mean, m2 / total, total


class ObservationNormalizer(nn.Module):
    """Standardises observations by the running mean and variance in its buffers, clipped
    to [-CLIP, CLIP]; ``update`` merges a batch into them (the learner's job). With
    ``columns``, only those of each row's ``size`` values (the others, an image's pixels,
    pass as they are)."""

    def __init__(self, size: int, columns: Sequence[int] | None = None):
        super().__init__()
        self.size = size
        width = size if columns is None else len(columns)
        self.register_buffer("mean", torch.zeros(width))
        self.register_buffer("var", torch.ones(width))
        self.register_buffer("count", torch.tensor(INITIAL_COUNT, dtype=torch.float64))
        self.register_buffer("_column_index", None if columns is None else torch.tensor(list(columns), dtype=torch.long),
                             persistent=False)

    @torch.no_grad()
    def update(self, observations: torch.Tensor) -> None:
        batch = observations.reshape(-1, self.size).float()
        if self._column_index is not None:
            batch = batch[:, self._column_index]
        mean, var, count = merged_moments(self.mean, self.var, float(self.count), batch.mean(0),
                                          batch.var(0, unbiased=False), float(len(batch)))
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.fill_(count)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        if self._column_index is None:
            return self._standardised(observations)
        rows = observations.clone()
        rows[..., self._column_index] = self._standardised(observations[..., self._column_index])
        return rows

    def _standardised(self, values: torch.Tensor) -> torch.Tensor:
        return ((values - self.mean) / torch.sqrt(self.var + EPSILON)).clamp(-CLIP, CLIP)


def observe(net: nn.Module, states: np.ndarray | torch.Tensor) -> None:
    """Merge a batch of raw observations into ``net``'s normalizer, where it has one."""
    normalizer = getattr(net, "normalizer", None)
    if normalizer is not None:
        normalizer.update(torch.as_tensor(states, device=normalizer.mean.device))


class RewardScaler:
    """Divides each env's rewards by the running deviation of its discounted return (the
    return's running sum is reset at each episode's end), clipped to [-CLIP, CLIP]."""

    def __init__(self, num_envs: int, gamma: float):
        self.gamma = gamma
        self.returns = np.zeros(num_envs)
        self.mean, self.var, self.count = np.zeros(()), np.ones(()), INITIAL_COUNT

    def __call__(self, rewards: np.ndarray, ended: np.ndarray) -> np.ndarray:
        """The rewards to train on this step; ``ended``: the envs whose episode ends with it."""
        self.returns = self.returns * self.gamma + rewards
        self.mean, self.var, self.count = merged_moments(self.mean, self.var, self.count, self.returns.mean(),
                                                         self.returns.var(), len(self.returns))
        self.returns[ended] = 0.0
        return np.clip(rewards / np.sqrt(self.var + EPSILON), -CLIP, CLIP).astype(np.float32)
