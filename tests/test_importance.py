"""A3C's importance weights against policy lag: which rows carry the acting policy's
log-probabilities, and that a run's steps weigh them (the loss's values are in test_loss)."""
import numpy as np
import pytest
import torch

from a3c import Trainer
from a3c.algos import get_algorithm
from a3c.algos.a3c.gradients import batch_loss
from a3c.algos.a3c.loss import LossSettings
from a3c.config import make_config
from a3c.lib.envs import describe_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import build_net


@pytest.mark.parametrize("settings, sends", [
    ({}, True),  # data mode, rho-bar 1 by default
    ({"rho_bar": 0.0}, False),  # switched off: rows as before
    ({"mode": "grads"}, False),  # a grads-mode child trains the weights that acted
])
def test_a3c_children_send_log_probabilities_where_the_learner_weighs_them(settings, sends, tmp_path):
    config = make_config(env="CartPole-v1", logdir=str(tmp_path), **settings)
    options = get_algorithm("a3c").acting_options(config, 0)
    assert options["send_log_probs"] is sends


def test_the_learners_batch_weighs_rows_by_their_log_probabilities():
    net = build_net(describe_env("CartPole-v1"))
    states = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    batch = TransitionBatch(states=states, actions=np.array([0, 1, 0, 1]), rewards=np.ones(4, np.float32),
                            dones=np.ones(4, bool), steps=np.ones(4, np.int64),
                            log_probs=np.log(np.full(4, 0.999, np.float32)))  # acted near-greedily
    settings = LossSettings(gamma=0.9, entropy_beta=0.0, rho_bar=1.0)
    terms, stats = batch_loss(net, batch, settings, "cpu")
    with torch.no_grad():
        logits, _ = net(torch.as_tensor(states))
    pi = torch.softmax(logits, 1)[torch.arange(4), torch.as_tensor(batch.actions)].numpy()
    # a fresh net is near uniform over 2 actions: every ratio pi / 0.999 is below 1, none cut
    assert terms.importance_weights.numpy() == pytest.approx(pi / 0.999, rel=1e-5)
    assert stats.importance_weight == pytest.approx(float(np.mean(pi / 0.999)), rel=1e-5)
    assert stats.truncated_share == 0.0
    unweighted, _ = batch_loss(net, batch, LossSettings(gamma=0.9, entropy_beta=0.0), "cpu")
    assert unweighted.importance_weights is None


def test_a_run_trains_on_weighted_rows_and_reports_the_weights(tmp_path):
    with Trainer(env="CartPole-v1", logdir=str(tmp_path), stop_reward=1e9) as trainer:
        result = trainer.train(frames=20_000)
    # children act with weights a few steps old: the ratios spread around 1, some are cut
    assert 0.5 < result["importance_weight"] < 1.0
    assert 0.0 < result["truncated_share"] < 1.0


def test_held_weights_are_kept_until_the_learner_is_k_steps_past_them_then_renewed():
    from a3c.algos.a3c.acting import HeldWeightsSender

    shared, version = torch.nn.Linear(2, 1), [3]
    sent = []
    sender = HeldWeightsSender(shared, lambda: version[0], sent.append, hold_steps=4)
    first = shared.weight.detach().clone()
    with torch.no_grad():
        shared.weight.add_(1.0)  # the learner steps: the shared weights move on
    version[0] = 6  # three steps past the copy: held
    assert sender.policy_version() == 3 and torch.equal(sender.acting_net.weight, first)
    version[0] = 7  # four steps past: renewed, with the shared weights of now
    assert sender.policy_version() == 7 and torch.equal(sender.acting_net.weight, shared.weight)
    version[0] = 10
    assert sender.policy_version() == 7  # held again from the new copy
    assert sender.acting_net is not shared


def test_held_weights_raise_a_runs_policy_lag_and_grads_mode_refuses_them(tmp_path):
    with Trainer(env="CartPole-v1", logdir=str(tmp_path), stop_reward=1e9, hold_weights=21) as trainer:
        result = trainer.train(frames=20_000)
    # the copy trails the shared weights by 0-20 steps, 10 on average, on top of the queues' lag
    assert result["policy_lag"] > 8
    with pytest.raises(Exception, match="--hold-weights is for data mode"):
        make_config(env="CartPole-v1", logdir=str(tmp_path), mode="grads", hold_weights=4)
