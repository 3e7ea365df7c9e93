"""The algorithm seam: an algorithm defined here, in the test, registered with one call,
runs through ``Trainer`` (children, learner, TensorBoard terms), a checkpoint round trip
with its own extras, ``compute_action`` and ``play``; and what each side imports."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

import pytest
import torch
from torch import nn

from a3c import ConfigError, ConsoleReporter, Trainer
from a3c.algos import algorithm_names, register
from a3c.algos.a3c.loss import policy_loss
from a3c.algos.base import Algorithm
from a3c.algos.optimizer import clip_and_step, make_adam
from a3c.lib.distributions import CATEGORICAL
from a3c.lib.models import build_net, forward
from a3c.lifecycle.checkpoint import load_checkpoint
from a3c.play import play
from tests.conftest import ROOT
from tests.helpers import scalars

COUNTING = "tests.toy_envs:Counting-v0"


@dataclasses.dataclass
class ReinforceStats:
    loss_policy: float
    grad_norm: float
    policy_lag: float | None = None


class ReinforceLearner:
    """Policy gradient on the n-step returns, no baseline; counts its steps as its extra, and
    keeps each message's transitions with the frame count the trainer handed over."""

    stats_type = ReinforceStats

    def __init__(self, config, net: nn.Module, version_counter: torch.Tensor):
        self.net = net
        self.optimizer = make_adam(net, config.lr, config.adam_eps)
        self.gamma, self.clip_grad = config.gamma, config.clip_grad
        self.version_counter = version_counter
        self.steps_taken = 0
        self.frames_handed: list[tuple[int, int]] = []

    @property
    def policy_version(self) -> int:
        return int(self.version_counter)

    def begin(self, writer, frame, restored, reporter) -> None:
        writer.add_scalar("reinforce/begun", 1.0, frame)

    def consume(self, message, frame: int, episodes: int = 0) -> list[ReinforceStats]:
        self.frames_handed.append((message.transitions, frame))
        batch = message.batch
        bootstrap = torch.as_tensor(batch.last_values) * self.gamma ** torch.as_tensor(batch.steps)
        returns = torch.as_tensor(batch.rewards) + torch.where(torch.as_tensor(batch.dones), 0.0, bootstrap)
        logits, _ = forward(self.net, torch.as_tensor(batch.states))
        loss = policy_loss(CATEGORICAL.log_prob(logits, torch.as_tensor(batch.actions)), returns)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = clip_and_step(self.net, self.optimizer, self.clip_grad, float(loss.detach()),
                                  self.version_counter)
        self.steps_taken += 1
        return [ReinforceStats(float(loss.detach()), grad_norm)]

    def log_interval(self, writer, frame) -> None:
        writer.add_scalar("reinforce/steps_taken", self.steps_taken, frame)

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        return {"reinforce_steps": self.steps_taken}

    def load_extras(self, state: dict[str, Any]) -> None:
        self.steps_taken = state["reinforce_steps"]


class Reinforce(Algorithm):
    name = "reinforce"
    summary = "policy gradient without a baseline (a test's algorithm)"

    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"processes": 1, "envs_per_process": 2, "learner_threads": 1, "batch_size": 8,
                "reward_steps": 2, "gamma": 0.5, "lr": 1e-3, "clip_grad": 1.0, "adam_eps": 1e-8}

    def check(self, config, atari: bool) -> None:
        if atari:
            raise ConfigError("--algo reinforce is for vector observations")

    def build_policy_net(self, env_info, settings: Mapping[str, Any]) -> nn.Module:
        return build_net(env_info)

    def make_learner(self, config, net, version_counter, env_info) -> ReinforceLearner:
        return ReinforceLearner(config, net, version_counter)


register(Reinforce())


def test_a_registered_algorithm_trains_saves_restores_acts_and_plays(tmp_path, capsys):
    assert "reinforce" in algorithm_names()
    with pytest.raises(ConfigError, match="--algo reinforce is for vector observations"):
        Trainer(env="PongNoFrameskip-v4", algo="reinforce", logdir=str(tmp_path))
    with Trainer(env=COUNTING, algo="reinforce", logdir=str(tmp_path), stop_reward=1e9,
                 report_interval=0.2, reporter=ConsoleReporter()) as trainer:
        assert trainer.config.batch_size == 8 and trainer.config.gamma == 0.5  # its family values
        while (result := trainer.train(frames=400))["policy_version"] < 20:
            assert not result["done"], result
        assert result["loss_policy"] is not None and result["grad_norm"] > 0
        start_line = capsys.readouterr().out.splitlines()[0]
        assert " | reinforce | " in start_line  # its start line names it plainly
        path = trainer.save()
        steps_taken = trainer._run.learner.steps_taken
        handed = trainer._run.learner.frames_handed  # vector envs: a frame a transition
        assert [frame for _, frame in handed] == list(accumulate(transitions for transitions, _ in handed))
        assert handed[-1][1] == trainer._run.counters.frames
    state = load_checkpoint(path)
    assert state["config"]["algo"] == "reinforce" and state["reinforce_steps"] == steps_taken > 0
    events = scalars(path.parent)
    assert {"reinforce/begun", "loss/policy", "train/grad_norm"} <= set(events.Tags()["scalars"])

    restored = Trainer.restore(path)
    assert restored.algorithm.name == "reinforce"
    assert restored._learner_state().learner.steps_taken == steps_taken
    assert restored.compute_action([3.0], greedy=True) in (0, 1)
    played = play(str(path), episodes=2, greedy=True)
    assert [episode.reward for episode in played] == [15.0, 15.0]  # Counting pays 1+..+5 whatever the actions


def test_a_checkpoint_of_one_algorithm_is_refused_by_another_in_one_line(tmp_path):
    with Trainer(env=COUNTING, algo="reinforce", logdir=str(tmp_path)) as trainer:
        path = trainer.save()
    with pytest.raises(ConfigError, match="trained with --algo reinforce, this run is --algo a3c"):
        Trainer(env=COUNTING, logdir=str(tmp_path), resume=str(path))


def _modules_after(code: str) -> set[str]:
    finished = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                              cwd=ROOT, capture_output=True, text=True, check=True)
    return set(finished.stdout.split())


LEARNER_SIDE = {"tensorboardX", "a3c.algos.optimizer", "a3c.algos.a3c.learner", "a3c.algos.dqn.learner",
                "a3c.algos.ppo.learner",
                "a3c.lifecycle.trainer", "a3c.lifecycle.run", "a3c.lib.replay"}


def test_the_acting_side_imports_no_learner_optimizer_or_writer():
    # both workers' modules in one process: what either imports is in the set
    code = ("import a3c.transport.ray_actor, a3c.transport.worker\nfrom a3c.algos import BUILT_IN\n"
            "from a3c.config import make_config\n"
            "for algorithm in BUILT_IN:\n"
            "    config = make_config(env='CartPole-v1', algo=algorithm.name)\n"
            "    algorithm.acting_options(config, 0)")
    assert _modules_after(code) & LEARNER_SIDE == set()


def test_a_config_is_made_without_torch_ray_or_the_machine_checks():
    loaded = _modules_after("from a3c.config import make_config\n"
                            "make_config(env='PongNoFrameskip-v4', algo='dqn')\n"
                            "make_config(env='CartPole-v1', mode='grads')")
    assert not {"torch", "ray", "a3c.preflight"} & loaded
