"""Exploration as configuration: the epsilon schedule's values at given frames, a worker's
epsilon-greedy following it, --random-frames acting uniformly (with the uniform policy's
log-probabilities) before the policy takes over, and both in TensorBoard."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from a3c import Trainer
from a3c.algos.dqn.acting import ScheduledEpsilonGreedy
from a3c.env_runner import VectorActor
from a3c.lib.distributions import CATEGORICAL, DiagGaussian
from a3c.schedules import epsilon_at, parse_epsilon_schedule
from tests.helpers import only_run_dir, scalars


def test_the_epsilon_falls_linearly_then_holds():
    schedule = parse_epsilon_schedule("1.0,0.02,10000")
    assert schedule == (1.0, 0.02, 10_000)
    assert [epsilon_at(schedule, frames) for frames in (0, 5000, 10_000, 20_000)] == pytest.approx(
        [1.0, 0.51, 0.02, 0.02])
    assert parse_epsilon_schedule("") is None
    for bad in ("1.0,0.02", "1.5,0,100", "1,0,-5", "1,0,2.5"):
        with pytest.raises(ValueError):
            parse_epsilon_schedule(bad)


def test_a_workers_epsilon_greedy_follows_the_schedule_over_its_calls():
    torch.manual_seed(0)
    chooser = ScheduledEpsilonGreedy((1.0, 0.0, 1000), frames_per_row=0.025)  # 100 frames a call of 4,000 rows
    q_values = torch.tensor([[0.0, 5.0, 0.0, 0.0]]).repeat(4000, 1)
    first = chooser(q_values)
    assert float((first == 1).float().mean()) == pytest.approx(0.25, abs=0.03)  # all random: 1 in 4 greedy
    for _ in range(9):
        chooser(q_values)
    assert bool((chooser(q_values) == 1).all())  # after 1,000 frames: greedy


def test_uniform_actions_and_their_log_probabilities_by_hand():
    actions, log_probs = CATEGORICAL.uniform(torch.zeros(5000, 4))
    assert log_probs.tolist() == pytest.approx([-math.log(4)] * 5000)
    assert torch.bincount(actions, minlength=4).min() > 1100  # about 1,250 each
    box = DiagGaussian(2, low=(-1.0, -2.0), high=(1.0, 2.0))
    actions, log_probs = box.uniform(torch.zeros(5000, 4))
    assert float(log_probs[0]) == pytest.approx(-math.log(8.0))  # a density of 1 / (2 x 4)
    assert actions[:, 0].abs().max() <= 1.0 and actions[:, 1].abs().max() <= 2.0
    assert actions[:, 1].abs().max() > 1.9


class AlwaysOne(nn.Module):
    """A policy that all but always picks action 1."""

    def __init__(self):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, observations):
        return torch.tensor([[0.0, 50.0]]).repeat(len(observations), 1), torch.zeros(len(observations))


def test_random_steps_act_uniformly_before_the_policy_takes_over():
    torch.manual_seed(0)
    actor = VectorActor("tests.toy_envs:Counting-v0", 64, 1, 0.99, AlwaysOne(), lambda: 0, seed=0,
                        send_log_probs=True, random_steps=2)
    random_rows = [actor.step().batch for _ in range(2)]
    policy_rows = [actor.step().batch for _ in range(2)]
    random_actions = torch.as_tensor([a for batch in random_rows for a in batch.actions])
    assert 0.3 < float(random_actions.float().mean()) < 0.7
    assert all(batch.log_probs.tolist() == pytest.approx([-math.log(2)] * len(batch)) for batch in random_rows)
    assert all((batch.actions == 1).all() for batch in policy_rows)


@pytest.mark.timeout(120)
def test_the_schedule_and_the_random_frames_show_in_tensorboard(tmp_path):
    with Trainer(env="CartPole-v1", algo="dqn", epsilon_schedule="1.0,0.05,2000", random_frames=500,
                 report_interval=0.2, logdir=str(tmp_path), stop_reward=1e9) as trainer:
        trainer.train(frames=3000)
    events = scalars(only_run_dir(tmp_path))
    epsilons = events.Scalars("train/epsilon")
    random = events.Scalars("train/random_actions")
    assert (epsilons[0].step, epsilons[0].value) == (0, 1.0)  # logged where the run starts
    assert epsilons[-1].step >= 3000 and random[-1].step >= 3000  # and once more where it ends
    assert all(event.value == pytest.approx(max(0.05, 1.0 - 0.95 * event.step / 2000)) for event in epsilons)
    assert all(event.value == float(event.step < 500) for event in random)
