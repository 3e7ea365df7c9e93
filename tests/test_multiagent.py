"""Several agents in one env: the two-step game's rules, the slots an agent that finishes
early leaves idle, policies that see and learn from their own agents' rows only, MADDPG's
critic input, targets and straight-through actions by hand, checkpoints with two policies,
and the two-step game solved end to end."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from a3c.algos.maddpg.learner import MADDPGUpdate
from a3c.algos.maddpg.loss import actor_joint_actions, critic_targets, straight_through_gumbel
from a3c.algos.maddpg.nets import MADDPGNet
from a3c.config import ConfigError
from a3c.lib.envs import EnvError, describe_env, make_env
from a3c.lib.experience import NStepAccumulator, TransitionBatch
from a3c.lib.multiagent import (
    TWO_STEP_GAME,
    AgentSlots,
    JointEnv,
    MultiAgentEnvError,
    TwoStepGame,
    joint_transitions,
)
from a3c.lib.policies import PolicyMap, PolicyMappingError, parse_policy_mapping
from a3c.lib.replay import ReplayBuffer
from a3c.lib.trackers import RewardTracker
from a3c.lifecycle.trainer import Trainer
from a3c.play import PlayError, play

EARLY = "tests.parallel_envs.early_finish"


@pytest.mark.parametrize(("first", "second", "state", "team_reward"), [
    (0, 0, 1, 7.0), (0, 1, 1, 7.0), (1, 0, 1, 7.0), (1, 1, 1, 7.0),  # 2A pays 7 whatever they do
    (0, 0, 2, 0.0), (0, 1, 2, 1.0), (1, 0, 2, 1.0), (1, 1, 2, 8.0),  # 2B pays the matrix
])
def test_two_step_game_pays_half_the_team_reward_to_each_agent(first, second, state, team_reward):
    game = TwoStepGame()
    observations, _ = game.reset()
    assert observations["agent_0"].tolist() == [1.0, 0.0, 0.0]
    # the first agent's action picks the state, the second's is ignored, nothing is paid
    observations, rewards, terminations, _, _ = game.step({"agent_0": state - 1, "agent_1": 1 - (state - 1)})
    assert observations["agent_1"].tolist() == ([0.0, 1.0, 0.0] if state == 1 else [0.0, 0.0, 1.0])
    assert rewards == {"agent_0": 0.0, "agent_1": 0.0} and not any(terminations.values())
    _, rewards, terminations, _, _ = game.step({"agent_0": first, "agent_1": second})
    assert rewards == {"agent_0": team_reward / 2, "agent_1": team_reward / 2}
    assert all(terminations.values()) and game.agents == []


def test_joint_env_stacks_observations_with_agent_indices_and_sums_rewards():
    env = JointEnv(TWO_STEP_GAME)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (2, 5)
    assert observation.tolist() == [[1, 0, 0, 1, 0], [1, 0, 0, 0, 1]]
    env.step(np.array([1, 0]))
    _, reward, terminated, truncated, info = env.step(np.array([1, 1]))
    assert (reward, terminated, truncated) == (8.0, True, False)
    assert info["agent_rewards"].tolist() == [4.0, 4.0]


def test_an_agent_that_finishes_early_leaves_its_slot_idle_until_its_env_ends():
    slots = AgentSlots(EARLY, 2)  # slots: env 0 (a, b), env 1 (a, b)
    observations, _ = slots.reset(seed=0)
    accumulator = NStepAccumulator(slots.num_envs, reward_steps=1, gamma=0.5)
    expected = [  # per step: a's slots terminate at step 1, b's at step 3; a idles at steps 2 and 3
        ([True, True, True, True], [True, False, True, False], 4),
        ([False, True, False, True], [False, False, False, False], 2),
        ([False, True, False, True], [False, True, False, True], 2),
    ]
    for active, terminated_now, rows in expected:
        next_observations, rewards, terminated, truncated, infos = slots.step(np.zeros(4, dtype=np.int64))
        assert infos["active"].tolist() == active
        assert terminated.tolist() == terminated_now
        batch, _ = accumulator.step(observations, np.zeros(4), rewards, terminated, truncated, next_observations,
                                    infos)
        assert len(batch) == rows
        observations = next_observations
    episodes = infos["team_episodes"]
    assert [(episode.reward, episode.length, episode.agent_rewards) for episode in episodes] == [
        (7.0, 3, (1.0, 6.0)), (7.0, 3, (1.0, 6.0))]
    assert infos["final_obs"][1, :2].tolist() == [3.0, 1.0]  # b's last real observation
    assert observations[1, :2].tolist() == [0.0, 1.0]  # the next episode's first
    assert observations[:, -2:].tolist() == [[1, 0], [0, 1], [1, 0], [0, 1]]


TIME_LIMIT = "tests.parallel_envs.time_limit"


def test_a_time_limit_cuts_the_joint_env_and_its_slots_as_truncated_not_terminated():
    joint = JointEnv(TIME_LIMIT)
    joint.reset(seed=0)
    _, reward, terminated, truncated, info = joint.step(np.array([0, 0]))
    assert (reward, terminated, truncated) == (2.0, False, False)
    observation, reward, terminated, truncated, info = joint.step(np.array([0, 0]))
    assert (reward, terminated, truncated) == (2.0, False, True)
    assert info["agent_truncated"].tolist() == [True, True]
    assert observation[:, :2].tolist() == [[2.0, 0.0], [2.0, 1.0]]  # the real last observations
    slots = AgentSlots(TIME_LIMIT, 2)
    slots.reset(seed=0)
    slots.step(np.zeros(4, dtype=np.int64))
    observations, _, terminated, truncated, infos = slots.step(np.zeros(4, dtype=np.int64))
    assert terminated.tolist() == [False] * 4 and truncated.tolist() == [True] * 4
    assert infos["final_obs"][:, 0].tolist() == [2.0] * 4  # to bootstrap from
    assert observations[:, 0].tolist() == [0.0] * 4  # the next episodes' first


def test_agents_that_observe_differently_are_refused_in_one_line():
    with pytest.raises(EnvError, match="differ in observation or action spaces") as error:
        describe_env("tests.parallel_envs.mixed_spaces")
    assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="differ in observation"):
        Trainer("tests.parallel_envs.mixed_spaces")


def test_policy_mappings_parse_and_bad_ones_say_what_is_wrong():
    agents = ("a", "b", "c")
    assert parse_policy_mapping("shared", agents) == ("shared",) * 3
    assert parse_policy_mapping("per-agent", agents) == agents
    assert parse_policy_mapping("a=red, b=blue,c=red", agents) == ("red", "blue", "red")
    with pytest.raises(PolicyMappingError, match="no agent d; no policy for c"):
        parse_policy_mapping("a=x,b=x,d=y", agents)
    with pytest.raises(PolicyMappingError, match="expected shared, per-agent"):
        parse_policy_mapping("a:x", agents)


class Recorder(nn.Module):
    """Returns (rows' first entry + offset, zeros), keeping the rows it was given."""

    def __init__(self, offset: float):
        super().__init__()
        self.offset = offset
        self.weight = nn.Parameter(torch.ones(()))
        self.seen: list[torch.Tensor] = []

    def forward(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.seen.append(rows.detach().clone())
        out = self.weight * rows[:, :1] + self.offset
        return out, out.squeeze(1) * 0


def test_each_policy_computes_and_learns_from_its_own_agents_rows_only():
    nets = {"red": Recorder(100.0), "blue": Recorder(200.0)}
    policy_map = PolicyMap(nets, ["red", "blue", "red"])
    rows = torch.tensor([[1.0, 1, 0, 0], [2.0, 0, 1, 0], [3.0, 0, 0, 1], [4.0, 1, 0, 0]])
    logits, _ = policy_map(rows)
    assert nets["red"].seen[0][:, 0].tolist() == [1.0, 3.0, 4.0]  # agents 0 and 2
    assert nets["blue"].seen[0][:, 0].tolist() == [2.0]
    assert logits.squeeze(1).tolist() == [101.0, 202.0, 103.0, 104.0]  # in the rows' order
    logits[[0, 2]].sum().backward()  # a loss on red's agents' rows only
    assert nets["red"].weight.grad.item() == 4.0 and nets["blue"].weight.grad.item() == 0.0
    leading, _ = policy_map(rows[:3].reshape(1, 3, 4))  # joint observations keep their shape
    assert leading.shape == (1, 3, 1)


def test_the_shared_policy_sees_each_agents_index():
    shared = Recorder(0.0)
    PolicyMap({"shared": shared}, ["shared", "shared"])(torch.tensor([[5.0, 1, 0], [6.0, 0, 1]]))
    assert shared.seen[0][:, 1:].tolist() == [[1, 0], [0, 1]]


class InputOf(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = None

    def forward(self, joint: torch.Tensor) -> torch.Tensor:
        self.seen = joint
        return joint[:, :1]


def test_maddpg_critic_sees_every_observation_then_every_action_in_agent_order():
    net = MADDPGNet(observation_size=3, n_actions=2, agent_policies=["agent_0", "agent_1"])
    net.critics[1] = InputOf()
    observations = torch.tensor([[[1.0, 2, 3], [4, 5, 6]]])
    actions = torch.tensor([[[0.0, 1], [1, 0]]])
    net.q_value(1, observations, actions)
    assert net.critics[1].seen.tolist() == [[1, 2, 3, 4, 5, 6, 0, 1, 1, 0]]


def test_maddpg_targets_by_hand():
    net = MADDPGNet(observation_size=3, n_actions=2, agent_policies=["agent_0", "agent_1"])
    update = MADDPGUpdate(net, lr=1e-3, adam_eps=1e-8, clip_grad=1.0, gamma=0.5, tau=0.01, temperature=1.0,
                          device="cpu", version_counter=torch.zeros((), dtype=torch.int64))
    target = update.target_net
    with torch.no_grad():
        for agent, favourite in (("agent_0", 1), ("agent_1", 0)):  # target actors: agent_0 picks 1, agent_1 picks 0
            last = target.actors.nets[agent].policy[-1]
            last.weight.zero_()
            last.bias.copy_(torch.tensor([1.0, -1.0]) if favourite == 0 else torch.tensor([-1.0, 1.0]))
        for agent, action_values in enumerate(([10.0, 20, 30, 70], [1.0, 2, 3, 7])):
            critic = nn.Linear(6 + 4, 1)  # Q'_i = the value of each agent's action, summed
            critic.weight.copy_(torch.tensor([[0, 0, 0, 0, 0, 0, *action_values]]))
            critic.bias.zero_()
            target.critics[agent] = critic
    observations = np.array([[[0.3, 1, 0], [0.7, 0, 1]]] * 2, np.float32)  # each ends with its agent's index
    batch = TransitionBatch(
        states=observations, actions=np.zeros((2, 2), np.int64),
        rewards=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), dones=np.array([False, True]),
        steps=np.ones(2, np.int64), last_states=observations)
    # a' = (1, 0): Q'_0 = 20 + 30 = 50, Q'_1 = 2 + 3 = 5 (every other joint action gives
    # another value: (0, 1) 80 and 8); the second row terminated
    assert update.targets(batch).tolist() == [[1 + 0.5 * 50, 2 + 0.5 * 5], [3.0, 4.0]]
    assert critic_targets(torch.tensor([[1.0]]), torch.tensor([False]), torch.tensor([[2.0]]), 0.9).item() == pytest.approx(2.8)


def test_straight_through_gumbel_acts_one_hot_and_passes_the_relaxed_gradient():
    logits = torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], requires_grad=True)
    weights = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]])
    torch.manual_seed(3)
    hard = straight_through_gumbel(logits, temperature=0.5)
    assert hard.detach().sum(dim=1).tolist() == [1.0, 1.0] and set(hard.detach().flatten().tolist()) <= {0.0, 1.0}
    (hard * weights).sum().backward()
    straight_through = logits.grad.clone()
    logits.grad = None
    torch.manual_seed(3)  # the same noise, relaxed
    gumbels = -torch.empty_like(logits).exponential_().log()
    (F.softmax((logits + gumbels) / 0.5, dim=-1) * weights).sum().backward()
    assert torch.allclose(straight_through, logits.grad)


def test_straight_through_gumbel_samples_the_policy_not_its_most_probable_action():
    logits = torch.tensor([0.5, -1.0, 2.0]).repeat(20_000, 1)
    torch.manual_seed(0)
    frequencies = straight_through_gumbel(logits).detach().mean(dim=0)
    torch.testing.assert_close(frequencies, torch.softmax(logits[0], 0), atol=0.015, rtol=0)


def _update_with_action_critics(action_weights: list[list[float]], tau: float) -> MADDPGUpdate:
    """An update whose critic i is linear in the joint one-hot actions with ``action_weights[i]``
    (a0=0, a0=1, a1=0, a1=1) and blind to the observations."""
    net = MADDPGNet(observation_size=3, n_actions=2, agent_policies=["agent_0", "agent_1"])
    with torch.no_grad():
        for agent, weights in enumerate(action_weights):
            critic = nn.Linear(6 + 4, 1)
            critic.weight.copy_(torch.tensor([[0.0] * 6 + weights]))
            critic.bias.zero_()
            net.critics[agent] = critic
    return MADDPGUpdate(net, lr=0.01, adam_eps=1e-8, clip_grad=100.0, gamma=0.5, tau=tau, temperature=1.0,
                        device="cpu", version_counter=torch.zeros((), dtype=torch.int64))


def test_each_actor_climbs_its_own_agents_critic_and_the_targets_follow_by_polyak():
    # critic 0 pays agent 0's action 1 (and agent 1's action 0); critic 1 pays agent 1's action 1
    # (and agent 0's action 0): an actor that climbed the other agent's critic, or went down
    # its own, would make its action 1 less likely
    update = _update_with_action_critics([[0.0, 10.0, 10.0, 0.0], [10.0, 0.0, 0.0, 10.0]], tau=0.25)
    with torch.no_grad():
        for parameter in update.target_net.parameters():
            parameter.zero_()
    observations = np.array([[[0.3, 1, 0], [0.7, 0, 1]]] * 8, np.float32)
    batch = TransitionBatch(states=observations, actions=np.zeros((8, 2), np.int64),
                            rewards=np.zeros((8, 2), np.float32), dones=np.zeros(8, bool),
                            steps=np.ones(8, np.int64), last_states=observations)
    states = torch.as_tensor(observations)
    with torch.no_grad():
        before = update.net(states)[0]
    torch.manual_seed(0)
    update.step(batch, np.ones(8, np.float32))
    with torch.no_grad():
        after = update.net(states)[0]
    preference = lambda logits: logits[:, :, 1] - logits[:, :, 0]
    assert (preference(after) > preference(before)).all()  # both agents, every row
    # the targets moved a quarter of the way from where they were (zeros) to the online weights
    for target, online in zip(update.target_net.parameters(), update.net.parameters()):
        torch.testing.assert_close(target, 0.25 * online.detach())


def test_the_actor_update_changes_only_its_own_agents_action():
    taken = torch.tensor([[[1.0, 0], [1, 0], [0, 1]]])
    own = torch.tensor([[0.0, 1]])
    assert actor_joint_actions(taken, 1, own).tolist() == [[[1, 0], [0, 1], [0, 1]]]


def test_joint_transitions_regroup_by_env_and_refuse_a_missing_agent():
    states = np.array([[7.0, 1, 0], [8.0, 0, 1], [9.0, 1, 0], [10.0, 0, 1]], np.float32)
    batch = TransitionBatch(states=states, actions=np.array([0, 1, 1, 0]), rewards=np.array([1.0, 2, 3, 4]),
                            dones=np.array([False, False, True, True]), steps=np.ones(4, np.int64),
                            last_states=states + 1, policy_versions=np.array([5, 5, 5, 5]))
    joint = joint_transitions(batch, agents=2)
    assert joint.states[:, :, 0].tolist() == [[7, 8], [9, 10]] and joint.last_states[1, 0, 0] == 10
    assert joint.actions.tolist() == [[0, 1], [1, 0]] and joint.rewards.tolist() == [[1, 2], [3, 4]]
    assert joint.dones.tolist() == [False, True] and joint.policy_versions.tolist() == [5, 5]
    with pytest.raises(MultiAgentEnvError, match="finished early"):
        joint_transitions(batch[np.array([0, 1, 3])], agents=2)


def test_the_replay_buffer_keeps_an_action_and_a_reward_per_agent():
    replay = ReplayBuffer(8, (2, 3), "float32", prioritized=False, agents=2)
    batch = TransitionBatch(states=np.ones((3, 2, 3), np.float32), actions=np.array([[0, 1], [1, 1], [1, 0]]),
                            rewards=np.array([[1.0, 2], [3, 4], [5, 6]], np.float32), dones=np.zeros(3, bool),
                            steps=np.ones(3, np.int64), last_states=np.zeros((3, 2, 3), np.float32))
    replay.add(batch)
    rows = replay.rows(np.array([2, 0]))
    assert rows.actions.tolist() == [[1, 0], [0, 1]] and rows.rewards.tolist() == [[5, 6], [1, 2]]


class ScalarLog:
    def __init__(self):
        self.scalars: dict[str, list[float]] = {}

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.setdefault(tag, []).append(value)


def test_the_team_return_ends_the_run_and_each_agent_has_its_own_curve():
    log = ScalarLog()
    tracker = RewardTracker(log, stop_reward=None, agents=("a", "b"))
    tracker.record(7.0, 3, 10, (1.0, 6.0))
    tracker.record(5.0, 3, 20, (2.0, 3.0))
    assert tracker.mean_reward == 6.0 and tracker.agent_means == {"a": 1.5, "b": 4.5}
    assert log.scalars["episode/agent_reward/b"] == [6.0, 3.0]
    assert log.scalars["episode/agent_reward_100/a"] == [1.0, 1.5]


def test_multiagent_settings_are_refused_where_they_cannot_work():
    with pytest.raises(ConfigError, match="--algo maddpg needs a multi-agent env"):
        Trainer("CartPole-v1", algo="maddpg")
    with pytest.raises(ConfigError, match="--policies is for multi-agent envs"):
        Trainer("CartPole-v1", policies="shared")
    with pytest.raises(ConfigError, match="no policy for agent_1"):
        Trainer(TWO_STEP_GAME, policies="agent_0=x")
    with pytest.raises(ConfigError, match="policy_mapping is for multi-agent envs"):
        Trainer("CartPole-v1", policy_mapping=lambda agent: "x")
    with pytest.raises(ConfigError, match="neither ',' nor '='"):
        Trainer(TWO_STEP_GAME, policy_mapping=lambda agent: "a,b")


def test_two_policies_survive_a_checkpoint_and_act_per_agent(tmp_path):
    with Trainer(TWO_STEP_GAME, policy_mapping=lambda agent: f"policy_{agent[-1]}", max_frames=4_000,
                 logdir=str(tmp_path), name="two", seed=1) as trainer:
        while not trainer.train().get("done"):
            pass
        path = trainer.save(tmp_path / "saved")
        state = trainer.net.state_dict()
    assert sorted(trainer.net.nets) == ["policy_0", "policy_1"]
    restored = Trainer.restore(path)
    assert restored.config.policies == "agent_0=policy_0,agent_1=policy_1"
    assert all(torch.equal(state[name], tensor) for name, tensor in restored.net.state_dict().items())
    own = {"agent_0": np.array([0, 0, 1], np.float32), "agent_1": np.array([0, 0, 1], np.float32)}
    assert set(restored.compute_actions(own, greedy=True)) == {"agent_0", "agent_1"}
    assert restored.compute_action(own["agent_1"], greedy=True, agent="agent_1") in (0, 1)
    joint, _ = make_env(TWO_STEP_GAME).reset(seed=0)  # as play steps it: an action per agent
    assert restored.compute_action(joint, greedy=True).shape == (2,)
    with pytest.raises(ValueError, match="no agent 'agent_9'"):
        restored.compute_action(own["agent_1"], agent="agent_9")
    assert [episode.length for episode in play(str(path), episodes=2)] == [2, 2]
    with pytest.raises(ConfigError, match=r"--policies agent_0=policy_0,agent_1=policy_1\)"):
        Trainer(TWO_STEP_GAME, resume=str(path), logdir=str(tmp_path))
    with pytest.raises(PlayError, match="--record is for single-agent envs"):
        play(str(path), episodes=1, record_dir=str(tmp_path / "videos"))


def test_maddpg_reaches_the_coordinated_optimum_of_the_two_step_game(tmp_path):
    with Trainer(TWO_STEP_GAME, algo="maddpg", max_frames=100_000, logdir=str(tmp_path), name="maddpg") as trainer:
        while not (result := trainer.train()).get("done"):
            pass
    assert result["reason"] == "solved", result
    assert trainer.evaluate(2)["eval/episode_reward_mean"] == 8.0


@pytest.mark.parametrize("with_state", [False, True])
def test_the_two_step_game_passes_pettingzoos_parallel_api_test(with_state):
    from pettingzoo.test import parallel_api_test

    game = TwoStepGame(with_state=with_state)
    assert game.unwrapped is game and game.observation_space("agent_0") is game.observation_space("agent_0")
    parallel_api_test(game, num_cycles=50)


def test_the_with_state_variant_observes_its_own_view_and_the_global_state():
    game = TwoStepGame(with_state=True)
    observations, _ = game.reset()
    assert observations["agent_1"]["obs"].tolist() == observations["agent_1"]["state"].tolist() == [1.0, 0.0, 0.0]
    observations, *_ = game.step({"agent_0": 1, "agent_1": 0})  # agent 0 picks 2B
    assert observations["agent_0"]["state"].tolist() == [0.0, 0.0, 1.0] and game.state().tolist() == [0, 0, 1]
