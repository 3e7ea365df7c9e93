"""MAPPO: each agent's row leads with every agent's observation, the policy reads only the
agent's own part and the critic the whole row (by hand); the two-step game learned, played
from its checkpoint and acted on agent by agent; a single-agent env refused."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from a3c import ConfigError, Trainer
from a3c.algos import get_algorithm
from a3c.algos.mappo.nets import CentralCriticMlp
from a3c.config import make_config
from a3c.lib.envs import describe_env
from a3c.lib.multiagent import AgentSlots
from a3c.play import play


def test_slot_rows_lead_with_every_agents_observation():
    slots = AgentSlots("TwoStepGame", 1, global_state=True)
    observations, _ = slots.reset(seed=0)
    # state 1 (one-hot 1, 0, 0) seen by both agents, then the agent's own view and index
    assert observations.tolist() == [[1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]]
    info = describe_env("TwoStepGame", global_state=True)
    assert info.observation_shape == (11,) and info.global_state_size == 6


def test_the_policy_reads_its_own_part_and_the_critic_the_whole_row():
    torch.manual_seed(0)
    net = CentralCriticMlp(own_size=5, global_size=6, n_actions=2)
    row = torch.rand(1, 11)
    other = row.clone()
    other[0, :6] = torch.rand(6)  # the other agents' observations change, the agent's own does not
    (head, value), (other_head, other_value) = net(row), net(other)
    assert torch.equal(head, other_head) and not torch.equal(value, other_value)
    own_head, own_value = net(row[:, 6:])  # acting outside the workers: the own part alone
    assert torch.equal(own_head, head) and own_value.tolist() == [0.0]


@pytest.mark.timeout(180)
def test_mappo_learns_the_two_step_game_and_plays_its_checkpoint(tmp_path):
    with Trainer(env="TwoStepGame", algo="mappo", seed=0, logdir=str(tmp_path), max_frames=100_000) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
        path = trainer.save()
        actions = trainer.compute_actions({"agent_0": np.array([1.0, 0.0, 0.0]), "agent_1": np.array([1.0, 0.0, 0.0])},
                                          greedy=True)
    assert result["reason"] == "solved" and result["episode_reward_mean"] >= 7.9, result
    assert actions["agent_0"] == 1  # the first agent picks 2B, where both then play 1 for 8
    assert [episode.reward for episode in play(str(path), episodes=2, greedy=True)] == [8.0, 8.0]


def test_mappo_needs_several_agents(tmp_path):
    with pytest.raises(ConfigError, match="--algo mappo needs a multi-agent env"):
        Trainer(env="CartPole-v1", algo="mappo", logdir=str(tmp_path))


def test_the_start_line_names_mappo_not_the_ppo_it_builds_on():
    config = make_config(env="TwoStepGame", algo="mappo")
    assert get_algorithm("mappo").describe(config).startswith("mappo, rollouts of ")
    assert get_algorithm("ppo").describe(make_config(env="CartPole-v1", algo="ppo")).startswith("ppo, rollouts of ")
