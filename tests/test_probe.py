"""The benchmark's limit probe: its bound's arithmetic and its rounds through the Pong window."""
import psutil
import pytest

from benchmarks import run as benchmark_run
from benchmarks.affinity import CAN_PIN, available_cores
from benchmarks.probe import LimitProbe, layout_cap, round_bounds, side_speeds
from benchmarks.report import markdown_report
from benchmarks.run import probe_through_pong, segment_fractions
from tests.namespaces import scenario_processes
from tests.process_tree import workers

CARTPOLE = "CartPole-v1"


@pytest.fixture
def probe():
    return LimitProbe(CARTPOLE, child_batch=8, learner_batch=16, seconds=0.05)


def test_bound_is_the_cores_over_the_summed_median_costs(probe):
    probe.measure(3)
    probe.measure(2)
    probe.close()
    limits = probe.limits()
    assert limits["rounds"] == 5
    # with every core busy (the bound) and with one core busy (beside it), each from its own readings
    for rates in (limits, limits["one_core"]):
        assert all(len(stage) == 5 for stage in rates["stage_readings"])
        env, inference, training = (sorted(stage)[2] for stage in rates["stage_readings"])
        assert rates["env_steps_per_second_per_core"] == env
        core_seconds = 1 / env + 1 / inference + 1 / training
        assert rates["core_ms_per_transition"] == pytest.approx(core_seconds * 1e3)
        assert rates["bound_transitions_per_second"] == pytest.approx(limits["cores"] / core_seconds)
    assert limits["one_core"]["stage_readings"] != limits["stage_readings"]


def _companions() -> list[psutil.Process]:
    """This process's children and theirs but multiprocessing's helpers and a Ray scenario
    it started: the probe's companions."""
    return [process for process in workers(psutil.Process()) if process.pid not in scenario_processes()]


def test_rounds_run_on_one_core_with_a_companion_on_each_other_core_and_leave_nothing_behind(probe):
    cores = available_cores()
    companions = _companions()
    assert len(companions) == len(cores) - 1
    probe.measure(1)
    if CAN_PIN:
        assert probe.limits()["pinned_core"] == cores[-1]
        assert sorted(core for companion in companions for core in companion.cpu_affinity()) == cores[:-1]
    else:
        assert probe.limits()["pinned_core"] is None
    probe.close()
    assert available_cores() == cores
    assert _companions() == []


def test_with_pong_one_round_is_taken_at_each_boundary_the_window_calls(probe):
    rounds_taken = []

    def pong_window(at_boundary):
        for _ in range(3):  # a window of two segments: its start, middle and end
            at_boundary()
            rounds_taken.append(len(probe.readings[0]))
        return {"transitions_per_second": 1.0}

    results = probe_through_pong(probe, with_pong=True, run_pong=pong_window)
    assert rounds_taken == [1, 2, 3]
    assert results["probe"]["rounds"] == 3
    assert len(results["probe"]["round_bounds"]) == 3
    assert results["ours"]["transitions_per_second"] == 1.0
    assert "cpu_steal" in results["ours"] and "cpu_steal" in results["probe"]


def test_without_pong_every_round_is_taken_at_once(probe):
    def no_window(at_boundary):
        raise AssertionError("the Pong window must not run")

    results = probe_through_pong(probe, with_pong=False, run_pong=no_window, rounds=3)
    assert results["probe"]["rounds"] == 3 and "ours" not in results


def test_pong_without_the_probe_runs_unpaused():
    calls = []
    results = probe_through_pong(None, with_pong=True, run_pong=lambda at_boundary: calls.append(at_boundary) or {})
    assert calls == [None] and "probe" not in results


def test_each_segment_is_compared_with_the_rounds_on_either_side(monkeypatch):
    monkeypatch.setattr("benchmarks.probe.os.cpu_count", lambda: 2)
    # per stage, its reading in each of three rounds: the second round saw a machine half as fast
    limits = {"stage_readings": [[1000.0, 500.0, 1000.0], [2000.0, 1000.0, 2000.0], [800.0, 400.0, 800.0]]}
    # 1 + 0.5 + 1.25 = 2.75 core-ms a transition in rounds 1 and 3, twice that in round 2
    assert round_bounds(limits) == pytest.approx([2 / 2.75e-3, 1 / 2.75e-3, 2 / 2.75e-3])
    limits["round_bounds"] = round_bounds(limits)  # as LimitProbe.limits records them
    ours = {"segment_transitions_per_second": [300.0, 250.0]}
    between_rounds = 1.5 / 2.75e-3
    assert segment_fractions(limits, ours) == pytest.approx([300.0 / between_rounds, 250.0 / between_rounds])


def _limits(env_rate: float, inference_rate: float, training_rate: float) -> dict:
    return {"env_steps_per_second_per_core": env_rate,
            "inference_samples_per_second_per_core": inference_rate,
            "training_samples_per_second_per_core": training_rate}


def test_layout_cap_is_the_slower_sides_rate():
    # a child at 1 ms (env) + 0.5 ms (inference) a transition against a learner at 1.25 ms:
    # the child sets the pace at 1 / 1.5 ms
    limits = _limits(1000.0, 2000.0, 800.0)
    assert layout_cap(limits, children=1, learner_threads=1, cores=4) == pytest.approx(1000 / 1.5)
    # two children outpace one learner thread, which then sets the pace
    assert layout_cap(limits, children=2, learner_threads=1, cores=4) == pytest.approx(800.0)
    assert layout_cap(limits, children=2, learner_threads=2, cores=4) == pytest.approx(2000 / 1.5)


def test_processes_that_outnumber_the_cores_share_them_and_are_capped_by_the_bound():
    limits = _limits(1000.0, 2000.0, 800.0)  # 1 + 0.5 + 1.25 = 2.75 core-ms a transition
    assert layout_cap(limits, children=2, learner_threads=1, cores=2) == pytest.approx(2000 / 2.75)
    assert layout_cap(limits, children=1, learner_threads=1, cores=2) == pytest.approx(1000 / 1.5)


def test_one_child_and_one_learner_reach_the_two_core_bound_only_when_balanced():
    for training_rate, share_of_bound in ((1000 / 1.5, 1.0), (1000.0, 2.5 / 3), (400.0, 4 / 5)):
        limits = _limits(1000.0, 2000.0, training_rate)
        two_core_bound = 2 / (1 / 1000 + 1 / 2000 + 1 / training_rate)
        cap = layout_cap(limits, children=1, learner_threads=1, cores=2)
        assert cap / two_core_bound == pytest.approx(share_of_bound)


def test_side_speeds_are_each_sides_rate_per_unblocked_second_against_its_probe():
    # probed: a child acts at 1 / (1 ms + 0.5 ms) = 667/s, a learner trains 800/s
    limits = _limits(1000.0, 2000.0, 800.0)
    # 600/s with the learner busy 0.9 of the time: 667 per busy second, 5/6 of its probe;
    # the child blocked 0.1 s/s: 600 in 0.9 s of acting is its probed 667/s
    run = {"transitions_per_second": 600.0, "learner_busy_fraction": 0.9,
           "child_wait_seconds_per_second": 0.1}
    speeds = side_speeds(limits, run, children=1, learner_threads=1)
    assert speeds["learner"] == pytest.approx(5 / 6)
    assert speeds["children"] == pytest.approx(1.0)
    # two children blocked 0.5 s/s in all act 1.5 s/s: 400 each per second of acting
    two = side_speeds(limits, run | {"child_wait_seconds_per_second": 0.5}, children=2, learner_threads=1)
    assert two["children"] == pytest.approx(400 / (1000 / 1.5))


def test_report_states_the_layout_cap_and_the_runs_share_of_it():
    limits = _limits(1000.0, 2000.0, 800.0) | {
        "rounds": 3, "inference_batch": 32,
        "one_core": _limits(1100.0, 2200.0, 900.0) | {"core_ms_per_transition": 2.5,
                                                    "bound_transitions_per_second": 800.0}, "training_batch": 128, "cores": 2, "core_ms_per_transition": 2.75,
        "bound_transitions_per_second": 2 / 2.75e-3, "cpu_steal": 0.0,
        "layout": {"children": 1, "learner_threads": 1}, "layout_cap_transitions_per_second": 1000 / 1.5,
        "round_bounds": [800.0, 1000.0, 1250.0],
    }
    ours = {"transitions_per_second": 600.0, "frames_per_second": 2400.0, "learner_busy_fraction": 0.9,
            "learner_wait_fraction": 0.1, "child_wait_seconds_per_second": 0.0, "policy_lag": 2.0,
            "command": "run_a3c.py", "window_seconds": 60.2, "settle_seconds": 5.0,
            "segment_transitions_per_second": [620.0, 580.0, 600.0], "paused_seconds": [6.5, 6.4, 6.6, 6.5]}
    results = {"command": "python -m benchmarks.run", "window_seconds": 60, "warmup_seconds": 30,
               "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 1, "platform": "p", "versions": {}},
               "probe": limits,
               "pong": {"ours": ours, "fraction_of_bound": 600 / limits["bound_transitions_per_second"],
                        "fraction_of_layout_cap": 600 / limits["layout_cap_transitions_per_second"],
                        "fraction_of_one_core_bound": 600 / 800,
                        "segment_fractions_of_bound": [0.85, 0.8, 0.95],
                        "side_speeds": {"learner": 5 / 6, "children": 0.9}}}
    report = markdown_report(results)
    # the figures the report computes, not its wording: the layout's cap (1000 / 1.5) and its
    # share of the bound, the one-core rates, the run's shares, the rounds and the segments;
    # a million frames at the bound: 250,000 transitions at 2 / 2.75 ms = 343.75 s
    for figure in ["344 s", "667 transitions/s", "91.7%", "| 800 | 900 |", "2.50 core-ms", "82.5%", "90.0%",
                   "75.0%", "800, 1,000, 1,250", "64%", "80.0% to 95.0%", "85.0%", "83.3%"]:
        assert figure in report, figure


def test_a_results_folder_that_cannot_be_made_stops_the_run_before_the_probe(monkeypatch, capsys):
    def no_probe(*args, **kwargs):
        raise AssertionError("the probe ran")

    monkeypatch.setattr(benchmark_run, "LimitProbe", no_probe)
    with pytest.raises(SystemExit) as stopped:
        benchmark_run.main(["--only", "probe", "--results", "/dev/null/results"])
    assert stopped.value.code == 2
    assert "--results /dev/null/results" in capsys.readouterr().err.strip().splitlines()[-1]
