"""Window rates from two cumulative progress records."""
import pytest

from a3c.lifecycle.load_meter import window_rates


def test_window_rates_are_differences_over_the_window():
    start = {"seconds": 10.0, "frames": 4000, "transitions": 1000, "policy_version": 7,
             "learner_wait_seconds": 2.0, "learner_busy_seconds": 7.0, "child_wait_seconds": 1.0,
             "policy_lag_sum": 10.0, "policy_lag_batches": 5,
             "policy_entropy_sum": 17.9, "policy_entropy_batches": 10}
    end = {"seconds": 20.0, "frames": 12000, "transitions": 3000, "policy_version": 22,
           "learner_wait_seconds": 3.0, "learner_busy_seconds": 16.0, "child_wait_seconds": 6.0,
           "policy_lag_sum": 40.0, "policy_lag_batches": 15,
           "policy_entropy_sum": 33.9, "policy_entropy_batches": 20}
    assert window_rates(start, end) == pytest.approx({
        "transitions_per_second": 200.0, "frames_per_second": 800.0,
        "learner_busy_fraction": 0.9, "learner_wait_fraction": 0.1,
        "child_wait_seconds_per_second": 0.5, "policy_lag": 3.0, "policy_entropy": 1.6,
    })
