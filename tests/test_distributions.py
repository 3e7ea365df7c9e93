"""The policy distributions against values worked out by hand, and Box actions end to end:
drawn actions in the rows, clipped ones in the env, a Gaussian head in the net, PPO and A3C
running on Pendulum, play and compute_action within the bounds, DQN refusing them."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from a3c import ConfigError, Trainer
from a3c.algos.a3c.loss import a2c_loss
from a3c.algos.payloads import Transitions
from a3c.env_runner import VectorActor
from a3c.lib.distributions import CATEGORICAL, DiagGaussian, MultiCategorical
from a3c.lib.envs import describe_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.models import build_net
from a3c.lib.user_envs import register_env

GAUSSIAN = DiagGaussian(2, low=(-1.0, -2.0), high=(1.0, 2.0))
# means (0, 1), log-stds (0, ln 2): sigma 1 and 2
HEAD = torch.tensor([[0.0, 1.0, 0.0, math.log(2.0)]])


def test_gaussian_log_probability_by_hand():
    # N(0.5; 0, 1): -0.125 - 0.5 ln 2pi; N(-1; 1, 2): z = -1, -0.5 - ln 2 - 0.5 ln 2pi
    expected = (-0.125 - 0.5 * math.log(2 * math.pi)) + (-0.5 - math.log(2.0) - 0.5 * math.log(2 * math.pi))
    assert float(GAUSSIAN.log_prob(HEAD, torch.tensor([[0.5, -1.0]]))) == pytest.approx(expected, abs=1e-6)


def test_gaussian_entropy_by_hand_and_its_mode():
    # each dimension: ln sigma + 0.5 ln(2 pi e)
    expected = 2 * 0.5 * math.log(2 * math.pi * math.e) + math.log(2.0)
    assert float(GAUSSIAN.entropy(HEAD)) == pytest.approx(expected, abs=1e-6)
    assert GAUSSIAN.greedy(HEAD).tolist() == [[0.0, 1.0]]


def test_gaussian_samples_have_the_heads_means_and_deviations():
    torch.manual_seed(0)
    samples = GAUSSIAN.sample(HEAD.repeat(20_000, 1))
    assert samples.mean(0).tolist() == pytest.approx([0.0, 1.0], abs=0.05)
    assert samples.std(0).tolist() == pytest.approx([1.0, 2.0], abs=0.05)


def test_env_actions_are_clipped_to_the_bounds_and_discrete_ones_pass():
    clipped = GAUSSIAN.env_actions(np.array([[3.0, -5.0], [0.5, 1.5]], np.float32))
    assert clipped.tolist() == [[1.0, -2.0], [0.5, 1.5]]
    assert CATEGORICAL.env_actions(np.array([2, 0])).tolist() == [2, 0]


def test_categorical_log_probability_and_entropy_by_hand():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    assert float(CATEGORICAL.log_prob(logits, torch.tensor([1]))) == pytest.approx(math.log(0.25))
    assert float(CATEGORICAL.entropy(logits)) == pytest.approx(1.5 * math.log(2))


def test_the_a2c_loss_of_a_gaussian_policy_by_hand():
    head = HEAD.clone().requires_grad_(True)
    actions = torch.tensor([[0.5, -1.0]])
    terms = a2c_loss(head, torch.tensor([1.0]), actions, torch.tensor([3.0]), 0.01, distribution=GAUSSIAN)
    log_prob = float(GAUSSIAN.log_prob(HEAD, actions))
    entropy = float(GAUSSIAN.entropy(HEAD))
    assert float(terms.policy.detach()) == pytest.approx(-2.0 * log_prob)  # advantage 3 - 1
    assert float(terms.entropy.detach()) == pytest.approx(-0.01 * entropy)
    terms.total.backward()
    # the policy term pulls the first mean towards its action 0.5: d/dmu of -2 log N = -2 (a - mu) / sigma^2
    assert float(head.grad[0, 0]) == pytest.approx(-2.0 * 0.5)


def test_the_mlp_for_box_actions_puts_its_log_stds_after_the_means():
    info = describe_env("Pendulum-v1")
    assert info.continuous and info.action_shape == (1,) and (info.action_low, info.action_high) == ((-2.0,), (2.0,))
    net = build_net(info)
    head, values = net(torch.zeros(5, 3))
    assert head.shape == (5, 2) and values.shape == (5,)
    assert torch.all(head[:, 1] == 0.0)  # log-std starts at 0: sigma 1
    assert isinstance(net.distribution, DiagGaussian) and net.distribution.high == (2.0,)


class ActionRecordingEnv(gym.Env):
    """A Box action space of [-1, 1]; it keeps every action the env was given."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.received: list[float] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.received.append(float(np.asarray(action).reshape(-1)[0]))
        return np.zeros(2, np.float32), 0.0, False, len(self.received) % 5 == 0, {}


def test_rows_keep_the_drawn_actions_while_the_env_gets_them_clipped():
    register_env("recording-box", lambda config: ActionRecordingEnv())
    net = build_net(describe_env("recording-box"))
    with torch.no_grad():
        net.log_std.fill_(math.log(3.0))  # wide enough that many draws leave [-1, 1]
    torch.manual_seed(0)
    actor = VectorActor("recording-box", 1, 1, 0.99, net, lambda: 0, seed=0, send_log_probs=True)
    rows = [actor.step().batch for _ in range(40)]
    drawn = np.concatenate([batch.actions for batch in rows if batch is not None])
    received = actor.envs.envs[0].unwrapped.received
    assert drawn.dtype == np.float32 and drawn.shape[1:] == (1,)
    assert np.abs(drawn).max() > 1.0  # some draws fell outside the bounds ...
    assert np.allclose(received, np.clip(drawn[:, 0], -1.0, 1.0))  # ... and only the env saw them clipped


def test_a_row_of_a_many_dimensional_action_counts_as_one_step_and_a_joint_row_as_one_per_agent():
    """Frames count agent steps, not an action's parts: 5 rows of HalfCheetah's 6-dimensional
    actions are 5 steps (not 30), 4 joint rows of 3 agents are 12."""
    def batch(actions, rewards):
        return TransitionBatch(np.zeros((len(actions), 2), np.float32), actions, rewards,
                               np.zeros(len(actions), bool), np.ones(len(actions), np.int64))

    assert Transitions(0, batch(np.zeros((5, 6), np.float32), np.zeros(5, np.float32))).transitions == 5
    assert Transitions(0, batch(np.zeros((5, 2), np.int64), np.zeros(5, np.float32))).transitions == 5
    assert Transitions(0, batch(np.zeros((4, 3), np.int64), np.zeros((4, 3), np.float32))).transitions == 12


@pytest.mark.timeout(120)
@pytest.mark.parametrize("algo", ["ppo", "a3c"])
def test_box_actions_and_running_statistics_train_save_and_act(tmp_path, algo):
    """Box actions through save, restore and compute_action; the learner keeps the net's
    observation statistics (a3c.lib.normalize) and the checkpoint carries them into the policy."""
    # serial: the subject is the algorithm (test_mujoco_envs_run_with_the_box_preset crosses processes)
    with Trainer(env="Pendulum-v1", algo=algo, normalize_observations=True, scale_rewards=True,
                 logdir=str(tmp_path), processes=2, envs_per_process=4, backend="serial") as trainer:
        result = trainer.train(frames=3000)
        assert result["frames"] >= 3000 and result["policy_version"] > 0
        normalizer = trainer.net.normalizer
        # Pendulum observes (cos, sin, angular velocity): the cosines and sines stay within [-1, 1]
        assert float(normalizer.count) >= 1000 and 0.0 < float(normalizer.var[:2].max()) <= 1.0
        path = trainer.save()
        mean = normalizer.mean.clone()
    restored = Trainer.restore(path)
    assert torch.equal(restored.net.normalizer.mean, mean)
    head, _ = restored.net(torch.zeros(1, 3))
    assert torch.allclose(head[:, :1], restored.net.policy(restored.net.normalizer(torch.zeros(1, 3))))
    actions = restored.compute_actions(np.zeros((50, 3), np.float32))
    assert actions.shape == (50, 1) and np.abs(actions).max() <= 2.0
    assert restored.compute_action(np.zeros(3, np.float32), greedy=True).shape == (1,)


def test_an_algorithm_for_discrete_actions_refuses_a_box(tmp_path):
    with pytest.raises(ConfigError, match="--algo dqn takes Discrete actions and Pendulum-v1's are Box; --algo a3c, ppo, mappo, sac"):
        Trainer(env="Pendulum-v1", algo="dqn", logdir=str(tmp_path))


def test_a_first_log_std_is_refused_where_actions_are_discrete(tmp_path):
    with pytest.raises(ConfigError, match="--log-std-init is for Box actions; CartPole-v1's are not"):
        Trainer(env="CartPole-v1", algo="ppo", log_std_init=-1.0, logdir=str(tmp_path))


@pytest.mark.timeout(120)
def test_mujoco_envs_run_with_the_box_preset(tmp_path):
    pytest.importorskip("mujoco", reason="gymnasium's MuJoCo envs: pip install -e '.[mujoco]'")
    hopper = describe_env("Hopper-v5")
    assert hopper.continuous and hopper.action_shape == (3,) and hopper.observation_shape == (11,)
    # the preset's 10 passes of 32 minibatches over so short a rollout would be 2,500 steps
    with Trainer(env="HalfCheetah-v5", algo="ppo", preset="box", processes=1, envs_per_process=2,
                 rollout_length=64, epochs=1, minibatches=2, logdir=str(tmp_path)) as trainer:
        result = trainer.train(frames=2000)
    assert result["frames"] >= 2000 and result["policy_version"] > 0


def test_multi_discrete_log_probability_and_entropy_are_sums_over_its_dimensions():
    multi = MultiCategorical((2, 3))
    # dimension 0: probabilities (0.5, 0.5); dimension 1: (0.5, 0.25, 0.25)
    head = torch.log(torch.tensor([[0.5, 0.5, 0.5, 0.25, 0.25]]))
    assert float(multi.log_prob(head, torch.tensor([[1, 2]]))) == pytest.approx(math.log(0.5) + math.log(0.25))
    assert float(multi.entropy(head)) == pytest.approx(math.log(2) + 1.5 * math.log(2))
    assert multi.greedy(torch.tensor([[0.0, 9.0, 0.0, 0.0, 9.0]])).tolist() == [[1, 2]]
    actions, log_probs = multi.uniform(torch.zeros(3000, 5))
    assert float(log_probs[0]) == pytest.approx(-math.log(6)) and actions[:, 1].max() == 2


@pytest.mark.timeout(120)
def test_multi_discrete_actions_train_and_act(tmp_path):
    info = describe_env("tests.toy_envs:MultiDiscrete-v0")
    assert (info.action_nvec, info.n_actions, info.action_shape) == ((2, 3), 5, (2,))
    with Trainer(env="tests.toy_envs:MultiDiscrete-v0", algo="ppo", logdir=str(tmp_path), processes=2,
                 envs_per_process=2) as trainer:
        assert trainer.train(frames=600)["policy_version"] > 0
        actions = trainer.compute_actions(np.zeros((40, 1), np.float32))
    assert actions.shape == (40, 2) and set(actions[:, 1].tolist()) <= {0, 1, 2}
