"""Q-learning: Double-DQN n-step targets, the dueling head, Ape-X epsilons, epsilon-greedy
actions and the weighted Huber loss by hand; the learner's replay ratio, priorities and target
net; a CartPole run end to end, its checkpoint with and without the replay buffer."""
import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from a3c import ConfigError, Trainer
from a3c.algos.dqn.exploration import actor_epsilons, epsilon_greedy
from a3c.algos.dqn.learner import QLearner, QStepStats
from a3c.algos.dqn.loss import double_dqn_targets, weighted_huber_loss
from a3c.algos.dqn.nets import AtariQ, MlpQ, QHead
from a3c.algos.payloads import Transitions
from a3c.algos.replay_learner import ReplaySteps
from a3c.lib.experience import TransitionBatch
from a3c.lib.replay import ReplayBuffer
from a3c.lifecycle.checkpoint import load_checkpoint, save_checkpoint
from a3c.lifecycle.reporter import ConsoleReporter, Reporter
from a3c.play import play
from tests.helpers import scalars


def test_double_dqn_target_lets_the_online_net_choose_and_the_target_net_evaluate():
    rewards = torch.tensor([1.0, 2.0, 0.5, 3.0])
    dones = torch.tensor([False, False, True, False])
    steps = torch.tensor([3, 3, 3, 1])  # the last row was cut by a time limit after one step
    online = torch.tensor([[1.0, 5.0], [4.0, 0.0], [9.0, 9.0], [0.0, 1.0]])
    target = torch.tensor([[10.0, 2.0], [3.0, 8.0], [7.0, 7.0], [6.0, 4.0]])
    gamma = 0.9
    double = double_dqn_targets(rewards, dones, steps, online, target, gamma)
    # online argmax: 1, 0, -, 1; the target net's values there: 2, 3, -, 4
    expected = [1.0 + 0.9**3 * 2.0, 2.0 + 0.9**3 * 3.0, 0.5, 3.0 + 0.9 * 4.0]
    assert torch.allclose(double, torch.tensor(expected))
    plain = double_dqn_targets(rewards, dones, steps, online, target, gamma, double=False)
    # the target net's own maximum: 10, 8, -, 6
    assert torch.allclose(plain, torch.tensor([1.0 + 0.9**3 * 10.0, 2.0 + 0.9**3 * 8.0, 0.5, 3.0 + 0.9 * 6.0]))


def test_dueling_head_adds_the_value_to_mean_centred_advantages():
    head = QHead(features=3, n_actions=4, hidden=5, dueling=True)
    features = torch.randn(6, 3)
    q_values = head(features)
    value = head.value(features)
    advantages = head.advantage(features)
    assert torch.allclose(q_values, value + advantages - advantages.mean(-1, keepdim=True))
    assert torch.allclose(q_values.mean(-1, keepdim=True), value, atol=1e-6)  # V is Q's mean


def test_q_net_returns_q_values_and_their_maximum():
    net = MlpQ(4, 3, dueling=False)
    q_values, best = net(torch.randn(5, 4))
    assert q_values.shape == (5, 3) and torch.equal(best, q_values.max(-1).values)


def test_ape_x_epsilons_fall_from_base_to_base_to_the_one_plus_alpha():
    epsilons = actor_epsilons(8, base=0.4, alpha=7.0)
    assert epsilons[0] == pytest.approx(0.4) and epsilons[-1] == pytest.approx(0.4 ** 8)
    assert epsilons[3] == pytest.approx(0.4 ** (1 + 7 * 3 / 7))
    assert np.all(np.diff(epsilons) < 0)
    assert actor_epsilons(1).tolist() == [0.4]


def test_epsilon_greedy_explores_at_each_rows_rate_and_is_greedy_otherwise():
    generator = torch.Generator().manual_seed(0)
    q_values = torch.tensor([[0.0, 1.0, 0.0]]).repeat(20_000, 1)
    epsilons = torch.cat([torch.zeros(10_000), torch.ones(10_000) * 0.3])
    actions = epsilon_greedy(q_values, epsilons, generator)
    assert torch.all(actions[:10_000] == 1)
    non_greedy = float((actions[10_000:] != 1).float().mean())
    assert non_greedy == pytest.approx(0.3 * 2 / 3, abs=0.015)  # a random pick can be greedy too


def test_weighted_huber_loss_and_td_errors_by_hand():
    q_taken = torch.tensor([0.0, 0.0, 0.0])
    targets = torch.tensor([0.5, -3.0, 2.0])
    weights = torch.tensor([1.0, 0.5, 0.0])
    loss, td_errors = weighted_huber_loss(q_taken, targets, weights)
    # Huber: 0.5 x^2 inside 1, |x| - 0.5 outside: 0.125, 2.5, 1.5; weighted mean (0.125 + 1.25 + 0) / 3
    assert loss.item() == pytest.approx((0.125 + 1.25) / 3)
    assert td_errors.tolist() == [0.5, -3.0, 2.0]


def rows(count: int, first: int = 0) -> TransitionBatch:
    ids = np.arange(first, first + count, dtype=np.float32)
    return TransitionBatch(states=np.stack([ids, ids], 1), actions=(ids % 2).astype(np.int64),
                           rewards=np.ones(count, np.float32), dones=np.zeros(count, bool),
                           steps=np.full(count, 2), last_states=np.stack([ids + 1, ids + 1], 1),
                           policy_versions=np.zeros(count, np.int64))


def test_replay_steps_hold_the_replay_ratio_and_update_priorities_from_td_errors():
    torch.manual_seed(0)
    learner = QLearner(MlpQ(2, 2), lr=1e-3, adam_eps=1e-8, clip_grad=10.0, gamma=0.9, device="cpu",
                       target_sync=1000)
    replay = ReplayBuffer(100, (2,), "float32", alpha=1.0)
    steps = ReplaySteps(learner, replay, batch_size=8, replay_ratio=2.0, learning_starts=16,
                        beta=0.4, beta_steps=10, seed=0, stats_type=QStepStats)
    assert steps.consume(Transitions(0, rows(10))) == []  # below learning_starts: stored only
    taken = steps.consume(Transitions(0, rows(10, 10)))  # 10 received since the start: 20 samples
    assert len(taken) == 2 and steps.sampled == 16 and learner.policy_version == 2
    taken = steps.consume(Transitions(0, rows(2, 20)))  # 12 received: 24 allowed, 16 done
    assert len(taken) == 1 and steps.sampled / steps.received == pytest.approx(24 / 12)
    assert taken[0].replay_size == 22 and taken[0].beta == pytest.approx(0.4 + 0.6 * 2 / 10)


class FixedTD:
    """Stands in for the Q-learner: each sampled row's TD error is minus twice its reward,
    and the slots it was given are kept."""

    def __init__(self):
        self.policy_version = 0
        self.rewards_seen: list[float] = []

    def step(self, batch, weights):
        self.policy_version += 1
        self.rewards_seen += batch.rewards.tolist()
        figures = {"loss_td": 0.0, "td_error": 0.0, "q_values": 0.0, "grad_norm": 0.0}
        return figures, -2.0 * batch.rewards


def test_each_sampled_slot_gets_its_td_error_to_the_alpha_as_priority_and_the_rest_keep_theirs():
    replay = ReplayBuffer(40, (2,), "float32", alpha=0.6)
    learner = FixedTD()
    steps = ReplaySteps(learner, replay, batch_size=4, replay_ratio=0.5, learning_starts=8,
                        beta=0.4, beta_steps=10, seed=0, stats_type=QStepStats)
    batch = rows(24)
    batch.rewards = np.arange(1.0, 25.0, dtype=np.float32)  # slot i holds reward i + 1
    steps.consume(Transitions(0, batch))
    assert learner.policy_version == 3  # 24 received at ratio 0.5: 12 samples, 3 batches of 4
    sampled = {int(reward) - 1 for reward in learner.rewards_seen}
    eps = replay.priority_eps
    for slot in range(24):
        expected = (2.0 * (slot + 1) + eps) ** 0.6 if slot in sampled else 1.0
        assert replay.priorities.get(np.array([slot]))[0] == pytest.approx(expected), slot
    assert replay.max_priority == pytest.approx(2.0 * (max(sampled) + 1) + eps)


class Scalars:
    def __init__(self):
        self.logged = []

    def add_scalar(self, tag, value, step):
        self.logged.append((tag, value, step))


def test_the_logged_replay_ratio_is_the_last_intervals_not_the_runs():
    from a3c.algos.dqn.learner import DQNLearner
    from a3c.config import make_config
    from a3c.lib.envs import describe_env

    config = make_config(env="CartPole-v1", algo="dqn", replay_ratio=1.0, learning_starts=8, batch_size=4)
    dqn = DQNLearner(config, MlpQ(4, 2), torch.zeros((), dtype=torch.int64), describe_env("CartPole-v1"))
    writer = Scalars()
    dqn.begin(writer, 0, None, Reporter())
    dqn.steps.received, dqn.steps.sampled = 100, 100
    dqn.log_interval(writer, 10)
    dqn.steps.received, dqn.steps.sampled = 200, 150  # the learner fell behind in this interval
    dqn.log_interval(writer, 20)
    ratios = [(value, step) for tag, value, step in writer.logged if tag == "train/replay_ratio"]
    assert ratios == [(1.0, 10), (0.5, 20)]  # the run's total, 150 / 200, would say 0.75


def test_the_replay_is_sampled_uniformly_until_the_episodes_given_then_by_priority():
    """The Double-DQN notes' agent: uniform draws for its first 30 episodes, then prioritized;
    the priorities are kept all along, so the switch draws by them at once."""
    from a3c.algos.dqn.learner import DQNLearner
    from a3c.config import make_config
    from a3c.lib.envs import describe_env

    config = make_config(env="CartPole-v1", algo="dqn", learning_starts=8, batch_size=8, replay_ratio=4.0,
                         prioritized_from_episodes=30, priority_beta=1.0)
    torch.manual_seed(0)
    dqn = DQNLearner(config, MlpQ(4, 2), torch.zeros((), dtype=torch.int64), describe_env("CartPole-v1"))
    dqn.begin(Scalars(), 0, None, Reporter())
    wide = TransitionBatch.from_columns({**rows(16).columns(), "states": np.tile(rows(16).states, 2),
                                         "last_states": np.tile(rows(16).last_states, 2)})
    before = dqn.consume(Transitions(0, wide), 16, episodes=29)
    assert before and all(step.importance_weight == 1.0 for step in before)  # uniform: every weight 1
    assert len(set(dqn.replay.priorities.get(np.arange(16)).tolist())) > 1  # yet the TD errors were kept
    after = dqn.consume(Transitions(0, wide), 32, episodes=30)
    assert after and all(step.importance_weight < 1.0 for step in after)  # by priority: (N P)^-1 / max
    with pytest.raises(ConfigError, match="--prioritized-from-episodes switches to prioritized replay"):
        make_config(env="CartPole-v1", algo="dqn", prioritized_from_episodes=30, prioritized=False)


def test_a_non_finite_td_loss_is_refused_before_the_weights_change():
    from a3c.algos.optimizer import NonFiniteLoss

    learner = QLearner(MlpQ(2, 2), lr=1e-2, adam_eps=1e-8, clip_grad=10.0, gamma=0.9, device="cpu")
    batch = rows(8)
    batch.rewards[3] = np.nan
    before = [p.clone() for p in learner.net.parameters()]
    with pytest.raises(NonFiniteLoss, match="non-finite training signal at step 0"):
        learner.step(batch, np.ones(8, np.float32))
    assert learner.policy_version == 0
    assert all(torch.equal(a, b) for a, b in zip(before, learner.net.parameters()))


def test_target_net_is_copied_every_target_sync_steps_or_follows_by_polyak():
    torch.manual_seed(0)
    batch = rows(8)
    hard = QLearner(MlpQ(2, 2), lr=1e-2, adam_eps=1e-8, clip_grad=10.0, gamma=0.9, device="cpu",
                    target_sync=2)
    start = [p.clone() for p in hard.target_net.parameters()]
    hard.step(batch, np.ones(8, np.float32))
    assert all(torch.equal(a, b) for a, b in zip(start, hard.target_net.parameters()))
    hard.step(batch, np.ones(8, np.float32))
    assert all(torch.equal(a, b) for a, b in zip(hard.net.parameters(), hard.target_net.parameters()))

    soft = QLearner(MlpQ(2, 2), lr=1e-2, adam_eps=1e-8, clip_grad=10.0, gamma=0.9, device="cpu", tau=0.1)
    before = [p.clone() for p in soft.target_net.parameters()]
    soft.step(batch, np.ones(8, np.float32))
    for old, online, new in zip(before, soft.net.parameters(), soft.target_net.parameters()):
        assert torch.allclose(new, old + 0.1 * (online.detach() - old))


def test_dqn_learns_cartpole_end_to_end_and_logs_its_terms(tmp_path):
    # serial: the subject is the algorithm (the restore test below runs DQN on processes)
    with Trainer(env="CartPole-v1", algo="dqn", logdir=str(tmp_path), stop_reward=100.0,
                 max_seconds=120, report_interval=0.5, backend="serial") as trainer:
        q_values = []  # an iteration without a learner step reports None; the last one may
        while not (result := trainer.train())["done"]:
            q_values.append(result["q_values"])
        q_values.append(result["q_values"])
    assert result["reason"] == "solved", result  # a random policy's mean is about 22
    assert [value for value in q_values if value is not None][-1] > 1.0
    events = scalars(Path(result["run_dir"]))
    ratios = [point.value for point in events.Scalars("train/replay_ratio")]
    assert np.median(ratios) == pytest.approx(trainer.config.replay_ratio, rel=0.1)
    for tag in ("loss/td", "train/td_error", "train/q_values", "train/replay_size", "train/replay_ratio",
                "train/beta", "train/priority_mean", "train/importance_weight", "train/epsilon_mean"):
        assert events.Scalars(tag), tag
    played = play(str(Path(result["run_dir"]) / "best.pt"), episodes=2)
    assert len(played) == 2  # a DQN checkpoint plays, greedily on Q


def test_a_dqn_run_restores_with_its_replay_buffer_or_says_it_refills(tmp_path, capsys):
    with Trainer(env="CartPole-v1", algo="dqn", logdir=str(tmp_path), stop_reward=1e9,
                 save_replay=True, learning_starts=500) as trainer:
        trainer.train(frames=2_000)
        saved = trainer.save(tmp_path / "with")
        size = len(trainer._run.learner.replay)
    state = load_checkpoint(saved)
    assert len(state["replay"]["actions"]) == size and "target_model" in state
    restored = Trainer.restore(saved, reporter=ConsoleReporter())
    with restored:
        restored.train(frames=500)
        assert len(restored._run.learner.replay) >= size
    assert f"replay buffer restored: {size:,} transitions" in capsys.readouterr().out
    without = Trainer.restore(saved, save_replay=False)
    state_without = load_checkpoint(without.save(tmp_path / "without"))
    assert "replay" not in state_without
    with Trainer.restore(tmp_path / "without" / "checkpoint.pt", reporter=ConsoleReporter()) as refilled:
        refilled.train(frames=200)
    assert "it refills" in capsys.readouterr().out


def test_grads_mode_is_for_a3c_only(tmp_path):
    with pytest.raises(ConfigError, match="--mode is a setting of --algo a3c"):
        Trainer(env="CartPole-v1", algo="dqn", mode="grads", logdir=str(tmp_path))


def test_atari_q_net_takes_uint8_frames_through_the_nature_conv_body():
    net = AtariQ((4, 84, 84), 6)
    q_values, best = net(torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8))
    assert q_values.shape == (2, 6) and torch.equal(best, q_values.max(-1).values)
    first = net.conv[0]
    assert torch.all(first.bias == 0)  # initialised as the actor-critic's shared conv body
    rows = first.weight.reshape(32, -1)
    assert torch.allclose(rows @ rows.T, 2.0 * torch.eye(32), atol=1e-4)  # orthogonal, gain sqrt 2


def test_a_checkpoint_written_before_the_algorithm_seam_restores(tmp_path):
    """DQN runs saved every algorithm's settings then (an entropy bonus, heads, a mode):
    restoring reads only DQN's and the run's."""
    with Trainer(env="CartPole-v1", algo="dqn", logdir=str(tmp_path)) as trainer:
        path = trainer.save()
    state = load_checkpoint(path)
    state["config"].update(entropy_beta=0.0, value_weight=1.0, lr_warmup=0, heads="separate", mode="data",
                           grad_batch=2, max_policy_lag=None)
    save_checkpoint(path, state)
    restored = Trainer.restore(path)
    assert (restored.config.algo, restored.config.entropy_beta, restored.config.heads) == ("dqn", None, None)
    assert restored.compute_action(np.zeros(4, dtype=np.float32)) in (0, 1)


class ConstantQ(torch.nn.Module):
    """Q-values that do not depend on the state: ``q`` for every row."""

    def __init__(self, q):
        super().__init__()
        self.q = torch.nn.Parameter(torch.tensor(q))

    def forward(self, observations):
        q = self.q.expand(len(observations), -1)
        return q, q.max(-1).values


def test_the_learners_targets_let_its_online_net_choose_and_its_target_net_evaluate():
    batch = rows(2)
    batch.dones = np.array([False, True])
    targets = {}
    for double in (True, False):
        learner = QLearner(ConstantQ([1.0, 5.0]), lr=1e-3, adam_eps=1e-8, clip_grad=10.0, gamma=0.5,
                           device="cpu", double=double)
        learner.target_net = ConstantQ([10.0, 2.0])
        targets[double] = learner.targets(batch).tolist()
    # 2 steps of gamma 0.5; the done row is its reward alone
    assert targets[True] == [1.0 + 0.25 * 2.0, 1.0]  # online picks action 1, target values it at 2
    assert targets[False] == [1.0 + 0.25 * 10.0, 1.0]  # the target net's own maximum


def test_importance_weights_scale_each_rows_share_of_the_gradient():
    torch.manual_seed(0)
    net = MlpQ(2, 2)
    batch = rows(2)
    batch.rewards = np.array([3.0, -4.0], dtype=np.float32)
    gradients = {}
    for name, rows_taken, weights in (("weighted", slice(0, 2), [1.0, 0.0]), ("alone", slice(0, 1), [1.0])):
        learner = QLearner(copy.deepcopy(net), lr=1e-9, adam_eps=1e-8, clip_grad=1e9, gamma=0.9, device="cpu")
        learner.step(batch[rows_taken], np.array(weights, np.float32))
        gradients[name] = [parameter.grad.clone() for parameter in learner.net.parameters()]
    # weight 0 removes row 1; the mean over two rows halves row 0's gradient
    for weighted, alone in zip(gradients["weighted"], gradients["alone"]):
        assert torch.allclose(2.0 * weighted, alone, atol=1e-6)


def test_a_dqn_checkpoint_saved_before_the_first_transition_restores(tmp_path):
    with Trainer(env="CartPole-v1", algo="dqn", logdir=str(tmp_path), save_replay=True) as trainer:
        trainer._learner_state().learner.begin(trainer._run.writer, 0, None, Reporter())  # an empty buffer
        path = trainer.save()
    assert len(load_checkpoint(path)["replay"]["actions"]) == 0
    with Trainer.restore(path, stop_reward=1e9) as restored:
        result = restored.train(frames=300)
    assert result["frames"] >= 300 and len(restored._run.learner.replay) > 0
