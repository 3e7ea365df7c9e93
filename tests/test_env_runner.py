"""The actor every child runs: n-step transitions, finished episodes, and on each row the
policy version of the weights that chose its action."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a3c.algos import get_algorithm
from a3c.env_runner import VectorActor
from a3c.lib.envs import describe_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import build_net
from a3c.transport.worker import make_vector_actor
from tests.helpers import toy_config

COUNTING = "tests.toy_envs:Counting-v0"


def counting_actor(bf16: bool = False, policy_version: Callable[[], int] = lambda: 0) -> VectorActor:
    torch.manual_seed(0)
    net = build_net(describe_env(COUNTING))
    return VectorActor(COUNTING, num_envs=2, reward_steps=3, gamma=0.5, net=net,
                       policy_version=policy_version, seed=0, bf16=bf16)


def test_each_row_carries_the_version_read_before_the_pass_that_chose_its_action():
    current = [7]
    actor = counting_actor(policy_version=lambda: current[0])
    try:
        early = [actor.step()]  # step 0 acts on the logits computed at start, read as 7
        current[0] = 9  # the learner steps while the child is busy elsewhere
        early.append(actor.step())  # step 1 acts on logits computed after step 0: still 7
        first, second, last = (actor.step() for _ in range(3))  # steps 2-4 act with 9
    finally:
        actor.close()
    assert all(step.batch is None and step.episodes == [] for step in early)  # < 3 rewards
    # rewards 1, 2, 3, ... discounted by 0.5: 1 + 0.5 * 2 + 0.25 * 3 from step 0
    np.testing.assert_allclose(first.batch.rewards, [2.75, 2.75])
    assert first.batch.policy_versions.tolist() == [7, 7]
    np.testing.assert_allclose(second.batch.rewards, [4.5, 4.5])
    assert second.batch.policy_versions.tolist() == [7, 7]
    # the 5-step episodes end: steps 2-4 flush, without bootstrap, all chosen by version 9
    np.testing.assert_allclose(sorted(last.batch.rewards), [5.0, 5.0, 6.25, 6.25, 6.5, 6.5])
    assert last.batch.dones.all() and last.batch.policy_versions.tolist() == [9] * 6
    assert [(episode.reward, episode.length) for episode in last.episodes] == [(15.0, 5)] * 2


def test_bootstrap_values_come_from_the_acting_pass():
    actor = counting_actor()
    try:
        for _ in range(2):
            actor.step()
        step = actor.step()
    finally:
        actor.close()
    # the step-0 transitions end on the observation after 3 steps, which is [3.0] in both envs
    with torch.no_grad():
        _, expected_value = actor.net(torch.tensor([[3.0]]))
    assert not step.batch.dones.any() and step.batch.last_states is None
    np.testing.assert_allclose(step.batch.last_values, [float(expected_value)] * 2, rtol=1e-6)


def test_bf16_actor_runs_its_acting_pass_in_bfloat16_and_hands_out_float32_values():
    actor = counting_actor(bf16=True)
    layer_outputs = []
    actor.net.value[0].register_forward_hook(lambda _, __, output: layer_outputs.append(output.dtype))
    try:
        steps = [actor.step() for _ in range(3)]
    finally:
        actor.close()
    assert layer_outputs and set(layer_outputs) == {torch.bfloat16}
    assert steps[-1].batch.last_values.dtype == np.float32


def test_an_a3c_child_sends_lambda_returns_from_its_own_values():
    # --return-lambda reaches the child's accumulator: the step-0 rows after 3 steps hold,
    # with lambda 0.5 and gamma 0.5, r0 + .5 * (.5 * V(s1) + .5 * (r1 + .5 * (.5 * V(s2)
    # + .5 * (r2 + .5 * V(s3))))) less .5**3 * V(s3), V from the acting net itself
    config = toy_config(envs_per_process=2, return_lambda=0.5)
    torch.manual_seed(0)
    net = build_net(describe_env(COUNTING))
    actor = make_vector_actor(get_algorithm("a3c"), config, net, lambda: 0, seed=0, worker_id=0)
    try:
        steps = [actor.step() for _ in range(3)]
    finally:
        actor.close()
    with torch.no_grad():
        _, values = net(torch.tensor([[1.0], [2.0], [3.0]]))
    v1, v2, v3 = values.tolist()
    last = 3 + .5 * v3
    middle = 2 + .5 * (.5 * v2 + .5 * last)
    expected = 1 + .5 * (.5 * v1 + .5 * middle) - .5 ** 3 * v3
    np.testing.assert_allclose(steps[-1].batch.rewards, [expected] * 2, rtol=1e-5)
    assert abs(expected - 2.75) > 0.01  # not the n-step return's reward sum


def test_with_life_loss_a_lost_life_ends_rows_while_the_score_is_the_whole_game():
    """A game of 3 lives, one lost every second step (``tests.toy_envs:Lives-v0``): the rows of
    the steps that lose a life end without bootstrap, the others bootstrap, and the one
    episode is the whole game, 1 + 2 + ... + 6 over 6 steps."""
    game = "tests.toy_envs:Lives-v0"
    torch.manual_seed(0)
    actor = VectorActor(game, num_envs=1, reward_steps=1, gamma=0.5, net=build_net(describe_env(game)),
                        policy_version=lambda: 0, seed=0, life_loss=True, send_log_probs=True)
    try:
        steps = [actor.step() for _ in range(6)]
    finally:
        actor.close()
    rows = TransitionBatch.concatenate([step.batch for step in steps])
    assert rows.states[:, 0].tolist() == [0, 1, 2, 3, 4, 5]
    assert rows.dones.tolist() == [False, True, False, True, False, True]
    assert [(episode.reward, episode.length) for episode in steps[-1].episodes] == [(21.0, 6)]
    assert not any(step.episodes for step in steps[:-1])
