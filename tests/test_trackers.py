"""The reward window: a run is solved by a full window of 100 episodes whose mean reaches
the goal, never by fewer episodes however good."""
from a3c.lib.trackers import MEAN_WINDOW, RewardTracker


class Scalars:
    def __init__(self):
        self.logged = []

    def add_scalar(self, tag, scalar_value, global_step):
        self.logged.append((tag, scalar_value, global_step))

    def add_histogram(self, tag, values, global_step):
        pass


def test_solved_only_once_a_full_window_of_episodes_reaches_the_goal():
    tracker = RewardTracker(Scalars(), stop_reward=10.0)
    assert MEAN_WINDOW == 100
    for episode in range(99):
        assert not tracker.record(20.0, 5, frame=episode), episode  # mean 20 >= 10, but 99 episodes
    assert tracker.best_mean_reward is None
    assert tracker.record(20.0, 5, frame=99)
    assert tracker.best_mean_reward == 20.0


def test_a_full_window_below_the_goal_is_not_solved_and_the_window_slides():
    tracker = RewardTracker(Scalars(), stop_reward=10.0)
    for episode in range(100):
        assert not tracker.record(9.0, 5, frame=episode)
    assert not tracker.record(108.0, 5, frame=100)  # (99 x 9 + 108) / 100 = 9.99
    assert tracker.record(10.0, 5, frame=101)  # the oldest 9 leaves: (98 x 9 + 108 + 10) / 100 = 10
