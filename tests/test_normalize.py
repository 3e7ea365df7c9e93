"""Running statistics by hand: the parallel merge, standardised and clipped observations,
rewards scaled by the return's deviation (the learner keeping the net's statistics through a
checkpoint: tests/test_distributions.py's Pendulum runs)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c import ConfigError
from a3c.config import make_config
from a3c.lib.normalize import (
    INITIAL_COUNT,
    ObservationNormalizer,
    RewardScaler,
    merged_moments,
    observe,
)


def test_merging_two_batches_gives_the_moments_of_all_their_samples():
    first, second = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    mean, var, count = merged_moments(first.mean(), first.var(), 3, second.mean(), second.var(), 2)
    both = np.concatenate([first, second])
    assert (mean, var, count) == (pytest.approx(both.mean()), pytest.approx(both.var()), 5)
    assert mean == pytest.approx(7.2) and var == pytest.approx(50.96)  # (38.44+27.04+17.64+7.84+163.84) / 5


def test_observations_are_standardised_and_clipped():
    normalizer = ObservationNormalizer(2)
    normalizer.mean.copy_(torch.tensor([1.0, 2.0]))
    normalizer.var.copy_(torch.tensor([4.0, 9.0]))
    out = normalizer(torch.tensor([[3.0, -4.0], [100.0, 2.0]]))
    assert out.tolist() == [[pytest.approx(1.0), pytest.approx(-2.0)], [10.0, pytest.approx(0.0)]]


def test_the_first_batch_all_but_replaces_the_prior():
    normalizer = ObservationNormalizer(1)
    observe(torch.nn.Module(), np.zeros((2, 1)))  # a net without a normalizer: nothing happens
    normalizer.update(torch.tensor([[2.0], [4.0]]))
    assert float(normalizer.mean) == pytest.approx(3.0, rel=1e-4) and float(normalizer.var) == pytest.approx(1.0,
                                                                                                             rel=1e-3)
    assert float(normalizer.count) == pytest.approx(2 + INITIAL_COUNT)


def test_rewards_are_divided_by_the_deviation_of_all_discounted_returns_so_far():
    scaler = RewardScaler(num_envs=2, gamma=0.5)
    # returns 1 and 3: deviation 1
    assert scaler(np.array([1.0, 3.0]), ended=np.array([True, False])).tolist() == pytest.approx([1.0, 3.0], rel=1e-3)
    # env 0 began anew: returns 2 and 3 * 0.5 + 0 = 1.5; all four returns 1, 3, 2, 1.5 have variance 0.546875
    scaled = scaler(np.array([2.0, 0.0]), ended=np.array([False, False]))
    assert scaled.tolist() == pytest.approx([2.0 / 0.546875 ** 0.5, 0.0], rel=1e-3)


def test_normalising_frames_is_refused_and_so_is_it_in_grads_mode():
    with pytest.raises(ConfigError, match="--normalize-observations is for vector observations"):
        make_config(normalize_observations=True)
    with pytest.raises(ConfigError, match="--normalize-observations is for data mode"):
        make_config(env="Pendulum-v1", mode="grads", normalize_observations=True)
