"""TD3 (``--algo td3``): the noisy deterministic policy, the smoothed targets by hand, the
delayed actor and target steps and the warm-up of uniform actions; its learning test is
SAC's (tests/test_sac.py)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from a3c.algos import get_algorithm
from a3c.algos.optimizer import new_version_counter
from a3c.algos.sac.nets import ActorAndTwinCritics
from a3c.algos.td3.learner import TD3Update
from a3c.config import make_config
from a3c.env_runner import VectorActor
from a3c.lib.distributions import NoisyDeterministic
from a3c.lib.envs import describe_env
from tests import toy_envs  # noqa: F401  (registers Reach-v0)
from tests.test_sac import small_batch

BOX = NoisyDeterministic(1, (-2.0,), (2.0,), noise=0.1)  # centre 0, half-width 2


def test_the_greedy_action_is_the_squashed_head_and_samples_add_noise_of_that_width_within_the_bounds():
    head = torch.tensor([[0.5], [3.0]])
    assert torch.allclose(BOX.greedy(head), 2.0 * torch.tanh(head))
    torch.manual_seed(0)
    near_centre = BOX.sample(torch.full((20_000, 1), 0.1))
    assert float((near_centre - 2.0 * np.tanh(0.1)).std()) == pytest.approx(0.1 * 2.0, rel=0.03)
    near_bound = BOX.sample(torch.full((20_000, 1), 3.0))  # greedy 1.99: half the draws land past 2
    assert float(near_bound.max()) == 2.0 and float((near_bound == 2.0).float().mean()) == pytest.approx(0.5, abs=0.02)
    assert torch.equal(NoisyDeterministic(1, (-2.0,), (2.0,), noise=0.0).sample(head), BOX.greedy(head))


def test_the_target_smoothing_noise_is_clipped_before_the_bounds():
    torch.manual_seed(0)
    actions = torch.zeros(20_000, 1)
    smoothed = BOX.perturbed(actions, noise=1.0, noise_clip=0.5)  # std of 2, clipped to 1
    assert float(smoothed.abs().max()) == 1.0 and float((smoothed.abs() == 1.0).float().mean()) > 0.5
    assert float(BOX.perturbed(torch.full((1000, 1), 1.8), noise=1.0, noise_clip=0.5).max()) == 2.0


def make_update(policy_delay: int = 2, policy_noise: float = 0.0) -> TD3Update:
    torch.manual_seed(1)
    net = ActorAndTwinCritics(3, BOX, 1, hidden=16)
    return TD3Update(net, lr=1e-3, adam_eps=1e-8, clip_grad=1e9, gamma=0.9, tau=0.5, policy_noise=policy_noise,
                     noise_clip=0.5, policy_delay=policy_delay, device="cpu", version_counter=new_version_counter())


def test_targets_by_hand_from_the_target_actor_and_the_smaller_target_critic():
    update, batch = make_update(), small_batch()
    with torch.no_grad():  # the online net moved away: the targets must read the target copies
        for parameter in update.net.parameters():
            parameter.add_(1.0)
        last = torch.as_tensor(batch.last_states)
        action = 2.0 * torch.tanh(update.target_net["actor"](last))
        inputs = torch.cat([last, action], dim=-1)
        smaller = torch.minimum(*(critic(inputs)[:, 0] for critic in update.target_net["critics"]))
    expected = torch.as_tensor(batch.rewards) + 0.9 * (1.0 - torch.as_tensor(batch.dones).float()) * smaller
    assert torch.allclose(update.targets(batch), expected, atol=1e-6)


def test_the_actor_and_the_target_nets_move_every_second_step_and_the_critics_every_step():
    update, batch = make_update(policy_delay=2), small_batch()
    net, weights = update.net, np.ones(16, np.float32)
    actor, critics, targets = (copy.deepcopy(part.state_dict()) for part in (net.actor, net.critics, update.target_net))

    def moved(part: torch.nn.Module, before: dict) -> bool:
        return any(not torch.equal(value, before[key]) for key, value in part.state_dict().items())

    first, _ = update.step(batch, weights)
    assert moved(net.critics, critics) and not moved(net.actor, actor) and not moved(update.target_net, targets)
    assert first["loss_actor"] == 0.0 and first["grad_norm"] == 0.0  # no actor step yet
    seen = {}
    update.optimizer.step = lambda step=update.optimizer.step: (seen.update(
        {id(p): p.grad.clone() for p in net.actor.parameters()}), step())
    online_before = copy.deepcopy(net.state_dict())
    second, _ = update.step(batch, weights)
    assert moved(net.actor, actor) and second["loss_actor"] != 0.0
    # the actor's gradient is its own loss's, -Q_1(s, actor(s)), taken before the step
    reference = ActorAndTwinCritics(3, BOX, 1, hidden=16)
    reference.load_state_dict(online_before)
    states = torch.as_tensor(batch.states)
    loss = -reference.q_values(states, BOX.greedy(reference(states)[0]))[:, 0].mean()
    assert second["loss_actor"] == pytest.approx(float(loss.detach()), abs=1e-6)
    for parameter, grad in zip(net.actor.parameters(), torch.autograd.grad(loss, list(reference.actor.parameters()))):
        assert torch.allclose(seen[id(parameter)], grad, atol=1e-6)
    # then the targets go half the way (tau 0.5) to the online nets
    for key, value in update.target_net.state_dict().items():
        part, rest = key.split(".", 1)
        online = getattr(net, part).state_dict()[rest]
        assert torch.allclose(value, targets[key] + 0.5 * (online - targets[key]), atol=1e-6)
    assert update.policy_version == 2  # every critic step is an optimizer step


def test_the_workers_act_uniformly_until_the_learners_first_step_then_by_the_actor():
    config = make_config(env="tests.toy_envs:Reach-v0", algo="td3")
    algorithm = get_algorithm("td3")
    net = algorithm.build_policy_net(describe_env("tests.toy_envs:Reach-v0"), vars(config))
    with torch.no_grad():  # the actor's greedy action: 2 tanh(0.25) = 0.49, wherever it is
        net.actor[-1].weight.zero_()
        net.actor[-1].bias.fill_(0.25)
    version = [0]
    torch.manual_seed(0)
    actor = VectorActor("tests.toy_envs:Reach-v0", 64, 1, 0.99, net, lambda: version[0], seed=0,
                        **algorithm.acting_options(config, 0))
    uniform = np.concatenate([actor.step().batch.actions for _ in range(3)])
    assert -2.0 <= uniform.min() < -1.6 and 1.6 < uniform.max() <= 2.0  # Reach's bounds are [-2, 2]
    version[0] = 1  # the learner stepped: read before the next forward pass, used from the step after
    actor.step()
    chosen = np.concatenate([actor.step().batch.actions for _ in range(3)])
    # the greedy 0.49 with noise of 0.1 half-widths: a std of 0.2
    assert abs(float(chosen.mean()) - 2 * np.tanh(0.25)) < 0.05 and float(chosen.std()) == pytest.approx(0.2, abs=0.03)
