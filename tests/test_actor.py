"""The actor every child runs: n-step transitions, finished episodes, and the policy version
of the oldest action in each batch."""
from __future__ import annotations

import numpy as np
import torch

from a3c.actor import VectorActor
from lib.envs import describe_env
from lib.models import build_net

COUNTING = "tests.toy_envs:Counting-v0"


def counting_actor(bf16: bool = False) -> VectorActor:
    torch.manual_seed(0)
    net = build_net(describe_env(COUNTING))
    return VectorActor(COUNTING, num_envs=2, reward_steps=3, gamma=0.5, net=net, seed=0, bf16=bf16)


def test_steps_give_n_step_transitions_with_the_version_that_chose_their_first_action():
    actor = counting_actor()
    try:
        early = [actor.step(acting_version=7) for _ in range(2)]  # fewer than 3 rewards pending
        first, second, last = (actor.step(acting_version=9) for _ in range(3))
    finally:
        actor.close()
    assert all(step.batch is None and step.episodes == [] for step in early)
    # rewards 1, 2, 3, ... discounted by 0.5: 1 + 0.5 * 2 + 0.25 * 3 from step 0
    np.testing.assert_allclose(first.batch.rewards, [2.75, 2.75])
    assert first.policy_version == 7  # step 0's actions were chosen by version 7
    np.testing.assert_allclose(second.batch.rewards, [4.5, 4.5])
    assert second.policy_version == 7  # step 1's too
    # the 5-step episodes end: steps 2-4 flush, without bootstrap, chosen by version 9
    np.testing.assert_allclose(sorted(last.batch.rewards), [5.0, 5.0, 6.25, 6.25, 6.5, 6.5])
    assert last.batch.dones.all() and last.policy_version == 9
    assert [(episode.reward, episode.length) for episode in last.episodes] == [(15.0, 5)] * 2


def test_bootstrap_values_come_from_the_acting_pass():
    actor = counting_actor()
    try:
        for _ in range(2):
            actor.step(acting_version=0)
        step = actor.step(acting_version=0)
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
        steps = [actor.step(acting_version=0) for _ in range(3)]
    finally:
        actor.close()
    assert layer_outputs and set(layer_outputs) == {torch.bfloat16}
    assert steps[-1].batch.last_values.dtype == np.float32
