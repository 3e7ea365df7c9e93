"""Invalid actions masked out (an observation's ``action_mask``, RLlib's convention): a masked
softmax's probabilities, log-probabilities and entropy by hand, random actions among the valid
ones only, QMIX's and MADDPG's targets among the valid actions, and every algorithm with a
discrete policy learning an env that raises on any invalid action."""
import math
import tempfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from torch import nn

from a3c import Trainer
from a3c.algos import get_algorithm
from a3c.algos.dqn.exploration import epsilon_greedy
from a3c.algos.maddpg.loss import actor_loss, straight_through_gumbel, target_actions
from a3c.algos.qmix.loss import qmix_targets
from a3c.config import make_config
from a3c.lib.action_masks import MASKED, ActionMasked
from a3c.lib.distributions import CATEGORICAL, MultiCategorical
from a3c.lib.envs import describe_env
from a3c.lib.observations import first_valid
from a3c.lib.recurrent import is_recurrent, unroll
from a3c.preflight import check_user_env
from tests.toy_envs import MaskedChoiceEnv, MaskedChoiceMethodEnv

MASKED_ENV = "tests.toy_envs:MaskedChoice-v0"
METHOD_ENV = "tests.toy_envs:MaskedChoiceMethod-v0"
"""The same env saying its valid actions by SB3-contrib's ``action_masks()``."""


class Fixed(nn.Module):
    """A net whose policy head is ``logits`` for every row, its value 0."""

    def __init__(self, logits: list[float]):
        super().__init__()
        self.logits = torch.tensor([logits])

    def forward(self, observations):
        return self.logits.expand(len(observations), -1), torch.zeros(len(observations))


def test_a_masked_softmax_gives_the_valid_actions_all_the_probability_by_hand():
    net = ActionMasked(Fixed([1.0, 2.0, 3.0, 4.0]), columns=(2, 4))
    rows = torch.tensor([[9.0, 9.0, 1.0, 0.0, 1.0, 0.0]])  # two values, then the mask: actions 0 and 2
    head, _ = net(rows)
    p0, p2 = math.e / (math.e + math.e ** 3), math.e ** 3 / (math.e + math.e ** 3)
    assert torch.allclose(torch.softmax(head, -1), torch.tensor([[p0, 0.0, p2, 0.0]]), atol=1e-7)
    log_probs = CATEGORICAL.log_prob(head.expand(2, -1), torch.tensor([0, 2]))
    assert torch.allclose(log_probs, torch.tensor([math.log(p0), math.log(p2)]), atol=1e-6)
    entropy = CATEGORICAL.entropy(head)
    assert torch.isfinite(entropy).all()
    assert entropy.item() == pytest.approx(-(p0 * math.log(p0) + p2 * math.log(p2)), abs=1e-6)  # 0.3642
    assert head[0, 1].item() == MASKED and head[0, 3].item() == MASKED


def test_a_q_network_takes_its_greedy_value_among_the_valid_actions():
    net = ActionMasked(Fixed([5.0, 1.0, 3.0]), columns=(0, 3), q_values=True)
    q_values, greedy = net(torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]]))
    assert greedy.tolist() == [3.0, 5.0] and q_values[0, 0].item() == MASKED


def test_random_actions_are_drawn_among_the_valid_ones_at_their_probability():
    head = torch.tensor([[0.0, MASKED, 0.0, MASKED], [MASKED, MASKED, MASKED, 0.0]]).repeat(500, 1)
    actions, log_probs = CATEGORICAL.uniform(head)
    first, second = actions[0::2], actions[1::2]
    assert set(first.tolist()) == {0, 2} and set(second.tolist()) == {3}
    assert 0.4 < (first == 0).float().mean() < 0.6  # 500 fair draws of two actions
    assert torch.allclose(log_probs[0::2], torch.full((500,), -math.log(2))) and (log_probs[1::2] == 0).all()
    explored = epsilon_greedy(head, torch.ones(len(head)))  # every row explores
    assert set(explored[0::2].tolist()) == {0, 2} and set(explored[1::2].tolist()) == {3}
    parts = MultiCategorical((2, 2))
    _, part_log_probs = parts.uniform(torch.tensor([[0.0, MASKED, 0.0, 0.0]]))
    assert part_log_probs.item() == pytest.approx(-math.log(2))  # 1 way for the first part, 2 for the second


def test_the_mask_is_found_in_the_flattened_row_and_checked():
    info = describe_env(MASKED_ENV)
    assert info.action_mask == (0, 4)  # gymnasium flattens a Dict in sorted key order: action_mask first
    assert describe_env(METHOD_ENV).action_mask == (0, 4)  # action_masks() put into the observation
    # stacked, the mask part holds each frame's, oldest first: the net reads the current one's
    assert describe_env(MASKED_ENV, frame_stack=3).action_mask == (8, 4)
    assert describe_env(METHOD_ENV, frame_stack=2).action_mask == (4, 4)
    config = make_config(name="m", env=MASKED_ENV, algo="dqn")
    net = get_algorithm("dqn").build_net(info, vars(config))
    assert isinstance(net, ActionMasked) and net.head_is_q_values and net.head is net.net.head  # attributes read through


@pytest.mark.parametrize("memory", [{"lstm": True, "lstm_cell_size": 8}, {"model": {"use_attention": True}}])
def test_a_recurrent_learners_rerun_masks_as_the_workers_step_did(memory):
    """The recurrent learner reruns the body, the memory and the heads apart (lib/recurrent.py's
    unroll), not the masked net's forward: its heads must be masked all the same."""
    info = describe_env(MASKED_ENV)
    torch.manual_seed(0)
    net = get_algorithm("ppo").build_net(info, vars(make_config(name="m", env=MASKED_ENV, algo="ppo", **memory)))
    assert isinstance(net, ActionMasked) and is_recurrent(net)
    observations = torch.rand(4, 8).round()  # masks and one-hot targets of 0s and 1s
    observations[:, 0] = 1.0  # each row allows action 0 at least
    head, _ = unroll(net, observations, net.initial_state(4), np.array([True, False, False, False]), np.array([4]))
    state, expected = net.initial_state(1), []
    with torch.no_grad():
        for row in observations:
            step_head, _, state = net(row[None], state)
            expected.append(step_head[0])
    torch.testing.assert_close(head, torch.stack(expected))
    assert ((head <= MASKED) == (observations[:, :4] < 0.5)).all()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("algo, env, settings", [
    ("a3c", MASKED_ENV, {}), ("ppo", MASKED_ENV, {}), ("dqn", MASKED_ENV, {}), ("ppo", METHOD_ENV, {}),
    # the LSTM's 256 cells learn it in 3k frames, at 5-40 s: the rerun's mask has a unit test above
    pytest.param("ppo", MASKED_ENV, {"lstm": True}, marks=pytest.mark.slow),
    ("dqn", MASKED_ENV, {"frame_stack": 2})])
def test_a_masked_env_is_learned_without_an_invalid_action(algo, env, settings):
    # the env raises on an invalid action: one would end the run with the worker's crash; random
    # play among the valid actions earns about 4.7 of 10, the target each step 10
    with Trainer(env=env, algo=algo, backend="serial", processes=1, envs_per_process=8, max_frames=40_000,
                 logdir=tempfile.mkdtemp(), name="m", stop_reward=8.0, seed=1, **settings) as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result.get("message")
        assert isinstance(trainer.net, ActionMasked)


@pytest.mark.parametrize("env", [MASKED_ENV, METHOD_ENV])
def test_the_observation_check_steps_with_valid_actions_only(env):
    import gymnasium as gym

    from a3c.lib.observation_check import check_observations

    for seed in range(10):  # the env raises on an invalid action; the space's own draws hit one by seed 1
        assert check_observations(gym.make(env), seed, steps=20) is None


@pytest.mark.parametrize("env_class", [MaskedChoiceEnv, MaskedChoiceMethodEnv])
def test_gymnasiums_checker_steps_a_users_masked_env_with_the_actions_it_allows(env_class):
    # register_env's envs go through gymnasium's checker, which draws from the action space alone
    # (before a reset whose mask it cannot know): this env, allowing its target alone, raises
    plain, ours = env_class(others_allowed=0.0), env_class(others_allowed=0.0)
    for env in (plain, ours):
        env.action_space.seed(1)  # the checker's first draw comes from the space's own generator: a refused one
    with pytest.raises(RuntimeError, match="invalid action"):
        check_env(plain, skip_render_check=True)
    check_user_env(make_config(name="m", env=MASKED_ENV), ours)
    assert first_valid(gym.spaces.Discrete(4), [0, 0, 1, 1], 1) == 2
    assert first_valid(gym.spaces.Discrete(4), [0, 1, 1, 0], 1) == 1
    assert first_valid(gym.spaces.MultiDiscrete([2, 3]), [1, 0, 0, 0, 1], np.array([1, 0])).tolist() == [0, 2]


MASKED_AGENTS = "tests.parallel_envs.masked_choice"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("algo", ["ppo", "mappo", "qmix", "maddpg"])
def test_several_agents_learn_their_masked_choices_without_an_invalid_action(algo):
    # each agent's Dict is flattened into its row (a mappo row leads with both agents'); the mask
    # is found from the row's end, so play's rows without the global state read it too
    with Trainer(env=MASKED_AGENTS, algo=algo, backend="serial", processes=1, envs_per_process=4,
                 max_frames=30_000, logdir=tempfile.mkdtemp(), name="m", stop_reward=16.0, seed=1) as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result.get("message")  # random valid play: about 9.3 of 20
        actions = trainer.compute_actions({"a": {"observation": np.eye(4, dtype=np.float32)[2],
                                                 "action_mask": np.array([1, 0, 1, 0], np.float32)}}, greedy=True)
        assert actions == {"a": 2}


class JointQ:
    """QMIX's nets as its targets read them: fixed Q-values per agent, and a Q_tot that spells
    out the joint action it is given (10 a_0 + a_1)."""

    def __init__(self, q_values: list[list[float]]):
        self.q_values = torch.tensor([q_values])

    def joint_q(self, observations):
        return self.q_values.expand(len(observations), -1, -1)

    def q_total(self, observations, actions):
        return (10 * actions[:, 0] + actions[:, 1]).float()


def test_qmixs_target_takes_each_agents_best_valid_next_action_by_hand():
    nets = JointQ([[5.0, 1.0, 2.0], [0.0, 9.0, 3.0]])
    rewards, dones, next_rows = torch.tensor([[1.0, 0.5]]), torch.tensor([False]), torch.zeros(1, 2, 4)
    valid = torch.tensor([[[False, True, True], [True, False, True]]])
    # masked: agent 0 takes 2 (Q 2 over 1), agent 1 takes 2 (3 over 0); y = 1.5 + 0.5 * (10 * 2 + 2)
    assert float(qmix_targets(nets, nets, rewards, dones, next_rows, 0.5, valid)) == pytest.approx(12.5)
    # unmasked: the greedy actions 0 and 1; y = 1.5 + 0.5 * 1
    assert float(qmix_targets(nets, nets, rewards, dones, next_rows, 0.5)) == pytest.approx(2.0)


def test_maddpgs_nets_act_and_target_among_the_valid_actions_and_the_logit_penalty_skips_masked_ones():
    env_info = describe_env(MASKED_AGENTS)
    net = get_algorithm("maddpg").build_net(env_info, {})
    assert isinstance(net, ActionMasked)
    joint = torch.zeros(64, 2, env_info.observation_shape[0])
    offset, size = env_info.action_mask
    masks = (torch.rand(64, 2, size, generator=torch.Generator().manual_seed(0)) < 0.5).float()
    masks[..., 3] = 1.0  # one valid action at least
    joint[..., offset:offset + size] = masks
    chosen = target_actions(net, joint).argmax(dim=-1)  # the target actors' a', one-hot
    assert (masks.gather(2, chosen.unsqueeze(2)) == 1).all()
    logits, _ = net(joint)
    assert ((logits <= MASKED) == (masks == 0)).all()
    own = straight_through_gumbel(logits)
    assert (masks.gather(2, own.argmax(dim=-1, keepdim=True)) == 1).all()
    # the penalty counts a masked logit as 0: 1e-3 * mean(0, 4, 1, 0) - (1 + 3)
    by_hand = actor_loss(torch.tensor([[[MASKED, 2.0], [1.0, MASKED]]]), torch.tensor([[1.0, 3.0]]))
    assert float(by_hand) == pytest.approx(1e-3 * 1.25 - 4.0)
