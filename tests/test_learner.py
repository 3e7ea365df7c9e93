"""The learner's step: it applies finite updates, refuses non-finite ones, and measures lag."""
import copy
import dataclasses

import numpy as np
import pytest
import torch

from a3c.algos.a3c.acting import GradientSender
from a3c.algos.a3c.gradients import LossStats, batch_loss, flat_gradients, loss_gradients
from a3c.algos.a3c.learner import (
    A3CLearner,
    GradientSteps,
    Learner,
    gradients_by_term,
    relu_activity,
)
from a3c.algos.a3c.loss import LossSettings
from a3c.algos.optimizer import NonFiniteLoss, decayed, new_version_counter
from a3c.algos.payloads import Gradients, Transitions
from a3c.lib.models import MlpA2C
from a3c.schedules import parse_lr_schedule, scheduled
from tests.helpers import toy_config
from tests.test_batch import make_batch


def make_learner():
    torch.manual_seed(0)
    return Learner(MlpA2C(1, 2), LossSettings(gamma=0.9, entropy_beta=0.01), lr=1e-2, adam_eps=1e-3,
                   clip_grad=1.0, device="cpu")


def test_step_changes_the_weights_and_reports_policy_lag():
    learner = make_learner()
    learner.version_counter.fill_(10)
    before = [parameter.clone() for parameter in learner.net.parameters()]
    batch = dataclasses.replace(make_batch([1, 2, 3, 4]), policy_versions=np.array([10, 9, 8, 7]))
    stats = learner.step(batch)
    assert learner.policy_version == 11
    assert stats.policy_lag == pytest.approx(1.5)  # 10 - mean(10, 9, 8, 7)
    assert any(not torch.equal(old, new) for old, new in zip(before, learner.net.parameters()))


@pytest.mark.parametrize("bad_reward", [float("nan"), float("inf")])
def test_non_finite_loss_is_refused_before_the_weights_change(bad_reward):
    learner = make_learner()
    before = [parameter.clone() for parameter in learner.net.parameters()]
    with pytest.raises(NonFiniteLoss, match="non-finite training signal at step 0"):
        learner.step(make_batch([1, 2], rewards=[1.0, bad_reward]))
    assert learner.policy_version == 0
    assert all(torch.equal(old, new) for old, new in zip(before, learner.net.parameters()))
    assert not learner.optimizer.state  # Adam's moments were not touched either


class CapturingOutbox:
    """Stands in for a worker's outbox: keeps what the sender hands over."""

    def __init__(self):
        self.sent = []

    def __call__(self, item):
        self.sent.append((item.gradient.copy(), item.policy_version, item.transitions, item.loss))
        return True


def test_a_childs_gradient_equals_the_same_loss_computed_in_one_process():
    learner = make_learner()
    version = torch.tensor(3)
    config = toy_config(batch_size=4, gamma=0.9, entropy_beta=0.01)
    channel = CapturingOutbox()
    sender = GradientSender(config, learner.net, lambda: int(version), channel, torch.device("cpu"))
    batch = make_batch([1, 2, 3, 4], dones=[False, True, False, False], steps=[4, 4, 2, 4])
    assert sender.send(batch[:3]) and channel.sent == []  # not a full batch yet
    assert sender.send(batch[3:])
    ((gradient, sent_version, transitions, loss),) = channel.sent
    reference_net = copy.deepcopy(learner.net)
    expected_loss = loss_gradients(reference_net, batch, LossSettings(0.9, 0.01), device="cpu")
    assert np.allclose(gradient, flat_gradients(reference_net), atol=1e-6)
    assert (sent_version, transitions) == (3, 4)
    assert dataclasses.asdict(loss) == pytest.approx(dataclasses.asdict(expected_loss))


def test_a_step_on_k_gradients_applies_their_sum():
    learner = make_learner()
    learner.clip_grad = 1e9  # no clipping, so the applied gradient is the plain sum
    size = sum(parameter.numel() for parameter in learner.net.parameters())
    rng = np.random.default_rng(0)
    gradients = [rng.normal(size=size).astype(np.float32) for _ in range(3)]
    losses = [LossStats(1.0, 0.5, 0.4, 0.1, 0.0, 0.0, 0.0, 0.6)] * 3
    stats = learner.step_on_gradients(gradients, losses, policy_versions=[0, 0, 0])
    assert np.allclose(flat_gradients(learner.net), np.sum(gradients, axis=0), atol=1e-5)
    assert stats.grad_norm == pytest.approx(float(np.linalg.norm(np.sum(gradients, axis=0))), rel=1e-4)
    assert learner.policy_version == 1 and stats.loss_total == 1.0


def gradient_message(version, size):
    return Gradients(0, np.ones(size, np.float32), version, 8, LossStats(1.0, 0.5, 0.4, 0.1, 0, 0, 0, 0.6))


def test_gradient_steps_wait_for_grad_batch_and_drop_stale_gradients():
    learner = make_learner()
    size = sum(parameter.numel() for parameter in learner.net.parameters())
    steps = GradientSteps(learner, grad_batch=2, max_policy_lag=1)
    assert steps.consume(gradient_message(0, size)) == []
    (stats,) = steps.consume(gradient_message(0, size))
    assert learner.policy_version == 1 and stats.policy_lag == 0.0
    learner.version_counter.fill_(5)
    assert steps.consume(gradient_message(3, size)) == [] and steps.dropped == 1  # 2 steps old
    assert steps.consume(gradient_message(4, size)) == [] and steps.dropped == 1  # 1 step old: kept
    (stats,) = steps.consume(gradient_message(5, size))
    assert stats.policy_lag == pytest.approx(0.5)


def test_bf16_autocast_gives_finite_float32_gradients_close_to_float32_training():
    batch = make_batch([1, 2, 3, 4], dones=[False, True, False, False])
    plain, mixed = make_learner().net, make_learner().net
    loss_gradients(plain, batch, LossSettings(0.9, 0.01), device="cpu")
    loss = loss_gradients(mixed, batch, LossSettings(0.9, 0.01, bf16=True), device="cpu")
    assert all(parameter.grad.dtype == torch.float32 for parameter in mixed.parameters())
    expected, got = flat_gradients(plain), flat_gradients(mixed)
    assert np.isfinite(got).all() and np.isfinite(loss.loss_total)
    assert np.linalg.norm(got - expected) <= 0.05 * np.linalg.norm(expected)  # bf16 keeps ~3 digits


def test_gradients_by_term_leave_the_same_gradient_and_measure_each_term():
    batch = make_batch([1, 2, 3, 4], dones=[False, True, False, False])
    settings = LossSettings(gamma=0.9, entropy_beta=0.5, value_weight=0.25)
    one_pass, by_term = make_learner().net, make_learner().net
    loss_gradients(one_pass, batch, settings, device="cpu")
    terms, _ = batch_loss(by_term, batch, settings, device="cpu")
    norms = gradients_by_term(by_term, terms, settings.value_weight)
    assert np.allclose(flat_gradients(by_term), flat_gradients(one_pass), atol=1e-6)
    # MlpA2C's heads share nothing: the value term's gradient lies in the value head alone,
    # the policy and entropy terms' in the policy head alone
    value_head = [p.grad.norm() for name, p in by_term.named_parameters() if name.startswith("value")]
    assert norms["value"] == pytest.approx(float(torch.stack(value_head).norm()), rel=1e-5)
    for name in ("policy", "entropy"):
        alone = make_learner().net
        terms, _ = batch_loss(alone, batch, settings, device="cpu")
        getattr(terms, name).backward()
        assert norms[name] == pytest.approx(float(np.linalg.norm(flat_gradients(alone))), rel=1e-5)


def test_a_diagnosed_step_applies_the_same_update_and_reports_it():
    batch = make_batch([1, 2, 3, 4], dones=[False, True, False, False])
    plain, diagnosed = make_learner(), make_learner()
    plain.diagnose_every, diagnosed.diagnose_every = 10**9, 1
    plain.version_counter.fill_(1)
    diagnosed.version_counter.fill_(1)
    before = torch.cat([p.detach().reshape(-1).clone() for p in diagnosed.net.parameters()])
    assert plain.step(batch).diagnostics is None
    stats = diagnosed.step(batch)
    after = torch.cat([p.detach().reshape(-1) for p in diagnosed.net.parameters()])
    for ours, theirs in zip(diagnosed.net.parameters(), plain.net.parameters()):
        assert torch.allclose(ours, theirs, atol=1e-7)
    report = stats.diagnostics
    assert report["update_to_weights"] == pytest.approx(float((after - before).norm() / before.norm()))
    assert report["clip_share_value"] == pytest.approx(report["grad_norm_value"] / diagnosed.clip_grad)
    assert report["grad_norm_policy"] > 0 and report["grad_norm_value"] > 0


def test_relu_activity_counts_units_that_fire_on_some_row():
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]))
        net[0].bias.zero_()
    with relu_activity(net) as alive:
        net(torch.tensor([[1.0, -1.0], [-1.0, -1.0]]))  # unit 0 fires on row 0; 1 never; 2 on row 1
    assert alive == {"1": pytest.approx(2 / 3)}
    net(torch.ones(1, 2))  # the hooks are gone once the block ends
    assert alive == {"1": pytest.approx(2 / 3)}


def test_learning_rate_rises_linearly_over_the_warm_up_then_holds():
    learner = make_learner()  # lr 1e-2
    learner.lr_warmup = 4
    applied = []
    for _ in range(6):
        learner.step(make_batch([1, 2, 3, 4]))
        applied.append(learner.optimizer.param_groups[0]["lr"])
    assert applied == pytest.approx([0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01])
    learner.version_counter.fill_(2)  # resumed mid-warm-up: the ramp goes on from the restored step
    assert learner.current_lr() == pytest.approx(0.0075)


def test_the_learning_rate_decays_linearly_with_frames_to_a_tenth_and_holds():
    assert decayed(1e-3, 0, 1000) == pytest.approx(1e-3)
    assert decayed(1e-3, 500, 1000) == pytest.approx(5.5e-4)  # 1e-3 x (1 - 0.9 x 0.5)
    assert decayed(1e-3, 1000, 1000) == pytest.approx(1e-4)
    assert decayed(1e-3, 5000, 1000) == pytest.approx(1e-4)
    assert decayed(1e-3, 5000, 0) == 1e-3


def test_the_lr_schedule_is_linear_between_its_points_and_held_outside_them():
    points = parse_lr_schedule("1000:2, 3e3:1, 3e3:0.5")
    assert points == ((1000, 2.0), (3000, 1.0), (3000, 0.5))
    assert scheduled(points, 0) == 2.0  # before the first point: its factor
    assert scheduled(points, 1500) == pytest.approx(1.75)  # a quarter of the way from 2 to 1
    assert scheduled(points, 2999) == pytest.approx(1.0005)
    assert scheduled(points, 3000) == 0.5  # a repeated frame count is a step: the later point
    assert scheduled(points, 10**7) == 0.5
    assert scheduled(parse_lr_schedule(" "), 5) == 1.0


@pytest.mark.parametrize("text", ["2", "0:2,x:1", "0.5:2", "-1:2", "0:0", "0:inf", "5:1,4:1"])
def test_a_malformed_lr_schedule_is_refused(text):
    with pytest.raises(ValueError):
        parse_lr_schedule(text)


def test_a3c_weighs_the_entropy_bonus_by_the_trainers_frame_count():
    net = MlpA2C(1, 2)
    batch = make_batch([1, 2, 3, 4])
    entropy_terms = []
    for frame, decay_frames in ((500, 0), (500, 1000), (3000, 1000)):
        config = toy_config(batch_size=4, entropy_beta=0.1, entropy_decay_frames=decay_frames)
        learner = A3CLearner(config, copy.deepcopy(net), new_version_counter())
        [stats] = learner.consume(Transitions(0, batch), frame)
        entropy_terms.append(stats.loss_entropy)
    constant, halfway, past = entropy_terms
    assert constant < 0  # the bonus lowers the loss
    assert halfway == pytest.approx(constant * 0.55, rel=1e-5)  # 1 - 0.9 x 500 / 1000
    assert past == pytest.approx(constant * 0.1, rel=1e-5)  # held at a tenth


def test_a3c_steps_at_the_rate_the_trainers_frame_count_sets_and_its_warmup_scales_it():
    config = toy_config(batch_size=4, lr=1e-2, lr_warmup=10, lr_decay_frames=1000)
    learner = A3CLearner(config, MlpA2C(1, 2), new_version_counter())
    learner.consume(Transitions(0, make_batch([1, 2, 3, 4])), 496)
    expected = 1e-2 * (1 - 0.9 * 496 / 1000)
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(expected * 1 / 10)  # the first step of 10
    learner.learner.version_counter.fill_(10)
    assert learner.learner.current_lr() == pytest.approx(expected)


def test_a3c_steps_at_the_rate_times_the_schedules_factor_at_the_trainers_frame_count():
    config = toy_config(batch_size=4, lr=1e-2, lr_decay_frames=1000, lr_schedule="0:2,400:2,600:1")
    learner = A3CLearner(config, MlpA2C(1, 2), new_version_counter())
    applied = []
    for frame in (100, 500, 800):
        learner.consume(Transitions(0, make_batch([1, 2, 3, 4])), frame)
        applied.append(learner.optimizer.param_groups[0]["lr"])
    decay = [1 - 0.9 * frame / 1000 for frame in (100, 500, 800)]
    assert applied == pytest.approx([1e-2 * decay[0] * 2, 1e-2 * decay[1] * 1.5, 1e-2 * decay[2]])


def test_a3c_with_two_passes_steps_twice_on_each_full_batch_and_keeps_the_rest():
    torch.manual_seed(0)
    net = MlpA2C(1, 2)
    config = toy_config(batch_size=4, lr=1e-2, passes=2)
    learner = A3CLearner(config, copy.deepcopy(net), new_version_counter())
    by_hand = A3CLearner(dataclasses.replace(config, passes=1), copy.deepcopy(net), new_version_counter())
    batch = dataclasses.replace(make_batch([1, 2, 3, 4, 5, 6]), policy_versions=np.zeros(6, np.int64))
    first, second = learner.consume(Transitions(0, batch), 24)
    assert learner.policy_version == 2  # two steps on the first 4 transitions; 2 wait for more
    assert (first.policy_lag, second.policy_lag) == (0, 1)  # the same rows, one step older
    four = make_batch([1, 2, 3, 4])
    by_hand.learner.step(four)
    by_hand.learner.step(four)
    for mine, theirs in zip(learner.net.parameters(), by_hand.net.parameters()):
        torch.testing.assert_close(mine, theirs)
    assert learner.consume(Transitions(0, make_batch([7])), 28) == []
    assert len(learner.consume(Transitions(0, make_batch([8])), 32)) == 2


def test_a3c_passes_end_at_passes_frames_and_one_step_per_batch_follows():
    config = toy_config(batch_size=4, lr=1e-2, passes=3, passes_frames=100)
    learner = A3CLearner(config, MlpA2C(1, 2), new_version_counter())
    assert len(learner.consume(Transitions(0, make_batch([1, 2, 3, 4])), 96)) == 3  # before: 3 steps
    assert len(learner.consume(Transitions(0, make_batch([5, 6, 7, 8])), 100)) == 1  # from 100 on: 1
    assert learner.policy_version == 4


def test_a3c_passes_start_at_passes_from():
    config = toy_config(batch_size=4, lr=1e-2, passes=2, passes_from=50, passes_frames=100)
    learner = A3CLearner(config, MlpA2C(1, 2), new_version_counter())
    steps = [len(learner.consume(Transitions(0, make_batch([i, i, i, i])), frames))
             for i, frames in enumerate((40, 49, 50, 99, 100))]
    assert steps == [1, 1, 2, 2, 1]
