"""The Python API: one Trainer per run, iterations that continue it, save / restore / act,
callbacks (scalars, stop, curriculum, errors), evaluation; no child outlives a trainer."""
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import psutil
import pytest
import torch

import a3c.lifecycle.trainer
from a3c import Callback, ConfigError, ConsoleReporter, RunEnded, Trainer
from a3c.lifecycle.checkpoint import save_checkpoint
from tests.helpers import scalars

TOY = "tests.toy_envs:TaskCounting-v0"


def no_children() -> bool:
    return multiprocessing.active_children() == []


@pytest.mark.parametrize("settings, named", [
    ({"lr": -1.0}, "--lr must be > 0"),
    ({"gamma": 1.5}, "--gamma must be in (0, 1]"),
    ({"processes": 0}, "--processes must be >= 1"),
    ({"mode": "both"}, "--mode must be one of data, grads"),
    ({"lr": "fast"}, "--lr must be float"),
    ({"batch_size": 2.5}, "--batch-size must be int"),
    ({"learning_rate": 1e-3}, "unknown setting 'learning_rate'"),
    ({"env": "NoSuchEnv-v9"}, "unknown env id"),
])
def test_keywords_are_the_flags_and_are_checked_the_same_way(settings, named, tmp_path):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace("]", r"\]")):
        Trainer(**{"env": "CartPole-v1", "logdir": str(tmp_path), **settings})
    assert no_children() and list(tmp_path.iterdir()) == []


def test_keywords_take_the_env_familys_preset_and_the_cli_defaults(tmp_path):
    trainer = Trainer(env="CartPole-v1", logdir=tmp_path, gamma=0.9)  # a Path is a path too
    assert trainer.config.logdir == str(tmp_path)
    assert (trainer.config.env_id, trainer.config.gamma, trainer.config.lr) == ("CartPole-v1", 0.9, 3e-3)
    assert trainer.config.stop_reward == 475.0 and trainer.config.report_interval == 5.0
    assert no_children()  # nothing starts before train()


def test_iterations_continue_one_run_and_stop_releases_every_child(tmp_path):
    with Trainer(env="CartPole-v1", logdir=str(tmp_path), stop_reward=1e9) as trainer:
        first = trainer.train(frames=3_000)
        second = trainer.train(frames=3_000)
        assert not no_children()
    assert no_children()
    assert first["frames"] >= 3_000 and second["frames"] >= first["frames"] + 3_000
    assert second["transitions"] == second["frames"]  # one frame per CartPole step
    assert second["episodes"] > first["episodes"] > 0
    assert second["iteration"] == 2 and not second["done"] and second["reason"] is None
    assert second["policy_version"] > first["policy_version"] > 0
    for key in ("episode_reward_mean", "loss_policy", "loss_value", "loss_entropy", "policy_lag",
                "frames_per_second", "seconds"):
        assert isinstance(second[key], float), key
    with pytest.raises(RunEnded):
        trainer.train()


def test_train_until_solved_then_save_restore_and_act_without_children(tmp_path):
    with Trainer(env="CartPole-v1", logdir=str(tmp_path / "runs"), seed=1) as trainer:
        while not (result := trainer.train())["done"]:
            pass
        saved = trainer.save(tmp_path / "saved")
    assert result["reason"] == "solved" and result["episode_reward_mean"] >= 475
    summary = json.loads((Path(result["run_dir"]) / "summary.json").read_text())
    assert summary["reason"] == "solved" and summary["frames"] == result["frames"]

    restored = Trainer.restore(saved, stop_reward=1e9)
    env = gym.make("CartPole-v1")
    observation, _ = env.reset(seed=0)
    total = 0.0
    for _ in range(500):
        observation, reward, terminated, truncated, _ = env.step(restored.compute_action(observation, greedy=True))
        total += reward
        if terminated or truncated:
            break
    assert no_children()  # acting needs no child
    assert total >= 200  # a solved policy balances the pole for long
    batch = np.stack([env.observation_space.sample() for _ in range(7)])
    actions = restored.compute_actions(batch)
    assert actions.shape == (7,) and set(actions) <= {0, 1}
    with pytest.raises(ValueError, match=r"CartPole-v1's net takes observations of shape \(4,\); got shape \(5,\)"):
        restored.compute_action(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"takes observations of shape \(4,\); got shape \(5,\)"):
        restored.compute_actions(np.zeros((7, 5), np.float32))
    with pytest.raises(ValueError, match=r"takes observations of shape \(4,\); got shape \(\)"):
        restored.compute_actions(observation)  # one observation where a batch belongs

    with restored:
        going_on = restored.train(frames=2_000)
    assert going_on["frames"] >= result["frames"] + 2_000  # counters continue
    assert restored.config.stop_reward == 1e9 and restored.config.seed == 1
    points = [point.step for point in scalars(tmp_path / "saved").Scalars("loss/total")]
    assert min(points) > result["frames"]  # the TensorBoard axis goes on from the saved frame
    assert no_children()


class Recorder(Callback):
    def __init__(self, stop_after: int | None = None):
        self.episodes, self.results, self.checkpoints = [], [], []
        self.stop_after = stop_after

    def on_episode_result(self, trainer, episode):
        self.episodes.append(episode.length)

    def on_train_result(self, trainer, result):
        self.results.append(result["iteration"])
        trainer.log_scalar("user/iterations", result["iteration"])
        result["user"] = "seen"
        if self.stop_after is not None and result["iteration"] >= self.stop_after:
            trainer.request_stop()

    def on_checkpoint(self, trainer, path):
        self.checkpoints.append(path.name)


def test_callbacks_see_episodes_results_and_checkpoints_log_scalars_and_stop(tmp_path):
    recorder = Recorder(stop_after=2)
    with Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9, callbacks=[recorder]) as trainer:
        first = trainer.train(frames=200)
        second = trainer.train(frames=200)
    assert recorder.results == [1, 2] and first["user"] == "seen"
    assert not first["done"] and second["done"] and second["reason"] == "stopped"
    assert set(recorder.episodes) == {5} and len(recorder.episodes) == second["episodes"]
    assert "checkpoint.pt" in recorder.checkpoints
    run_dir = next(tmp_path.iterdir())
    assert [point.value for point in scalars(run_dir).Scalars("user/iterations")] == [1, 2]
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "stopped"
    assert no_children()


class Failing(Callback):
    def on_train_result(self, trainer, result):
        raise KeyError("the user's bug")


def test_an_exception_in_a_callback_ends_the_run_cleanly_and_reaches_the_caller(tmp_path):
    trainer = Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9, callbacks=[Failing()])
    with pytest.raises(KeyError, match="the user's bug"):
        trainer.train(frames=100)
    assert no_children()
    run_dir = next(tmp_path.iterdir())
    assert (run_dir / "checkpoint.pt").exists()
    assert json.loads((run_dir / "summary.json").read_text())["reason"] == "error"


class Curriculum(Callback):
    """Longer episodes once 20 have been seen at the current length, up to 9 steps."""

    def __init__(self):
        self.length, self.seen, self.lengths = 5, 0, []

    def on_episode_result(self, trainer, episode):
        self.lengths.append(episode.length)
        self.seen += episode.length == self.length
        if self.seen >= 20 and self.length < 9:
            self.length, self.seen = self.length + 2, 0
            trainer.set_env_task(self.length)


def test_curriculum_a_callback_sets_the_env_task_and_each_episode_runs_under_one(tmp_path):
    curriculum = Curriculum()
    with Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9, processes=2, envs_per_process=2,
                 callbacks=[curriculum]) as trainer:
        while curriculum.lengths[-20:] != [9] * 20:  # every env of both children on the last task
            trainer.train(frames=200)
    assert no_children()
    assert set(curriculum.lengths) == {5, 7, 9}  # never a mix of two tasks in one episode
    assert curriculum.lengths[:20] == [5] * 20  # the first change came after 20 episodes of 5


def test_env_task_needs_an_env_with_set_task(tmp_path):
    trainer = Trainer(env="CartPole-v1", logdir=str(tmp_path))
    with pytest.raises(ValueError, match="set_task"):
        trainer.set_env_task(3)
    assert no_children()


def test_evaluation_every_n_iterations_runs_greedy_episodes_and_logs_them(tmp_path, monkeypatch):
    asked_greedy = []

    def recording_act_once(net, algorithm, observation, state, greedy):
        asked_greedy.append(greedy)
        return 0, None

    monkeypatch.setattr(a3c.lifecycle.trainer, "act_once", recording_act_once)
    with Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9, eval_every=2, eval_episodes=3) as trainer:
        results = [trainer.train(frames=100) for _ in range(4)]
    assert ["eval/episode_reward_mean" in result for result in results] == [False, True, False, True]
    assert results[1]["eval/episode_reward_mean"] == 15.0  # 1 + 2 + 3 + 4 + 5, whatever the actions
    assert results[1]["eval/episode_length_mean"] == 5.0 and results[1]["eval/episodes"] == 3
    assert len(asked_greedy) == 2 * 3 * 5 and all(asked_greedy)  # every evaluation step is greedy
    run_dir = next(tmp_path.iterdir())
    assert len(scalars(run_dir).Scalars("eval/episode_reward_mean")) == 2


def test_a_second_trainer_in_the_same_process_after_the_first(tmp_path):
    for index, threads in enumerate((2, 1)):
        with Trainer(env=TOY, logdir=str(tmp_path / str(index)), stop_reward=1e9,
                     learner_threads=threads) as trainer:
            assert trainer.train(frames=100)["frames"] >= 100
            assert torch.get_num_threads() == threads  # each run's learner takes its own setting
        assert no_children()


def test_runs_of_one_name_env_and_seed_in_the_same_second_get_a_folder_each(tmp_path, monkeypatch):
    from a3c.config import make_config
    from a3c.lifecycle.run import RUN_DIR_TRIES, make_run_dir

    monkeypatch.setattr("a3c.lifecycle.run.time.time", lambda: 1_800_000_000.4)
    config = make_config(name="cp", env="CartPole-v1", logdir=str(tmp_path))
    folders = [make_run_dir(config).name for _ in range(3)]
    assert folders == ["cp__CartPole-v1__0__1800000000", "cp__CartPole-v1__0__1800000000-2",
                       "cp__CartPole-v1__0__1800000000-3"]
    for attempt in range(4, RUN_DIR_TRIES + 1):
        (tmp_path / f"cp__CartPole-v1__0__1800000000-{attempt}").mkdir()
    with pytest.raises(ConfigError, match="-2 to -100 exist already"):
        make_run_dir(config)
    blocked = make_config(name="cp", env="CartPole-v1", logdir=str(tmp_path / "summary.json" / "x"))
    (tmp_path / "summary.json").write_text("{}")  # a file where a folder must go: the system's reason
    with pytest.raises(ConfigError, match="cannot create cp__CartPole-v1__0__1800000000 .Not a directory"):
        make_run_dir(blocked)


def test_memory_stays_flat_over_hundreds_of_iterations(tmp_path):
    with Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9) as trainer:
        for _ in range(50):  # allocator, writer and queues settle
            trainer.train(frames=64)
        settled = psutil.Process().memory_info().rss
        for _ in range(300):
            result = trainer.train(frames=64)
        grown = psutil.Process().memory_info().rss - settled
    assert result["iteration"] == 350
    assert grown < 32 * 2**20, f"the learner's process grew {grown / 2**20:.1f} MiB over 300 iterations"


def test_leaving_the_with_block_on_the_users_exception_ends_every_child(tmp_path):
    trainer = Trainer(env=TOY, logdir=str(tmp_path), stop_reward=1e9)
    with pytest.raises(ZeroDivisionError), trainer:
        trainer.train(frames=100)
        assert not no_children()
        _ = 1 / 0  # the user's code fails between two calls
    assert no_children()
    assert trainer.compute_actions(np.zeros((3, 1), dtype=np.float32)).shape == (3,)  # still acts


def test_a_trainer_runs_from_a_script_that_is_not_a_file(tmp_path):
    """``python - < script.py``: the children cannot run the script again, and do not try."""
    script = (f"from a3c import Trainer\n"
              f"with Trainer(env='CartPole-v1', logdir={str(tmp_path)!r}, stop_reward=1e9) as trainer:\n"
              f"    result = trainer.train(frames=3000)\n"
              f"print('RESULT', result['reason'], result['frames'], result['worker_restarts'])\n")
    finished = subprocess.run([sys.executable, "-"], input=script, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr[-2000:]
    reason, frames, restarts = finished.stdout.split("RESULT ")[1].split()
    assert reason == "None" and int(frames) >= 3000 and restarts == "0", finished.stdout + finished.stderr


def test_a_checkpoint_from_before_the_net_settings_restores_the_net_it_was_trained_with(tmp_path):
    """A checkpoint that names neither heads nor conv body holds the reference net (separate
    heads on the Nature CNN), whatever the defaults are now."""
    with Trainer(env="PongNoFrameskip-v4", heads="separate", processes=1, envs_per_process=1, batch_size=8,
                 logdir=str(tmp_path / "runs")) as trainer:
        path = trainer.save(tmp_path / "saved")
    state = torch.load(path, weights_only=True)
    for setting in ("heads", "conv"):
        del state["config"][setting]
    save_checkpoint(path, state)
    restored = Trainer.restore(path)
    assert (restored.config.heads, restored.config.conv) == ("separate", "nature")
    assert all(torch.equal(restored.net.state_dict()[name], tensor) for name, tensor in state["model"].items())
    restored.stop()


def test_the_python_api_is_quiet_unless_given_a_console_reporter(tmp_path, capsys):
    with Trainer(env=TOY, logdir=str(tmp_path / "quiet"), stop_reward=1e9, report_interval=0.2) as trainer:
        trainer.train(seconds=0.6)
    assert capsys.readouterr().out == ""
    with Trainer(env=TOY, logdir=str(tmp_path / "told"), stop_reward=1e9, report_interval=0.2,
                 reporter=ConsoleReporter()) as trainer:
        trainer.train(seconds=0.6)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run ") and " | a3c, data mode | " in lines[0]
    assert any(line.startswith("frames ") and "frames/s" in line for line in lines[1:])


def test_timers_run_each_action_when_due_and_again_a_period_later(monkeypatch):
    from a3c.lifecycle import loop

    now = [100.0]
    monkeypatch.setattr(loop.time, "monotonic", lambda: now[0])
    ran = []
    timers = loop.Timers()
    timers.every(2.0, lambda: ran.append("save"))
    timers.every(5.0, lambda: ran.append("report"))
    for moment in (101.0, 102.0, 103.0, 105.0, 106.0):
        now[0] = moment
        timers.run_due(moment)
    # due at 102 (then 104), at 105 for the late 104 (then 107) and the report's 105
    assert ran == ["save", "save", "report"]
