"""PPO (--algo ppo): the rows its children send, a rollout put back in sequence order, the
passes over it, its settings, and CartPole end to end through Trainer, a checkpoint, play and
compute_action. The GAE, V-trace and loss arithmetic is in test_advantages and test_ppo_loss."""
import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from a3c import ConfigError, Trainer
from a3c.algos.payloads import Transitions
from a3c.algos.ppo.learner import PPOLearner, in_sequence_order
from a3c.config import make_config
from a3c.env_runner import VectorActor
from a3c.lib.envs import describe_env
from a3c.lib.experience import NStepAccumulator, TransitionBatch
from a3c.lib.models import build_net
from a3c.options import CPU_BF16
from a3c.play import play
from tests.helpers import scalars


def test_rows_carry_their_log_prob_env_and_whether_their_episode_ended():
    accumulator = NStepAccumulator(2, 1, 0.9)
    first, _ = accumulator.step(
        np.array([[0.0], [10.0]]), np.array([0, 1]), np.array([1.0, 2.0]), np.array([False, False]),
        np.array([False, True]), np.array([[1.0], [0.0]]), {"final_obs": [None, np.array([11.0])]},
        next_values=np.array([5.0, 6.0]), final_values=np.array([0.0, 7.0]), log_probs=np.array([-0.1, -0.2]))
    assert first.env_ids.tolist() == [0, 1] and first.ends.tolist() == [False, True]
    assert first.log_probs.tolist() == pytest.approx([-0.1, -0.2])
    # env 1 was truncated: it bootstraps from V(final observation)
    assert first.last_values.tolist() == [5.0, 7.0] and first.dones.tolist() == [False, False]
    second, _ = accumulator.step(
        np.array([[1.0], [0.0]]), np.array([1, 0]), np.array([3.0, 4.0]), np.array([True, False]),
        np.array([False, False]), np.array([[20.0], [1.0]]), {}, next_values=np.array([8.0, 9.0]),
        log_probs=np.array([-0.3, -0.4]))
    assert second.ends.tolist() == [True, False] and second.dones.tolist() == [True, False]
    without, _ = NStepAccumulator(1, 1, 0.9).step(
        np.zeros((1, 1)), np.array([0]), np.array([1.0]), np.array([False]), np.array([False]),
        np.ones((1, 1)), {}, next_values=np.array([1.0]))
    assert without.log_probs is None and without.env_ids is None and without.ends is None


def test_the_actor_sends_the_log_prob_of_each_action_under_the_weights_that_chose_it():
    net = build_net(describe_env("CartPole-v1"))
    actor = VectorActor("CartPole-v1", 4, 1, 0.99, net, lambda: 0, seed=0, send_log_probs=True)
    batch = actor.step().batch
    actor.close()
    with torch.no_grad():
        logits, _ = net(torch.as_tensor(batch.states))
    expected = torch.log_softmax(logits, dim=1)[torch.arange(4), torch.as_tensor(batch.actions)]
    assert batch.log_probs == pytest.approx(expected.numpy(), abs=1e-6)
    assert batch.env_ids.tolist() == [0, 1, 2, 3]


def _rows(worker_rows: list[tuple[int, list[int], list[bool]]]) -> list[tuple[int, TransitionBatch]]:
    """Messages of (worker, env ids, ends), each row's reward its arrival index."""
    parts, arrived = [], 0
    for worker, envs, ends in worker_rows:
        count = len(envs)
        parts.append((worker, TransitionBatch(
            states=np.zeros((count, 4), np.float32), actions=np.zeros(count, np.int64),
            rewards=np.arange(arrived, arrived + count, dtype=np.float32), dones=np.array(ends),
            steps=np.ones(count, np.int64), last_values=np.zeros(count, np.float32),
            policy_versions=np.zeros(count, np.int64), log_probs=np.full(count, np.log(0.5), np.float32),
            env_ids=np.array(envs), ends=np.array(ends))))
        arrived += count
    return parts


def test_a_rollout_is_put_back_in_each_workers_envs_order_and_chains_only_within_episodes():
    # worker 1 and worker 0 interleave; worker 0's env 1 ends its episode at its first row
    parts = _rows([(1, [0, 1], [False, False]), (0, [0, 1], [False, True]), (1, [0, 1], [False, False]),
                   (0, [0, 1], [False, False])])
    batch, continuing = in_sequence_order(parts)
    # (worker 0, env 0): rows 2, 6; (0, 1): 3, 7; (1, 0): 0, 4; (1, 1): 1, 5
    assert batch.rewards.tolist() == [2, 6, 3, 7, 0, 4, 1, 5]
    assert continuing.tolist() == [True, False, False, False, True, False, True, False]


def _learner(agents: int = 1, **settings) -> PPOLearner:
    config = make_config(env="CartPole-v1", algo="ppo", processes=2, envs_per_process=2, **settings)
    return PPOLearner(config, build_net(describe_env("CartPole-v1")), torch.zeros((), dtype=torch.int64), agents)


def test_a_full_rollout_is_trained_on_in_epochs_of_minibatches_using_every_row_once_a_pass():
    learner = _learner(rollout_length=3, epochs=3, minibatches=4)  # 12 rows
    seen = []
    step = learner._step
    learner._step = lambda rollout, rows: seen.append(rows.tolist()) or step(rollout, rows)
    messages = _rows([(worker, [0, 1], [False, False]) for _ in range(3) for worker in (0, 1)])
    results = [learner.consume(Transitions(worker, batch), 0) for worker, batch in messages]
    assert all(result == [] for result in results[:-1]) and len(results[-1]) == 3 * 4
    assert learner.policy_version == 12
    for epoch in range(3):
        rows = sorted(row for minibatch in seen[4 * epoch:4 * epoch + 4] for row in minibatch)
        assert rows == list(range(12)) and all(len(minibatch) == 3 for minibatch in seen[4 * epoch:4 * epoch + 4])
    stats = results[-1][0]
    assert stats.policy_lag == 0.0 and stats.vtrace_rho is not None and stats.grad_norm > 0


def test_with_several_agents_a_rollout_waits_for_every_agents_steps():
    learner = _learner(agents=2, rollout_length=3, epochs=1, minibatches=2)  # 2 x 12 rows
    messages = _rows([(worker, [0, 1, 2, 3], [False] * 4) for _ in range(3) for worker in (0, 1)])
    results = [learner.consume(Transitions(worker, batch), 0) for worker, batch in messages]
    assert all(result == [] for result in results[:-1]) and len(results[-1]) == 2


def test_a_rollout_joins_the_observation_statistics_before_its_passes():
    # The first minibatch's ratios are the next acting policy's (the net under the statistics
    # with the rollout merged) against the one that acted (under the prior: mean 0,
    # variance 1), so the clip bounds the whole change the workers will see, the shift of
    # the statistics included (docs/spaces.md has both orders measured).
    config = make_config(env="CartPole-v1", algo="ppo", processes=1, envs_per_process=2, rollout_length=4,
                         epochs=1, minibatches=1, normalize_observations=True, bf16=False)
    net = build_net(describe_env("CartPole-v1"), normalize_observations=True)
    learner = PPOLearner(config, net, torch.zeros((), dtype=torch.int64))
    states = torch.as_tensor(np.random.default_rng(0).normal(5.0, 2.0, (8, 4)), dtype=torch.float32)
    actions = torch.as_tensor([0, 1] * 4)
    merged = copy.deepcopy(net)
    merged.normalizer.update(states)
    with torch.no_grad():
        acted = learner.distribution.log_prob(net(states)[0], actions)
        log_ratios = learner.distribution.log_prob(merged(states)[0], actions) - acted
    shift_kl = float((log_ratios.exp() - 1 - log_ratios).mean())  # approx_kl's estimator, by hand
    rollout = TransitionBatch(states=states.numpy(), actions=actions.numpy(), rewards=np.ones(8, np.float32),
                              dones=np.zeros(8, bool), steps=np.ones(8, np.int64), last_values=np.zeros(8, np.float32),
                              policy_versions=np.zeros(8, np.int64), log_probs=acted.numpy(),
                              env_ids=np.array([0, 1] * 4), ends=np.zeros(8, bool))
    [first] = learner.consume(Transitions(0, rollout), 0)
    assert shift_kl > 1e-3  # the shift moves this policy
    assert first.approx_kl == pytest.approx(shift_kl, rel=1e-4)
    assert net.normalizer.mean.tolist() == pytest.approx(states.mean(0).tolist(), rel=1e-4)


class TableNet(torch.nn.Module):
    """Uniform logits over 2 actions and V(s) = the state's first number: values and
    probabilities set by hand."""

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(1))

    def forward(self, states):
        return torch.zeros(len(states), 2) + 0 * self.unused, states[:, 0] + 0 * self.unused


def _hand_rollout() -> list[tuple[int, TransitionBatch]]:
    """Worker 1's env 0 sends one row, then worker 0's env 0 three: its second row is
    truncated (bootstrap 4), its third ends the env's part of the rollout (bootstrap 2)."""
    def rows(values, rewards, ends, last_values, behaviour):
        count = len(values)
        return TransitionBatch(
            states=np.array([[value, 0.0, 0.0, 0.0] for value in values], np.float32),
            actions=np.zeros(count, np.int64), rewards=np.array(rewards, np.float32),
            dones=np.zeros(count, bool), steps=np.ones(count, np.int64),
            last_values=np.array(last_values, np.float32), policy_versions=np.zeros(count, np.int64),
            log_probs=np.log(np.array(behaviour, np.float32)), env_ids=np.zeros(count, np.int64),
            ends=np.array(ends))
    return [(1, rows([3.0], [5.0], [False], [1.0], [0.5])),
            (0, rows([0.5, 1.0, 1.5], [1.0, 2.0, 3.0], [False, True, False], [0.0, 4.0, 2.0],
                     [0.25, 0.5, 1.0]))]


# gamma 0.9, lambda 0.8; the learner's policy gives each action 0.5, so the ratios pi/mu of
# worker 0's rows are 2, 1 and 0.5 and of worker 1's row 1. TD errors r + gamma V(next) - V:
# worker 0: 1 + 0.9 * 1.0 - 0.5 = 1.4 (its episode goes on), 2 + 0.9 * 4 - 1 = 4.6 (truncated:
# bootstraps from 4), 3 + 0.9 * 2 - 1.5 = 3.3 (its part ends: no chain into worker 1's row);
# worker 1: 5 + 0.9 * 1 - 3 = 2.9.
HAND_ADVANTAGES = [1.4 + 0.9 * 0.8 * 4.6, 4.6, 3.3, 2.9]
HAND_VALUES = [0.5, 1.0, 1.5, 3.0]
# V-trace: rho = min(1, ratio) on each TD error, the trace lambda * min(1, ratio): row 0's ratio
# 2 is cut to 1, row 2's 0.5 halves its TD error
HAND_VTRACE = [0.5 + 1.4 + 0.9 * 0.8 * 4.6, 1.0 + 4.6, 1.5 + 0.5 * 3.3, 3.0 + 2.9]


@pytest.mark.parametrize("vtrace, targets", [
    (False, [a + v for a, v in zip(HAND_ADVANTAGES, HAND_VALUES)]),
    (True, HAND_VTRACE),
])
def test_prepare_gives_the_advantages_and_targets_worked_out_by_hand(vtrace, targets):
    config = make_config(env="CartPole-v1", algo="ppo", gamma=0.9, gae_lambda=0.8, vtrace=vtrace,
                         processes=2, envs_per_process=1, bf16=False)
    learner = PPOLearner(config, TableNet(), torch.zeros((), dtype=torch.int64), 1)
    rollout = learner.prepare(_hand_rollout())
    assert rollout.old_values.tolist() == pytest.approx(HAND_VALUES)  # worker 0's rows, then 1's
    assert rollout.advantages.tolist() == pytest.approx(HAND_ADVANTAGES)
    assert rollout.targets.tolist() == pytest.approx(targets)
    assert rollout.behaviour_log_probs.tolist() == pytest.approx(np.log([0.25, 0.5, 1.0, 0.5]))
    if vtrace:
        assert rollout.vtrace_rho == pytest.approx((1 + 1 + 0.5 + 1) / 4)


def test_ppo_settings_are_checked_in_one_line():
    pong = make_config(env="PongNoFrameskip-v4", algo="ppo")
    assert pong.batch_size == pong.rollout_length * pong.processes * pong.envs_per_process // pong.minibatches
    assert pong.reward_steps == 1 and pong.heads == "shared" and not pong.value_clip
    assert pong.lr_decay_frames == 10_000_000 and pong.bf16 == CPU_BF16
    assert not make_config(env="PongNoFrameskip-v4", algo="ppo", cuda=True).bf16  # bfloat16 is for a CPU learner
    assert make_config(env="CartPole-v1", algo="ppo").lr_decay_frames == 0
    with pytest.raises(ConfigError, match="--batch-size of --algo ppo is a rollout's"):
        make_config(env="CartPole-v1", algo="ppo", batch_size=7)
    with pytest.raises(ConfigError, match="--reward-steps of --algo ppo is 1"):
        make_config(env="CartPole-v1", algo="ppo", reward_steps=4)
    with pytest.raises(ConfigError, match="--minibatches 99 is more than a rollout's 8 rows"):
        make_config(env="CartPole-v1", algo="ppo", rollout_length=1, processes=1, envs_per_process=8,
                    minibatches=99)
    with pytest.raises(ConfigError, match="--mode is a setting of --algo a3c, not of --algo ppo"):
        make_config(env="CartPole-v1", algo="ppo", mode="grads")


def test_ppo_solves_cartpole_and_its_checkpoint_restores_acts_and_plays(tmp_path):
    # serial: the subject is the algorithm (tests/test_distributions.py runs PPO on processes)
    with Trainer(env="CartPole-v1", algo="ppo", logdir=str(tmp_path), max_seconds=120,
                 report_interval=0.5, backend="serial") as trainer:
        while not (result := trainer.train())["done"]:
            pass
        path = trainer.save()
    assert result["reason"] == "solved", result
    events = scalars(Path(result["run_dir"]))
    for tag in ("loss/policy", "loss/value", "train/approx_kl", "train/clip_fraction", "train/explained_variance",
                "train/vtrace_rho", "train/policy_lag", "train/policy_entropy"):
        assert events.Scalars(tag), tag
    restored = Trainer.restore(path)
    assert restored.algorithm.name == "ppo" and restored.config.rollout_length == trainer.config.rollout_length
    assert restored.compute_action(np.zeros(4, np.float32)) in (0, 1)
    played = play(str(Path(result["run_dir"]) / "best.pt"), episodes=2, greedy=True)
    assert min(episode.reward for episode in played) > 200  # a random policy's mean is about 22


def test_the_learning_rate_of_a_rollouts_passes_decays_with_the_frames_so_far():
    config = make_config(env="CartPole-v1", algo="ppo", processes=2, envs_per_process=2, rollout_length=3,
                         lr=1e-3, lr_decay_frames=48)
    learner = PPOLearner(config, build_net(describe_env("CartPole-v1")), torch.zeros((), dtype=torch.int64))
    messages = _rows([(worker, [0, 1], [False, False]) for _ in range(3) for worker in (0, 1)])
    for count, (worker, batch) in enumerate(messages, start=1):
        learner.consume(Transitions(worker, batch), 6 + 4 * count)  # 2 steps of 2 frames a message
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * (1 - 0.9 * 30 / 48))


def test_the_entropy_bonus_of_a_rollout_decays_with_the_frames_so_far():
    net = build_net(describe_env("CartPole-v1"))
    first_steps = []
    for decay_frames in (0, 48):
        config = make_config(env="CartPole-v1", algo="ppo", processes=2, envs_per_process=2, rollout_length=3,
                             entropy_beta=0.1, entropy_decay_frames=decay_frames)
        learner = PPOLearner(config, copy.deepcopy(net), torch.zeros((), dtype=torch.int64))
        results = [learner.consume(Transitions(worker, batch), 30)
                   for worker, batch in _rows([(worker, [0, 1], [False, False]) for _ in range(3) for worker in (0, 1)])]
        first_steps.append(results[-1][0])  # the same minibatch on the same weights
    constant, decayed = first_steps
    assert constant.loss_entropy < 0
    assert decayed.loss_entropy == pytest.approx(constant.loss_entropy * (1 - 0.9 * 30 / 48), rel=1e-5)


def test_synchronous_rollouts_leave_a_worker_two_messages_in_flight_instead_of_a_rollout():
    """--preset box turns --sync-rollouts on: the queues then hold two messages a worker, so a
    worker waits while the learner trains instead of acting the next rollout (2,048 rows,
    256 messages of 8) with the weights about to change."""
    from a3c.algos import get_algorithm
    from a3c.transport.pool import queue_capacity

    ppo = get_algorithm("ppo")
    synchronous = make_config(env="Pendulum-v1", algo="ppo", preset="box")
    assert synchronous.sync_rollouts and queue_capacity(ppo, synchronous) == 2 * synchronous.processes
    asynchronous = make_config(env="Pendulum-v1", algo="ppo", preset="box", sync_rollouts=False)
    assert queue_capacity(ppo, asynchronous) == 2048 // asynchronous.envs_per_process
