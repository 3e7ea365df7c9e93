"""The benchmark's limit probe: its bound's arithmetic and its rounds around the Pong window."""
import pytest

from benchmarks.probe import LimitProbe
from benchmarks.run import probe_around_pong

CARTPOLE = "CartPole-v1"


@pytest.fixture
def probe():
    return LimitProbe(CARTPOLE, child_batch=8, learner_batch=16, seconds=0.05)


def test_bound_is_the_cores_over_the_summed_median_costs(probe):
    probe.measure(3)
    probe.measure(2)
    probe.close()
    limits = probe.limits()
    assert limits["rounds"] == 5 and all(len(stage) == 5 for stage in limits["stage_readings"])
    env, inference, training = (sorted(stage)[2] for stage in limits["stage_readings"])
    assert limits["env_steps_per_second_per_core"] == env
    core_seconds = 1 / env + 1 / inference + 1 / training
    assert limits["core_ms_per_transition"] == pytest.approx(core_seconds * 1e3)
    assert limits["bound_transitions_per_second"] == pytest.approx(limits["cores"] / core_seconds)


def test_half_the_rounds_come_before_the_pong_window_and_half_after(probe):
    rounds_at_window = []

    def pong_window():
        rounds_at_window.append(len(probe.readings[0]))
        return {"transitions_per_second": 1.0}

    results = probe_around_pong(probe, with_pong=True, run_pong=pong_window, rounds=4)
    assert rounds_at_window == [2]
    assert results["probe"]["rounds"] == 4
    assert results["ours"]["transitions_per_second"] == 1.0
    assert "cpu_steal" in results["ours"] and "cpu_steal" in results["probe"]


def test_without_pong_every_round_is_taken_at_once(probe):
    def no_window():
        raise AssertionError("the Pong window must not run")

    results = probe_around_pong(probe, with_pong=False, run_pong=no_window, rounds=3)
    assert results["probe"]["rounds"] == 3 and "ours" not in results
