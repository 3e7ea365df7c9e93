"""Loss terms' signs and values on a hand-made batch."""
import math

import pytest
import torch

from a3c.algos.a3c.loss import a2c_loss, entropy_loss, policy_loss, value_loss
from a3c.lib.distributions import CATEGORICAL


def test_value_loss_is_mean_squared_error():
    assert float(value_loss(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 0.0]))) == pytest.approx(5.0)


def test_policy_loss_is_minus_advantage_weighted_log_prob():
    # Uniform over 2 actions: log p = log 0.5 for both; advantages 2 and -1.
    taken = CATEGORICAL.log_prob(torch.zeros(2, 2), torch.tensor([0, 1]))
    loss = policy_loss(taken, torch.tensor([2.0, -1.0]))
    assert float(loss) == pytest.approx(-(2 * math.log(0.5) - math.log(0.5)) / 2)


def test_positive_advantage_gradient_raises_taken_action_probability():
    logits = torch.zeros(1, 3, requires_grad=True)
    loss = policy_loss(CATEGORICAL.log_prob(logits, torch.tensor([2])), torch.tensor([1.0]))
    loss.backward()
    assert logits.grad[0, 2] < 0 < logits.grad[0, 0]  # a descent step raises logit 2


def test_entropy_loss_is_minus_beta_times_entropy():
    uniform = CATEGORICAL.entropy(torch.zeros(4, 3))
    assert float(entropy_loss(uniform, 0.01)) == pytest.approx(-0.01 * math.log(3))
    peaked = CATEGORICAL.entropy(torch.tensor([[10.0, 0.0, 0.0]]))
    assert float(entropy_loss(peaked, 0.01)) > float(entropy_loss(uniform, 0.01))


def test_a2c_loss_sums_terms_and_detaches_advantage():
    logits = torch.zeros(2, 2, requires_grad=True)
    values = torch.tensor([1.0, 2.0], requires_grad=True)
    terms = a2c_loss(logits, values, torch.tensor([0, 1]), torch.tensor([3.0, 0.0]), 0.01)
    assert terms.advantages.tolist() == [2.0, -2.0]
    assert not terms.advantages.requires_grad
    # policy: -(2 log .5 - 2 log .5)/2 = 0; value: (4 + 4)/2 = 4; entropy: -0.01 log 2.
    assert terms.policy.item() == pytest.approx(0.0, abs=1e-7)
    assert terms.value.item() == pytest.approx(4.0)
    assert terms.entropy.item() == pytest.approx(-0.01 * math.log(2))
    assert terms.total.item() == pytest.approx(4.0 - 0.01 * math.log(2))
    terms.total.backward()
    # d value_loss / d V = (V - ref) -> [-2, 2]; the policy term sends nothing into V.
    assert values.grad.tolist() == pytest.approx([-2.0, 2.0])


def test_value_weight_scales_only_the_value_term_of_the_total():
    logits = torch.zeros(2, 2)
    values, reference = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.0])
    plain = a2c_loss(logits, values, torch.tensor([0, 1]), reference, 0.01)
    halved = a2c_loss(logits, values, torch.tensor([0, 1]), reference, 0.01, value_weight=0.5)
    assert halved.value.item() == pytest.approx(4.0)  # reported unweighted
    assert halved.total.item() == pytest.approx(plain.total.item() - 2.0)


def test_policy_entropy_is_in_nats_and_independent_of_the_entropy_weight():
    uniform = a2c_loss(torch.zeros(3, 6), torch.zeros(3), torch.tensor([0, 1, 2]), torch.zeros(3), 0.0)
    assert uniform.policy_entropy.item() == pytest.approx(math.log(6))
    # p = (0.5, 0.5, 0): entropy ln 2
    two_way = torch.tensor([[0.0, 0.0, -1e4]])
    terms = a2c_loss(two_way, torch.zeros(1), torch.tensor([0]), torch.zeros(1), 0.05)
    assert terms.policy_entropy.item() == pytest.approx(math.log(2))
    assert not terms.policy_entropy.requires_grad


def test_normalized_advantages_are_standardised_over_the_batch_by_hand():
    logits = torch.zeros(4, 2, requires_grad=True)  # uniform: every taken log-probability is ln 1/2
    values = torch.zeros(4, requires_grad=True)
    reference = torch.tensor([1.0, 2.0, 3.0, 6.0])
    actions = torch.tensor([0, 1, 0, 1])
    terms = a2c_loss(logits, values, actions, reference, entropy_beta=0.0, normalize_advantages=True)
    deviation = math.sqrt((4 + 1 + 0 + 9) / 3)  # mean 3, unbiased deviation
    expected = torch.tensor([-2.0, -1.0, 0.0, 3.0]) / deviation
    torch.testing.assert_close(terms.advantages, expected)
    # the advantages sum to zero, so the policy term of a uniform policy is zero; its gradient
    # on row i's logits is -A_i / 4 * (onehot(a_i) - 1/2)
    assert terms.policy.item() == pytest.approx(0.0, abs=1e-6)
    terms.policy.backward()
    onehot = torch.nn.functional.one_hot(actions, 2).float()
    torch.testing.assert_close(logits.grad, -(expected / 4).unsqueeze(1) * (onehot - 0.5))
    torch.testing.assert_close(terms.value, torch.tensor((1 + 4 + 9 + 36) / 4))  # the critic's unchanged
    raw = a2c_loss(logits.detach(), values, actions, reference, entropy_beta=0.0)
    torch.testing.assert_close(raw.policy, torch.tensor(-(1 + 2 + 3 + 6) / 4 * math.log(0.5)))


# Two rows, two actions. Row 0: uniform logits, action 0 (pi 0.5), acted on when mu was 0.25.
# Row 1: logits (0, ln 3), action 1 (pi 0.75), acted on when mu was 0.9. Values 0, so the
# advantages are the references, 2 and -1.
IS_LOGITS = torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)]])
IS_ACTIONS = torch.tensor([0, 1])
IS_REFERENCE = torch.tensor([2.0, -1.0])
IS_BEHAVIOUR = torch.log(torch.tensor([0.25, 0.9]))


def test_with_every_ratio_one_the_weighted_loss_is_todays():
    logits = torch.randn(5, 4)
    actions = torch.tensor([0, 3, 1, 1, 2])
    values, reference = torch.randn(5), torch.randn(5)
    acting = torch.log_softmax(logits, 1).gather(1, actions.unsqueeze(1)).squeeze(1)
    plain = a2c_loss(logits, values, actions, reference, 0.01)
    weighted = a2c_loss(logits, values, actions, reference, 0.01, behaviour_log_probs=acting, rho_bar=1.0)
    torch.testing.assert_close(weighted.importance_weights, torch.ones(5))
    torch.testing.assert_close(weighted.total, plain.total)
    torch.testing.assert_close(weighted.policy, plain.policy)


@pytest.mark.parametrize("rho_bar, weights", [
    (1.0, [1.0, 0.75 / 0.9]),  # row 0's ratio 2 is cut to 1; row 1's 0.833 is kept
    (2.5, [2.0, 0.75 / 0.9]),  # nothing cut
    (0.5, [0.5, 0.5]),  # both cut
])
def test_a_row_from_an_older_policy_weighs_min_rho_bar_and_pi_over_mu(rho_bar, weights):
    logits = IS_LOGITS.clone().requires_grad_()
    terms = a2c_loss(logits, torch.zeros(2), IS_ACTIONS, IS_REFERENCE, 0.0,
                     behaviour_log_probs=IS_BEHAVIOUR, rho_bar=rho_bar)
    torch.testing.assert_close(terms.importance_weights, torch.tensor(weights))
    expected = -(weights[0] * 2.0 * math.log(0.5) + weights[1] * -1.0 * math.log(0.75)) / 2
    assert terms.policy.item() == pytest.approx(expected)
    assert terms.advantages.tolist() == [2.0, -1.0]  # the weights scale the term, not the advantages
    terms.policy.backward()
    # d/dlogits of -w A log pi(a) / N = -w A (onehot(a) - pi) / N: the weights carry no gradient
    pi = torch.softmax(IS_LOGITS, 1)
    onehot = torch.nn.functional.one_hot(IS_ACTIONS, 2).float()
    expected_grad = -(torch.tensor(weights) * IS_REFERENCE / 2).unsqueeze(1) * (onehot - pi)
    torch.testing.assert_close(logits.grad, expected_grad)


def test_the_importance_weights_leave_value_and_entropy_terms_alone():
    plain = a2c_loss(IS_LOGITS, torch.zeros(2), IS_ACTIONS, IS_REFERENCE, 0.01)
    weighted = a2c_loss(IS_LOGITS, torch.zeros(2), IS_ACTIONS, IS_REFERENCE, 0.01,
                        behaviour_log_probs=IS_BEHAVIOUR, rho_bar=1.0)
    torch.testing.assert_close(weighted.value, plain.value)
    torch.testing.assert_close(weighted.entropy, plain.entropy)
    assert weighted.policy.item() != pytest.approx(plain.policy.item())
