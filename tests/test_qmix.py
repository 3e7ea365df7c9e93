"""QMIX by hand: the mixing weights are non-negative, so Q_tot never falls as an agent's Q
rises; the targets of a mixer set to add the agents' values; the two-step game's
coordinated 8 learned through Trainer; a single-agent env refused."""
from __future__ import annotations

import pytest
import torch

from a3c import ConfigError, Trainer
from a3c.algos.qmix.loss import qmix_targets
from a3c.algos.qmix.nets import QMIXNet


def test_mixing_weights_are_non_negative_and_q_total_rises_with_every_agent():
    torch.manual_seed(0)
    net = QMIXNet(observation_size=4, n_actions=3, agents=2)
    states = torch.randn(64, 8)
    w1, w2 = net.mixer.weights(states)
    assert bool((w1 >= 0).all()) and bool((w2 >= 0).all())
    agent_q = torch.randn(64, 2, requires_grad=True)
    net.mixer(agent_q, states).sum().backward()
    assert bool((agent_q.grad >= 0).all())


def adding_net(values=(1.0, 3.0)) -> QMIXNet:
    """Agents valuing actions 0 and 1 at ``values`` anywhere; a mixer that adds the agents'
    values (W1 = 1, b1 = 0, w2 = 1, b2 = 0, so Q_tot = elu(q_0 + q_1))."""
    net = QMIXNet(observation_size=3, n_actions=2, agents=2, embed=1)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
        net.agent_q.net[-1].bias.copy_(torch.tensor(values))
        net.mixer.hyper_w1.bias.fill_(1.0)
        net.mixer.hyper_w2.bias.fill_(1.0)
    return net


def test_targets_by_hand_with_a_mixer_that_adds():
    net = adding_net()
    rewards = torch.tensor([[0.5, 0.5], [4.0, 4.0]])  # each agent half of the team's 1 and 8
    dones = torch.tensor([False, True])
    targets = qmix_targets(net, net, rewards, dones, torch.zeros(2, 2, 3), gamma=0.9)
    # both agents' greedy action is 1 (value 3): Q'_tot = 6; y = 1 + 0.9 x 6, and 8 at the end
    assert targets.tolist() == pytest.approx([6.4, 8.0])
    assert net.q_total(torch.zeros(1, 2, 3), torch.tensor([[0, 1]])).item() == pytest.approx(4.0)


def test_the_online_net_chooses_the_next_actions_and_the_target_net_values_them():
    """Double Q-learning: the online net prefers action 0 (3 against 1), the target net values
    action 0 at 1 for each agent, so Q'_tot = 2 and y = 1 + 0.9 x 2 (the target's own choice,
    action 1, would give 1 + 0.9 x 6)."""
    online, target = adding_net(values=(3.0, 1.0)), adding_net(values=(1.0, 3.0))
    targets = qmix_targets(online, target, torch.tensor([[0.5, 0.5]]), torch.tensor([False]),
                           torch.zeros(1, 2, 3), gamma=0.9)
    assert targets.tolist() == pytest.approx([2.8])


@pytest.mark.timeout(180)
def test_qmix_learns_the_two_step_games_coordinated_eight(tmp_path):
    with Trainer(env="TwoStepGame", algo="qmix", seed=0, logdir=str(tmp_path), max_frames=100_000) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
    assert result["reason"] == "solved" and result["episode_reward_mean"] >= 7.9, result  # only 8 reaches 7.9


def test_qmix_needs_several_agents(tmp_path):
    with pytest.raises(ConfigError, match="--algo qmix needs a multi-agent env"):
        Trainer(env="CartPole-v1", algo="qmix", logdir=str(tmp_path))
