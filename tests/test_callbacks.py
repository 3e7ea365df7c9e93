"""Callbacks at every step: the worker-side hooks with RLlib's episode (user_data, custom
metrics, histograms) on a toy env whose every episode is known by hand and on CartPole
with the notes' pole-angle callback; the learner-side hooks; --callbacks module:Class;
a callback raising in a worker ending the run with its traceback."""
from __future__ import annotations

import json
import multiprocessing

import numpy as np
import pytest

from a3c import Callback, ConfigError, Trainer
from a3c.config import parse_config
from a3c.lib.episodes import CallbackError
from tests.helpers import only_run_dir, scalars

COUNTING = "tests.toy_envs:Counting-v0"  # 5 steps paying 1..5: a return of 15; the observation ends at t = 5


class CountingMetrics(Callback):
    """Per episode: its steps counted in user_data, its length, return and last t."""

    def __init__(self):
        self.steps_taken = 0

    def on_episode_start(self, *, episode, **kwargs):
        episode.user_data["steps"] = 0

    def on_episode_step(self, *, episode, env, env_index, **kwargs):
        episode.user_data["steps"] += 1

    def on_episode_end(self, *, episode, **kwargs):
        episode.custom_metrics["steps"] = episode.user_data["steps"]
        episode.custom_metrics["length"] = episode.length
        episode.custom_metrics["return"] = episode.total_reward
        episode.custom_metrics["last_t"] = float(episode.last_observation[0]) % 100
        episode.hist_data["ts"] = [float(episode.last_observation[0]) % 100] * 3

    def on_learn_on_batch(self, trainer, result):
        self.steps_taken += 1


class PoleAngle(Callback):
    """The RLlib notes' pole-angle callback with its signatures changed (and its imports)."""

    def on_episode_start(self, *, episode, **kwargs):
        episode.user_data["pole_angles"] = []

    def on_episode_step(self, *, episode, **kwargs):
        pole_angle = abs(episode.last_observation_for()[2])
        episode.user_data["pole_angles"].append(pole_angle)

    def on_episode_end(self, *, episode, **kwargs):
        pole_angle = np.mean(episode.user_data["pole_angles"])
        episode.custom_metrics["pole_angle"] = pole_angle
        episode.hist_data["pole_angles"] = episode.user_data["pole_angles"]


class RaisesInWorker(Callback):
    def on_episode_end(self, *, episode, **kwargs):
        raise ValueError("the user's bug in a worker")


@pytest.mark.timeout(120)
def test_worker_hooks_fill_custom_metrics_known_by_hand(tmp_path):
    callback = CountingMetrics()
    # Counting at a walker's pace: seconds of reports that leave the cores to the other tests
    with Trainer(env="tests.toy_envs:Paced-v0", callbacks=[callback], processes=2, envs_per_process=2, logdir=str(tmp_path),
                 stop_reward=1e9, report_interval=0.2) as trainer:
        result = trainer.train(seconds=2.0)  # several reports after the first episodes
        while not result["custom_metrics"]:  # a loaded host may not have finished one episode yet
            result = trainer.train(seconds=1.0)
        result = trainer.train(seconds=1.0)  # and reports since, which wrote them to TensorBoard
    assert result["custom_metrics"] == {
        "steps_mean": 5.0, "steps_min": 5.0, "steps_max": 5.0, "length_mean": 5.0, "length_min": 5.0,
        "length_max": 5.0, "return_mean": 15.0, "return_min": 15.0, "return_max": 15.0,
        "last_t_mean": 5.0, "last_t_min": 5.0, "last_t_max": 5.0}
    assert callback.steps_taken > 0  # the learner's hook, in this process
    run_dir = only_run_dir(tmp_path)
    events = scalars(run_dir)
    assert {event.value for event in events.Scalars("custom/length")} == {5.0}
    assert events.Scalars("custom_metrics/return_mean")[-1].value == 15.0
    records = [json.loads(line) for line in (run_dir / "progress.jsonl").read_text().splitlines()]
    assert records[-1]["custom_metrics"]["last_t_max"] == 5.0


@pytest.mark.timeout(120)
def test_the_notes_pole_angle_callback_on_cartpole(tmp_path):
    with Trainer(env="CartPole-v1", callbacks=[PoleAngle()], logdir=str(tmp_path), stop_reward=1e9,
                 report_interval=0.5) as trainer:
        result = trainer.train(frames=3000)
    metrics = result["custom_metrics"]
    # CartPole ends an episode once the pole passes 0.2095 rad: mean angles lie below that
    assert 0.0 < metrics["pole_angle_min"] <= metrics["pole_angle_mean"] <= metrics["pole_angle_max"] < 0.21
    assert "custom/pole_angles" in scalars(only_run_dir(tmp_path)).Tags()["histograms"]


@pytest.mark.timeout(120)
def test_a_callback_raising_in_a_worker_ends_the_run_with_its_traceback(tmp_path):
    trainer = Trainer(env=COUNTING, callbacks=[RaisesInWorker()], logdir=str(tmp_path), stop_reward=1e9)
    with pytest.raises(CallbackError, match="the user's bug in a worker") as raised:
        trainer.train(seconds=60)
    assert "RaisesInWorker.on_episode_end raised in worker" in str(raised.value)
    assert multiprocessing.active_children() == []  # every worker stopped
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "error"


def test_callbacks_by_module_and_class_on_the_command_line():
    config = parse_config(["-n", "c", "--env", "CartPole-v1", "--callbacks", "tests.test_callbacks:PoleAngle"])
    assert config.callbacks == "tests.test_callbacks:PoleAngle"
    with pytest.raises(ConfigError, match="--callbacks 'tests.test_callbacks:Nothing': AttributeError"):
        Trainer(env="CartPole-v1", callbacks="tests.test_callbacks:Nothing")
    trainer = Trainer(env="CartPole-v1", callbacks="tests.test_callbacks:PoleAngle")
    assert [type(callback).__name__ for callback in trainer.callbacks] == ["PoleAngle"]
