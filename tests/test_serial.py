"""``--backend serial``: the workers stepped in turn in the learner's process. A seed gives the
same run, each algorithm's messages reach its learner, and a worker's failure ends or
restarts as on processes, with the traceback of the line that raised."""
import json
import multiprocessing

import pytest
import torch

from a3c import Trainer
from a3c.lib.episodes import CallbackError
from a3c.lifecycle.callbacks import Callback
from a3c.lifecycle.checkpoint import load_checkpoint
from a3c.lifecycle.results import exit_code
from tests.helpers import only_run_dir

pytestmark = pytest.mark.timeout(120)


def weights_after(tmp_path, seed: int, **settings) -> tuple[dict[str, torch.Tensor], dict]:
    """The net's weights and the counters of a serial CartPole run of 8,000 frames."""
    with Trainer(env="CartPole-v1", backend="serial", processes=2, envs_per_process=4, seed=seed,
                 max_frames=8_000, stop_reward=1e9, logdir=str(tmp_path), **settings) as trainer:
        while not trainer.train()["done"]:
            pass
    checkpoint = load_checkpoint(only_run_dir(tmp_path) / "checkpoint.pt")
    return checkpoint["model"], checkpoint["counters"]


@pytest.mark.parametrize("mode", ["data", "grads"])
def test_a_seed_gives_the_same_weights_and_counters_every_time(tmp_path, mode):
    first, first_counters = weights_after(tmp_path / "a", 3, mode=mode)
    second, second_counters = weights_after(tmp_path / "b", 3, mode=mode)
    other, _ = weights_after(tmp_path / "c", 4, mode=mode)
    assert first_counters == second_counters and first_counters["episodes"] > 0
    assert all(torch.equal(first[name], second[name]) for name in first)
    assert not all(torch.equal(first[name], other[name]) for name in first)


def test_a_multi_agent_algorithms_joint_rows_reach_its_learner_until_the_goal(tmp_path):
    # PPO, DQN, Box actions and the LSTM run on this backend in their own tests
    with Trainer(env="TwoStepGame", algo="mappo", backend="serial", seed=0, logdir=str(tmp_path)) as trainer:
        while not (result := trainer.train(seconds=60))["done"]:
            pass
    assert result["reason"] == "solved" and result["episode_reward_mean"] >= trainer.config.stop_reward
    assert multiprocessing.active_children() == []  # no worker was a process


def test_a_crashing_env_is_restarted_then_ends_the_run_with_the_line_that_raised(tmp_path):
    # Every Crashing worker raises on its third step: two restarts, then the third death ends the run.
    with Trainer(env="tests.toy_envs:Crashing-v0", backend="serial", logdir=str(tmp_path),
                 max_worker_restarts=2) as trainer:
        while not (result := trainer.train())["done"]:
            pass
    assert result["reason"] == "worker_died" and exit_code(result["reason"]) == 1
    assert "no restarts left (2 allowed)" in result["message"]
    assert 'toy_envs.py", line' in result["message"] and "toy env failure on purpose" in result["message"]
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    assert summary["worker_restarts"] == 2


class RaisesAtEpisodeEnd(Callback):
    def on_episode_end(self, *, episode, **kwargs):
        raise ValueError("the user's bug in a worker")


def test_a_callback_raising_in_a_worker_ends_the_run_at_once(tmp_path):
    trainer = Trainer(env="tests.toy_envs:Counting-v0", backend="serial", callbacks=[RaisesAtEpisodeEnd()],
                      logdir=str(tmp_path), stop_reward=1e9)
    with pytest.raises(CallbackError, match="the user's bug in a worker"):
        trainer.train(seconds=60)
    summary = json.loads((only_run_dir(tmp_path) / "summary.json").read_text())
    assert summary["reason"] == "error" and summary["worker_restarts"] == 0
