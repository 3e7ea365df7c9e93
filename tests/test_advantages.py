"""GAE and V-trace on a rollout of two envs whose rows arrive interleaved, with a termination,
a truncation and the rollout's end inside it, computed by hand."""
import numpy as np
import pytest

from a3c.lib.advantages import backward_sum, continues, gae, next_values, sequence_order, vtrace

# arrival order: env 0 and env 1 of worker 0 take turns
WORKERS = np.array([0, 0, 0, 0, 0, 0])
ENVS = np.array([0, 1, 0, 1, 0, 1])
ENDS = np.array([False, False, True, True, False, False])  # env 0 terminated at its 2nd step, env 1 truncated
DONES = np.array([False, False, True, False, False, False])
REWARDS = np.array([1.0, 0.0, 0.0, 2.0, 1.0, 0.0], dtype=np.float32)
# what the actors sent: V(final obs) at the truncation, V(next state) at the end (9: never read)
SENT = np.array([9.0, 9.0, 9.0, 5.0, 3.0, 4.0], dtype=np.float32)
GAMMA, LAM = 0.9, 0.8


def ordered():
    order = sequence_order(WORKERS, ENVS)
    continuing = continues(ENDS[order], WORKERS[order], ENVS[order])
    values = np.array([0.5, 0.2, 0.1, 1.0, 2.0, 3.0], dtype=np.float32)  # the learner's, in sequence order
    following = next_values(values, SENT[order], DONES[order], continuing)
    return order, continuing, values, following


def test_rows_are_grouped_by_env_in_arrival_order_and_chain_only_within_an_episode():
    order, continuing, _, following = ordered()
    assert order.tolist() == [0, 2, 4, 1, 3, 5]
    assert continuing.tolist() == [True, False, False, True, False, False]
    # next row's value; 0 after the termination; the sent values at the truncation and the end
    assert following.tolist() == pytest.approx([0.2, 0.0, 3.0, 2.0, 5.0, 4.0])


def test_gae_by_hand():
    order, continuing, values, following = ordered()
    advantages = gae(REWARDS[order], values, following, continuing, GAMMA, LAM)
    # TD errors: 1+.9*.2-.5=.68, -.2, 1+.9*3-.1=3.6 | .9*2-1=.8, 2+.9*5-2=4.5, .9*4-3=.6
    assert advantages.tolist() == pytest.approx([0.68 + 0.72 * -0.2, -0.2, 3.6, 0.8 + 0.72 * 4.5, 4.5, 0.6])


def test_vtrace_by_hand_and_equal_to_gae_returns_on_policy():
    order, continuing, values, following = ordered()
    ratios = np.array([2.0, 0.5, 1.0, 1.0, 0.25, 3.0], dtype=np.float32)
    targets = vtrace(REWARDS[order], values, following, continuing, ratios, GAMMA, LAM)
    # weighted TD errors: .68, -.2*.5, 3.6 | .8, 4.5*.25, .6; traces .8 (ratio 2 cut to 1) and .8
    expected = [0.5 + 0.68 + 0.9 * 0.8 * -0.1, 0.2 - 0.1, 0.1 + 3.6,
                1.0 + 0.8 + 0.9 * 0.8 * 1.125, 2.0 + 1.125, 3.0 + 0.6]
    assert targets.tolist() == pytest.approx(expected)
    on_policy = vtrace(REWARDS[order], values, following, continuing, np.ones(6, np.float32), GAMMA, LAM)
    returns = gae(REWARDS[order], values, following, continuing, GAMMA, LAM) + values
    assert on_policy == pytest.approx(returns)


def test_backward_sum_restarts_where_the_decay_is_zero():
    assert backward_sum(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, 0.5])).tolist() == [2.0, 2.0, 3.0]
