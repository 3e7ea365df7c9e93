"""A policy locked into one action after a collapse gets back the state of its best
mean-100: when that counts as locked, what the copy holds, and the trainer's wiring."""
import math

import pytest
import torch

import a3c.lifecycle.loop
from a3c import Trainer
from a3c.algos import get_algorithm
from a3c.lib.envs import describe_env
from a3c.lifecycle.checkpoint import load_checkpoint
from a3c.lifecycle.rollback import BestState, policy_locked
from a3c.lifecycle.run import make_run_dir, share_net, start_run
from tests.helpers import scalars, toy_config

LN2 = math.log(2)


@pytest.mark.parametrize("entropy, n_actions, mean, best, worst, locked", [
    (0.0, 2, 9.3, 500.0, 20.0, True),  # CartPole locked after solving
    (0.0, 2, 9.3, 470.0, 20.0, True),  # locked before its goal, 475, was reached
    (0.0, 2, 9.3, 133.5, 20.0, False),  # the best not yet a quarter of the way up: 133.75
    (0.0, 2, 9.3, 133.5, 19.0, True),  # from a worst of 19 it is: 133.0
    (0.3, 2, 9.3, 500.0, 20.0, False),  # a collapse the policy can still climb out of
    (0.0, 2, 400.0, 500.0, 20.0, False),  # deterministic and still good
    (0.0, 2, 261.0, 500.0, 20.0, False),  # not yet half-way down from the best
    (0.0, 2, 259.0, 500.0, 20.0, True),
    (0.01 * LN2 * 1.01, 2, 9.3, 500.0, 20.0, False),  # just above the floor
    (0.01, 6, -21.0, 18.0, -20.5, True),  # Pong: 0.01 < 1% of ln 6
    (0.0, 6, 17.0, 18.0, -21.0, False),
    (0.0, 6, -21.0, -20.6, -21.0, False),  # Pong locked at the start: nothing to go back to
    (0.0003, 6, -16.78, -5.5, -21.0, True),  # the --cuda seed 1 collapse on the way up
    (0.0003, 6, -16.78, -11.3, -21.0, False),  # a quarter of the way from -21 to 18 is -11.25
    (None, 2, 9.3, 500.0, 20.0, False),  # no step in the interval
    (0.0, 2, 9.3, None, None, False),  # no full window yet
    (0.0, 2, 9.3, 20.0, 20.0, False),  # one level so far: nothing to fall from
])
def test_locked_means_climbed_then_saturated_and_fallen_half_way_from_best_to_worst(
        entropy, n_actions, mean, best, worst, locked):
    goal = 475.0 if n_actions == 2 else 18.0
    assert policy_locked(entropy, n_actions, mean, best, worst, goal) is locked


@pytest.mark.parametrize("mean, best, worst, spread, locked", [
    # issue 56's first game: climbed to about 740 from random play's level, then every game 200
    (200.0, 740.0, 190.0, 90.0, True),  # climb 550 >= max(2 x 90, 0.25 x 190)
    (200.0, 360.0, 190.0, 90.0, False),  # climb 170 < 2 x 90: within the worst window's noise
    (200.0, 390.0, 190.0, 90.0, True),  # climb 200 >= 180; 200 is below half-way (290)
    (300.0, 390.0, 190.0, 90.0, False),  # locked but not fallen half-way back: still plays
    (-21.0, -5.5, -21.0, 0.0, True),  # Pong with no goal given: climb 15.5 >= 0.25 x 21
    (-21.0, -16.0, -21.0, 0.0, False),  # climb 5.0 < 5.25: a start's noise
    (-21.0, -15.0, -21.0, 0.0, True),
    (1.0, 1.5, 1.2, 1.0, False),  # Breakout's first minutes: 0.3 < 2 x 1.0
    (1.0, 4.0, 1.2, 1.0, True),
])
def test_without_a_goal_the_climb_is_measured_in_the_worst_windows_spread_and_size(
        mean, best, worst, spread, locked):
    assert policy_locked(0.0, 18, mean, best, worst, None, spread) is locked
    assert not policy_locked(0.5, 18, mean, best, worst, None, spread)  # not saturated


def test_the_worst_windows_spread_is_kept_with_the_worst_mean():
    from a3c.lib.trackers import RewardTracker

    class Quiet:
        def add_scalar(self, *args):
            pass

    tracker = RewardTracker(Quiet(), None)
    for index in range(100):
        tracker.record(10.0 if index % 2 else 0.0, 1, index)  # mean 5, deviation 5
    assert (tracker.worst_mean_reward, tracker.worst_spread) == (5.0, 5.0)
    for _ in range(50):
        tracker.record(20.0, 1, 0)  # the mean rises: the worst and its spread stay
    assert (tracker.worst_mean_reward, tracker.worst_spread) == (5.0, 5.0)


def test_best_state_holds_the_weights_of_the_latest_rise():
    weights = torch.zeros(3)
    best = BestState()
    best.offer({"model": {"w": weights}})
    weights += 1.0  # the live tensor moves on; the copy does not
    assert torch.equal(best.state["model"]["w"], torch.zeros(3)) and not best.written
    best.offer({"model": {"w": weights}})  # a second rise at once is kept too
    assert torch.equal(best.state["model"]["w"], torch.ones(3))


def test_roll_back_puts_back_weights_and_optimizer_and_best_pt_holds_the_copy(tmp_path):
    config = toy_config(logdir=str(tmp_path))
    a3c = get_algorithm("a3c")
    shared = share_net(config, a3c, describe_env(config.env_id))
    run = start_run(config, a3c, shared, make_run_dir(config))
    parameter = next(run.learner.net.parameters())

    def adam_step(gradient: float) -> None:
        for each in run.learner.net.parameters():
            each.grad = torch.full_like(each, gradient)
        run.learner.optimizer.step()

    adam_step(1.0)
    run.counters.frames = 1_000
    run.offer_best()
    kept, kept_moment = parameter.detach().clone(), run.learner.optimizer.state[parameter]["exp_avg"].clone()
    adam_step(-5.0)  # the collapse moves weights and moments
    run.counters.frames = 5_000
    assert not torch.equal(parameter.detach(), kept)
    assert run.roll_back() == 1_000
    assert torch.equal(parameter.detach(), kept) and run.counters.rollbacks == 1
    assert torch.equal(run.learner.optimizer.state[parameter]["exp_avg"], kept_moment)
    assert run.counters.frames == 5_000  # the run's counters go on
    path = run.save_best()
    assert path.name == "best.pt" and run.save_best() is None  # written once per copy
    assert torch.equal(next(iter(load_checkpoint(path)["model"].values())), kept)
    run.writer.close()


def test_the_trainer_rolls_back_a_locked_policy_and_says_so(tmp_path, monkeypatch, capsys):
    calls = []

    def locked_once(*figures):
        calls.append(figures)
        return len(calls) == 1

    monkeypatch.setattr(a3c.lifecycle.loop, "policy_locked", locked_once)
    with Trainer(env="tests.toy_envs:Counting-v0", logdir=str(tmp_path), report_interval=0.2,
                 stop_reward=1e9, backend="serial") as trainer:  # the loop's rule, not the transport
        while len(calls) < 2:
            result = trainer.train(seconds=0.5)
    entropy, n_actions, mean, best, worst, goal, spread = calls[0]
    assert 0.0 <= entropy <= LN2 and n_actions == 2 and mean == best == worst == 15.0 and spread == 0.0
    assert goal == 1e9  # the toy env has no goal of its own: --stop-reward is the goal
    assert "weights and optimizer put back" in capsys.readouterr().err
    assert result["rollbacks"] == 1  # once: the second check found the policy well
    assert [point.value for point in scalars(next(tmp_path.iterdir())).Scalars("train/rollbacks")] == [1]


@pytest.mark.parametrize("switch", [True, False])
def test_the_switch_decides_whether_a_locked_policy_is_rolled_back(tmp_path, monkeypatch, switch):
    monkeypatch.setattr(a3c.lifecycle.loop, "policy_locked", lambda *figures: True)
    with Trainer(env="tests.toy_envs:Counting-v0", logdir=str(tmp_path), report_interval=0.2,
                 stop_reward=1e9, collapse_rollback=switch, backend="serial") as trainer:
        # first a full window of 100 episodes and a best state to go back to
        while (result := trainer.train(seconds=0.5))["episode_reward_best"] is None:
            pass
        assert trainer._run.best_state.state is not None
        result = trainer.train(seconds=1.0)  # several reports, each finding the policy "locked"
    assert (result["rollbacks"] > 0) is switch
