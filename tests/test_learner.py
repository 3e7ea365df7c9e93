"""The learner's step: it applies finite updates, refuses non-finite ones, and measures lag."""
import dataclasses

import numpy as np
import pytest
import torch

from a3c.learner import Learner, NonFiniteLoss
from lib.models import MlpA2C
from tests.test_batch import make_batch


def make_learner():
    torch.manual_seed(0)
    return Learner(MlpA2C(1, 2), lr=1e-2, adam_eps=1e-3, gamma=0.9, entropy_beta=0.01,
                   clip_grad=1.0, device="cpu")


def test_step_changes_the_weights_and_reports_policy_lag():
    learner = make_learner()
    learner.steps_done = 10
    before = [parameter.clone() for parameter in learner.net.parameters()]
    batch = dataclasses.replace(make_batch([1, 2, 3, 4]), policy_versions=np.array([10, 9, 8, 7]))
    stats = learner.step(batch)
    assert learner.steps_done == 11
    assert stats.policy_lag == pytest.approx(1.5)  # 10 - mean(10, 9, 8, 7)
    assert any(not torch.equal(old, new) for old, new in zip(before, learner.net.parameters()))


@pytest.mark.parametrize("bad_reward", [float("nan"), float("inf")])
def test_non_finite_loss_is_refused_before_the_weights_change(bad_reward):
    learner = make_learner()
    before = [parameter.clone() for parameter in learner.net.parameters()]
    with pytest.raises(NonFiniteLoss, match="non-finite training signal at step 0"):
        learner.step(make_batch([1, 2], rewards=[1.0, bad_reward]))
    assert learner.steps_done == 0
    assert all(torch.equal(old, new) for old, new in zip(before, learner.net.parameters()))
    assert not learner.optimizer.state  # Adam's moments were not touched either
