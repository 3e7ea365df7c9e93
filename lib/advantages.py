"""Advantages and value targets over a rollout: the steps of many envs, each env's steps in
the order it took them. GAE(lambda) and V-trace are both one backward sum of per-step terms
that stops where an episode or an env's part of the rollout ends (``backward_sum``).

A row's ``continues`` says that the next row is the same episode's next step; where it is
not, the row bootstraps from the value its actor sent: V(real final observation) after a
truncation, V(next state) at the end of the env's part, 0 after a termination.
"""
from __future__ import annotations

import numpy as np
import torch


def sequence_order(*keys: np.ndarray) -> np.ndarray:
    """Row indices that put rows of equal ``keys`` (worker, env) together, each group in
    arrival order (a stable sort)."""
    return np.lexsort(tuple(reversed(keys)))


def continues(ends: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Per row (rows already in ``sequence_order``): whether the next row is its episode's
    next step, i.e. it has the same keys and this row's episode did not end here."""
    same = np.ones(len(ends), dtype=bool)
    for key in keys:
        same &= np.append(key[1:] == key[:-1], False)
    return same & ~ends


def next_values(values: np.ndarray, sent_values: np.ndarray, dones: np.ndarray,
                continuing: np.ndarray) -> np.ndarray:
    """V of each row's next state: the next row's value where the episode goes on in the
    rollout, else the value its actor sent, 0 after a termination."""
    following = np.append(values[1:], 0.0)
    return np.where(continuing, following, np.where(dones, 0.0, sent_values)).astype(np.float32)


def backward_sum(terms: np.ndarray, decays: np.ndarray) -> np.ndarray:
    """``out[t] = terms[t] + decays[t] * out[t + 1]`` from the last row back (``out`` past the
    last row is 0); a decay of 0 starts a new sum."""
    out = np.empty(len(terms), dtype=np.float32)
    running = 0.0
    for row, (term, decay) in enumerate(zip(terms[::-1].tolist(), decays[::-1].tolist())):
        running = term + decay * running
        out[len(terms) - 1 - row] = running
    return out


def gae(rewards: np.ndarray, values: np.ndarray, following: np.ndarray, continuing: np.ndarray,
        gamma: float, lam: float) -> np.ndarray:
    """GAE(lambda) advantages: TD errors ``r + gamma V(next) - V`` summed back with weight
    ``gamma * lam`` per step within each episode's run of rows. Returns are these plus V."""
    deltas = rewards + gamma * following - values
    return backward_sum(deltas, gamma * lam * continuing)


def vtrace(rewards: np.ndarray, values: np.ndarray, following: np.ndarray, continuing: np.ndarray,
           ratios: np.ndarray, gamma: float, lam: float, rho_bar: float = 1.0,
           c_bar: float = 1.0) -> np.ndarray:
    """V-trace value targets (Espeholt et al. 2018) for rows acted on by older policies:
    ``ratios`` are pi(a|s) / mu(a|s) of the learner's policy against the one that acted. Each
    TD error is weighted by ``min(rho_bar, ratio)`` and the trace by ``lam * min(c_bar,
    ratio)``; with every ratio 1 the targets are the GAE(lambda) returns."""
    rhos = np.minimum(rho_bar, ratios)
    traces = lam * np.minimum(c_bar, ratios)
    deltas = rhos * (rewards + gamma * following - values)
    return values + backward_sum(deltas, gamma * traces * continuing)


def standardized(advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``advantages`` shifted to zero mean and scaled to unit standard deviation (a batch
    of one row, whose deviation is undefined, is only centred)."""
    centred = advantages - advantages.mean()
    if advantages.numel() < 2:
        return centred
    return centred / (advantages.std() + eps)
