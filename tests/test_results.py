"""RLlib's result keys and stops: ``--stop KEY=VALUE`` ending a run on an iteration count,
the keys' values against the run's own records, ``pretty_print`` by hand."""
from __future__ import annotations

import pytest

from a3c import Trainer, pretty_print
from a3c.config import parse_config
from a3c.lifecycle.results import stop_criterion_met
from a3c.sweep import build_parser


def test_a_criterion_holds_once_its_key_reaches_the_bound():
    assert stop_criterion_met({"training_iteration": 3}, {"training_iteration": 2}) is None
    assert stop_criterion_met({"training_iteration": 3}, {"training_iteration": 3}) == "stop_criterion"
    # any criterion ends the run; a key without a value yet (no episode) does not
    assert stop_criterion_met({"episode_reward_mean": 10, "frames": 500},
                              {"episode_reward_mean": None, "frames": 600}) == "stop_criterion"
    assert stop_criterion_met({"episode_reward_mean": 10}, {"episode_reward_mean": None}) is None
    assert stop_criterion_met(None, {"frames": 10}) is None


def test_stop_on_the_command_line_and_in_a_sweep():
    config = parse_config(["-n", "s", "--env", "CartPole-v1", "--stop", "training_iteration=3", "--stop",
                           "episode_reward_mean=150"])
    assert config.stop == {"training_iteration": 3.0, "episode_reward_mean": 150.0}
    sweep = build_parser().parse_args(["--stop", "timesteps_total=5000", "--callbacks", "tests.test_callbacks:PoleAngle"])
    assert sweep.stop == [("timesteps_total", 5000.0)] and sweep.callbacks == "tests.test_callbacks:PoleAngle"


@pytest.mark.timeout(120)
def test_a_run_stops_on_an_iteration_count_with_rllibs_keys(tmp_path):
    with Trainer(env="CartPole-v1", stop={"training_iteration": 3}, logdir=str(tmp_path), stop_reward=1e9,
                 processes=1, envs_per_process=8) as trainer:
        results = []
        while not (result := trainer.train(frames=2000))["done"]:
            results.append(result)
        results.append(result)
        recent = list(trainer._run.rewards.recent_rewards)
        lengths = list(trainer._run.rewards.recent_lengths)
    assert [r["training_iteration"] for r in results] == [1, 2, 3] and result["reason"] == "stop_criterion"
    assert sum(r["episodes_this_iter"] for r in results) == result["episodes_total"] == result["episodes"]
    assert result["timesteps_total"] == result["transitions"] == result["frames"]  # CartPole: a frame a step
    assert (result["episode_reward_max"], result["episode_reward_min"]) == (max(recent), min(recent))
    assert result["episode_len_mean"] == pytest.approx(sum(lengths) / len(lengths))
    assert result["custom_metrics"] == {}


def test_pretty_print_sorts_keys_indents_nested_dicts_and_writes_null():
    text = pretty_print({"b": 0.123456789, "a": None, "custom_metrics": {"angle_mean": 2.5}, "done": True,
                         "empty": {}})
    assert text == "a: null\nb: 0.123457\ncustom_metrics:\n  angle_mean: 2.5\ndone: true\nempty: {}"
