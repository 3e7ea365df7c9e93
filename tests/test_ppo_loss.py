"""PPO's clipped surrogate and value clip by hand: ratios inside and outside the clip, with
advantages of both signs, and which rows pass a gradient."""
import math

import pytest
import torch

from a3c.algos.ppo.loss import PPOLossSettings, clipped_surrogate, ppo_loss, value_loss


def test_clipped_surrogate_takes_the_pessimistic_term_for_each_sign_of_advantage():
    ratios = torch.tensor([1.5, 1.5, 0.5, 0.5, 1.1])
    advantages = torch.tensor([2.0, -2.0, 2.0, -2.0, 1.0])
    behaviour = torch.zeros(5)
    log_probs = torch.log(ratios).requires_grad_()
    loss, seen = clipped_surrogate(log_probs, behaviour, advantages, clip=0.2)
    # min(r A, clip(r) A): 1.2*2 (clipped) | 1.5*-2 | 0.5*2 | 0.8*-2 (clipped) | 1.1*1
    assert float(loss.detach()) == pytest.approx(-(2.4 - 3.0 + 1.0 - 1.6 + 1.1) / 5)
    assert seen.tolist() == pytest.approx(ratios.tolist())
    loss.backward()
    # a clipped row passes no gradient; the others d(-r A / 5)/d log r = -r A / 5
    assert log_probs.grad.tolist() == pytest.approx([0.0, 0.6, -0.2, 0.0, -0.22])


def test_value_clip_takes_the_larger_error_of_the_moved_old_value():
    values, old, targets = torch.tensor([1.0, 3.0]), torch.tensor([2.0, 2.0]), torch.tensor([0.0, 5.0])
    # old values moved at most 0.5: 1.5 and 2.5, errors 2.25 and 6.25 against 1 and 4
    assert float(value_loss(values, old, targets, clip=0.5)) == pytest.approx((2.25 + 6.25) / 2)
    assert float(value_loss(values, old, targets, clip=None)) == pytest.approx((1.0 + 4.0) / 2)


def test_ppo_loss_adds_the_weighted_terms_and_reports_kl_and_clip_fraction():
    logits = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    actions = torch.tensor([0, 1])
    behaviour = torch.log(torch.tensor([0.25, 0.5]))  # ratios 2 and 1
    settings = PPOLossSettings(clip=0.2, value_clip=False, entropy_beta=0.1, value_weight=0.5)
    terms = ppo_loss(logits, torch.tensor([1.0, 0.0]), actions, behaviour, torch.tensor([3.0, 1.0]),
                     torch.zeros(2), torch.tensor([0.0, 2.0]), settings)
    # advantages standardised to 1/sqrt(2) and -1/sqrt(2): min(2a, 1.2a) = 1.2a, then min(a, a) for -a
    a = 1 / math.sqrt(2)
    assert float(terms.policy) == pytest.approx(-(1.2 * a - a) / 2, rel=1e-5)
    assert float(terms.value) == pytest.approx((1.0 + 4.0) / 2)
    assert terms.policy_entropy == pytest.approx(math.log(2))
    assert float(terms.total) == pytest.approx(float(terms.policy) + 0.5 * 2.5 - 0.1 * math.log(2), rel=1e-5)
    assert terms.approx_kl == pytest.approx((1.0 - math.log(2)) / 2)
    assert terms.clip_fraction == 0.5
