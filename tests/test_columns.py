"""The payload seam: an algorithm defined here declares two columns of its own (a large one and
a small one), its sender fills them in the worker, and the learner reads them back intact
on the process and serial backends (here) and on Ray (tests/ray_scenarios.py imports this algorithm);
nothing in the channel, worker, pools or trainer names them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from a3c import Trainer
from a3c.algos import register
from a3c.algos.a3c import A3C
from a3c.algos.a3c.learner import A3CLearner
from a3c.lib.columns import Column
from a3c.transport.worker import TransitionSender

STAMPED_COLUMNS = [Column("stamp", "float32", (2,)), Column("reward_x2", "float64")]


def stamps(batch) -> dict[str, np.ndarray]:
    """What the sender adds to each row: (sum of the observation, action) and twice the reward."""
    return {"stamp": np.stack([batch.states.sum(axis=1), batch.actions], axis=1).astype(np.float32),
            "reward_x2": batch.rewards.astype(np.float64) * 2}


class StampingSender(TransitionSender):
    def send(self, batch) -> bool:
        batch.extras = stamps(batch)
        return super().send(batch)


class StampCheckingLearner(A3CLearner):
    """A3C's learner that first checks every row's stamps against its own columns."""

    def __init__(self, *args):
        super().__init__(*args)
        self.rows_checked = 0
        self.rows_wrong = 0
        self.workers_seen: set[int] = set()

    def consume(self, message, frame: int, episodes: int = 0):
        expected, received = stamps(message.batch), message.batch.extras
        right = (np.isclose(received["stamp"], expected["stamp"]).all(axis=1)
                 & (received["reward_x2"] == expected["reward_x2"]) & (received["reward_x2"].dtype == np.float64))
        self.rows_checked += len(right)
        self.rows_wrong += int((~right).sum())
        self.workers_seen.add(message.worker_id)
        return super().consume(message, frame)


class Stamped(A3C):
    name = "stamped"
    summary = "A3C whose workers send two columns of their own (a test's algorithm)"

    def payload(self, config, env_info, net):
        return super().payload(config, env_info, net).with_columns(STAMPED_COLUMNS)

    def make_sender(self, config, net, policy_version, outbox):
        return StampingSender(net, policy_version, outbox)

    def make_learner(self, config, net, version_counter, env_info):
        return StampCheckingLearner(config, net, version_counter)


register(Stamped())


def stamped_run(logdir: Path, frames: int, **settings) -> dict:
    """Train ``stamped`` on CartPole for ``frames`` frames and on until rows of both workers
    arrived (one may start seconds after the other on a loaded machine); what its learner saw."""
    with Trainer(env="CartPole-v1", algo="stamped", processes=2, envs_per_process=2, logdir=str(logdir),
                 stop_reward=1e9, **settings) as trainer:
        trainer.train(frames=frames)
        learner = trainer._run.learner
        while len(learner.workers_seen) < 2:
            trainer.train(frames=500)
        return {"rows_checked": learner.rows_checked, "rows_wrong": learner.rows_wrong,
                "workers_seen": sorted(learner.workers_seen), "transitions": trainer._run.counters.transitions}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["mp", "serial"])
def test_declared_columns_reach_the_learner_intact(tmp_path, backend):
    seen = stamped_run(tmp_path, 1000, backend=backend)
    assert seen["rows_wrong"] == 0 and seen["rows_checked"] == seen["transitions"] >= 1000, seen
    assert seen["workers_seen"] == [0, 1], seen
