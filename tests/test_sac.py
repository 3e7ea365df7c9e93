"""SAC (``--algo sac``): the squashed Gaussian's log-densities, the soft targets by hand, each
part moved by its own loss only, the temperature's direction, and a policy learned (TD3's too)."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from a3c import Trainer
from a3c.algos.optimizer import new_version_counter
from a3c.algos.sac.learner import SACUpdate
from a3c.algos.sac.loss import soft_targets
from a3c.algos.sac.nets import SACNet
from a3c.config import ConfigError, make_config
from a3c.lib.distributions import SquashedGaussian
from a3c.lib.experience import TransitionBatch
from a3c.play import play
from a3c.preflight import preflight
from tests import toy_envs  # registers Reach-v0

BOX = SquashedGaussian(1, (-2.0,), (2.0,))


def test_a_squashed_actions_log_density_is_the_gaussians_less_the_log_of_the_squashs_slope():
    mean, log_std, draw = 0.3, -0.5, 0.7
    action = 2.0 * math.tanh(draw)  # the box [-2, 2]: centre 0, half-width 2
    gaussian = -0.5 * ((draw - mean) / math.exp(log_std)) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    slope = 2.0 * (1 - math.tanh(draw) ** 2)
    head = torch.tensor([[mean, log_std]])
    assert BOX.log_prob(head, torch.tensor([[action]])).item() == pytest.approx(gaussian - math.log(slope), abs=1e-5)
    assert BOX.greedy(head).item() == pytest.approx(2.0 * math.tanh(mean))


def test_the_squashed_density_integrates_to_one_over_the_box_and_scores_its_own_draws():
    head = torch.tensor([[1.2, 0.4]])  # pushed towards the upper bound, wide
    actions = torch.linspace(-2.0, 2.0, 200_001)[1:-1, None]
    density = BOX.log_prob(head.expand(len(actions), 2), actions).exp()
    assert float(torch.trapezoid(density, actions[:, 0])) == pytest.approx(1.0, abs=2e-3)
    torch.manual_seed(0)
    drawn, _ = BOX.sample_with_log_prob(head.expand(1000, 2))
    assert drawn.abs().max() < 2.0  # always inside the bounds
    narrower = torch.tensor([[0.5, -0.5]]).expand(1000, 2)  # draws away from the bounds, where float32's
    drawn, log_probs = BOX.sample_with_log_prob(narrower)  # atanh gives back the draw's digits
    assert torch.allclose(log_probs, BOX.log_prob(narrower, drawn), atol=1e-3)


def test_soft_targets_by_hand():
    targets = soft_targets(rewards=torch.tensor([1.0, 2.0, 0.5]), dones=torch.tensor([False, True, False]),
                           steps=torch.tensor([1, 3, 2]), next_q=torch.tensor([[5.0, 4.0], [7.0, 9.0], [1.0, 3.0]]),
                           next_log_probs=torch.tensor([-1.0, 0.5, 2.0]), temperature=0.2, gamma=0.9)
    # the smaller critic, less 0.2 log pi, discounted by 0.9 ** steps; nothing after a termination
    assert torch.allclose(targets, torch.tensor([1.0 + 0.9 * (4.0 + 0.2), 2.0, 0.5 + 0.81 * (1.0 - 0.4)]))


def small_batch(rows: int = 16) -> TransitionBatch:
    rng = np.random.default_rng(0)
    return TransitionBatch(states=rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
                           actions=rng.uniform(-2, 2, (rows, 1)).astype(np.float32),
                           rewards=rng.normal(size=rows).astype(np.float32), dones=rng.random(rows) < 0.2,
                           steps=np.ones(rows, np.int64), last_states=rng.uniform(-1, 1, (rows, 3)).astype(np.float32))


def make_update(temperature: float | None = None, log_std: float | None = None) -> SACUpdate:
    torch.manual_seed(1)
    net = SACNet(3, BOX, hidden=16)
    if log_std is not None:  # the actor's log-std head gives log_std whatever the observation
        with torch.no_grad():
            net.actor[-1].weight[1:].zero_()
            net.actor[-1].bias[1:].fill_(log_std)
    return SACUpdate(net, lr=1e-3, adam_eps=1e-8, clip_grad=1e9, gamma=0.9, tau=0.5, target_entropy=-1.0,
                     temperature=temperature, device="cpu", version_counter=new_version_counter())


def test_each_part_is_moved_by_its_own_loss_alone():
    """The critics' gradients are the critic loss's only, the actor's the actor loss's (which
    also reaches the critics, through Q of its own action, and must not move them)."""
    update, batch = make_update(), small_batch()
    net = update.net
    temperature = float(net.log_temperature.detach().exp())
    seen = {}
    update.optimizer.step = lambda: seen.update({id(p): p.grad.clone() for p in net.parameters() if p.grad is not None})
    torch.manual_seed(5)
    update.step(batch, np.ones(len(batch), np.float32))

    torch.manual_seed(5)  # the same draws: the targets' first, then the actor's
    targets = update.targets(batch, temperature)
    states = torch.as_tensor(batch.states)
    q_values = net.q_values(states, torch.as_tensor(batch.actions))
    loss_critic = (q_values - targets[:, None]).pow(2).mean(dim=0).sum()
    for parameter, grad in zip(net.critics.parameters(), torch.autograd.grad(loss_critic, list(net.critics.parameters()))):
        assert torch.allclose(seen[id(parameter)], grad, atol=1e-6)
    actions, log_probs = net.distribution.sample_with_log_prob(net(states)[0])
    loss_actor = (temperature * log_probs - net.q_values(states, actions).min(dim=-1).values).mean()
    for parameter, grad in zip(net.actor.parameters(), torch.autograd.grad(loss_actor, list(net.actor.parameters()))):
        assert torch.allclose(seen[id(parameter)], grad, atol=1e-6)
    # the temperature's: -d/d log(alpha) of log(alpha) (log pi + target entropy)
    assert seen[id(net.log_temperature)].item() == pytest.approx(-float((log_probs.detach() - 1.0).mean()), abs=1e-5)


@pytest.mark.parametrize("log_std, rises", [(-4.0, True), (0.0, False)])
def test_the_temperature_rises_while_the_policy_is_surer_than_the_target_entropy_and_falls_after(log_std, rises):
    update = make_update(log_std=log_std)
    before = float(update.net.log_temperature.detach())
    update.step(small_batch(), np.ones(16, np.float32))
    assert (float(update.net.log_temperature.detach()) > before) == rises


def test_a_fixed_temperature_stays():
    update = make_update(temperature=0.2)
    figures, _ = update.step(small_batch(), np.ones(16, np.float32))
    assert figures["temperature"] == 0.2 and float(update.net.log_temperature.detach()) == 0.0  # the net's is not used
    assert len(update.optimizer.param_groups) == 2  # the actor's and the critics'


@pytest.mark.timeout(180)
@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_sac_and_td3_learn_to_reach_act_within_the_bounds_and_keep_the_lag_small(tmp_path, algo):
    """Random actions score about -13 an episode, the target reached 0."""
    with Trainer(env="tests.toy_envs:Reach-v0", algo=algo, seed=0, logdir=str(tmp_path), backend="serial", lr=1e-3,
                 batch_size=64, replay_ratio=64, learning_starts=300, stop_reward=-3.0, max_frames=6_000) as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result
        assert result["policy_lag"] < 50  # a few steps, not the 2 batches other algorithms keep in flight
        for target in (-0.8, 0.1, 0.6):
            assert trainer.compute_action(np.array([target], np.float32), greedy=True)[0] == pytest.approx(target, abs=0.2)
        path = trainer.save()
    assert np.mean([episode.reward for episode in play(str(path), episodes=5, greedy=True)]) > -1.0


class CameraReach(toy_envs.SideImageEnv):
    """A camera image, and a Box action."""

    def __init__(self):
        super().__init__(dict_space=False)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


gym.register("CameraReach-v0", entry_point=CameraReach)


def test_images_are_refused_before_any_worker():
    with pytest.raises(ConfigError, match="--algo sac reads vector observations through MLPs; CameraReach-v0's hold"):
        preflight(make_config(env="CameraReach-v0", algo="sac"))


class UnboundedReach(toy_envs.ReachEnv):
    """``Reach-v0`` with Box actions of infinite bounds."""

    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)


gym.register("UnboundedReach-v0", entry_point=UnboundedReach)


def test_unbounded_actions_are_refused_where_a_bound_is_needed_and_bounded_ones_pass():
    with pytest.raises(ConfigError, match="--algo sac squashes its actions into their bounds; UnboundedReach-v0's"):
        preflight(make_config(env="UnboundedReach-v0", algo="sac"))
    with pytest.raises(ConfigError, match="--random-frames draws Box actions uniformly within their bounds"):
        preflight(make_config(env="UnboundedReach-v0", algo="ppo", random_frames=100))
    assert preflight(make_config(env="UnboundedReach-v0", algo="ppo")).bounded is False
    assert preflight(make_config(env="tests.toy_envs:Reach-v0", algo="sac", random_frames=100)).bounded
