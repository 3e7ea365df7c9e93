"""The losses that SAC, TD3, MADDPG and QMIX wrote inside their learners, now small pure
functions in each algorithm's loss.py, checked on values worked out by hand."""
import math

import pytest
import torch

from a3c.algos.maddpg.loss import actor_loss as maddpg_actor_loss
from a3c.algos.maddpg.loss import critic_loss as maddpg_critic_loss
from a3c.algos.qmix.loss import td_loss
from a3c.algos.sac.loss import actor_loss, temperature_loss, twin_critic_loss
from a3c.algos.td3.loss import deterministic_actor_loss


def test_twin_critics_each_regress_to_the_shared_targets_and_their_errors_add():
    q_values = torch.tensor([[1.0, 2.0], [3.0, 5.0]])  # two rows, two critics
    targets = torch.tensor([2.0, 4.0])
    # critic 1: ((1-2)^2 + (3-4)^2) / 2 = 1; critic 2: ((2-2)^2 + (5-4)^2) / 2 = 0.5
    assert twin_critic_loss(q_values, targets).item() == pytest.approx(1.5)


def test_sacs_actor_pays_the_temperature_times_log_density_less_the_smaller_critic():
    log_probs = torch.tensor([-1.0, 0.5])
    q_values = torch.tensor([[4.0, 3.0], [1.0, 2.0]])  # the smaller: 3 and 1
    # (0.2 x -1 - 3 + 0.2 x 0.5 - 1) / 2 = -2.05
    assert actor_loss(log_probs, q_values, temperature=0.2).item() == pytest.approx(-2.05)


def test_the_temperature_rises_while_the_entropy_is_below_its_target():
    log_temperature = torch.tensor(math.log(0.5), requires_grad=True)
    log_probs = torch.tensor([1.0, 2.0], requires_grad=True)  # entropy about -1.5: below the target -1
    loss = temperature_loss(log_temperature, log_probs, target_entropy=-1.0)
    assert loss.item() == pytest.approx(-math.log(0.5) * 0.5)  # -log(0.5) x mean(1 - 1, 2 - 1)
    loss.backward()
    assert log_temperature.grad.item() == pytest.approx(-0.5)  # a descent step raises log alpha
    assert log_probs.grad is None  # the log-densities are constants here


def test_td3s_actor_climbs_the_first_critic_alone():
    q_values = torch.tensor([[2.0, -10.0], [4.0, 10.0]])
    assert deterministic_actor_loss(q_values).item() == pytest.approx(-3.0)


def test_maddpg_sums_each_agents_critic_error_and_actor_value():
    q_values = torch.tensor([[1.0, 0.0], [3.0, 0.0]])
    targets = torch.tensor([[0.0, 1.0], [3.0, 2.0]])
    # agent 0: (1 + 0) / 2; agent 1: (1 + 4) / 2
    assert maddpg_critic_loss(q_values, targets).item() == pytest.approx(3.0)
    logits = torch.tensor([[[2.0, 0.0]], [[0.0, 0.0]]])  # mean square 1
    own_q = torch.tensor([[1.0, 5.0], [3.0, 7.0]])  # agents' means 2 and 6
    assert maddpg_actor_loss(logits, own_q, logit_penalty=0.1).item() == pytest.approx(0.1 - 8.0)


def test_qmix_regresses_q_total_to_its_targets():
    assert td_loss(torch.tensor([1.0, 4.0]), torch.tensor([3.0, 4.0])).item() == pytest.approx(2.0)
