"""``--as-test`` / ``as_test=True``, as RLlib's examples end: a run that ends unsolved is
exit 1 and one line (LearningNotAchieved in Python), after it saved; a solved one is 0."""
import pytest

import a3c.cli
from a3c import LearningNotAchieved, Trainer
from tests.helpers import only_run_dir

COUNTING = "tests.toy_envs:Counting-v0"  # every episode: 5 steps, a return of 15


def test_an_unsolved_run_raises_after_saving_and_a_solved_one_does_not(tmp_path):
    with Trainer(env=COUNTING, backend="serial", logdir=str(tmp_path / "unsolved"), stop_reward=16.0,
                 max_frames=400, as_test=True) as trainer, pytest.raises(LearningNotAchieved) as unsolved:
        while not trainer.train(seconds=1.0)["done"]:
            pass
    assert "the run ended unsolved (frame_budget): mean-100 reward 15.00, below the goal 16" in str(unsolved.value)
    assert unsolved.value.result["reason"] == "frame_budget"
    assert (only_run_dir(tmp_path / "unsolved") / "checkpoint.pt").is_file()
    with Trainer(env=COUNTING, backend="serial", logdir=str(tmp_path / "solved"), stop_reward=15.0,
                 max_frames=4000, as_test=True) as trainer:
        while not (result := trainer.train(seconds=1.0))["done"]:
            pass
    assert result["reason"] == "solved"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("goal", "code"), [("16", 1), ("15", 0)])
def test_the_command_exits_1_with_one_line_where_the_run_ends_unsolved(tmp_path, capsys, goal, code):
    # the command's code in this process (run_a3c.py exits with what it returns)
    assert a3c.cli.main(["-n", "test", "--env", COUNTING, "--backend", "serial", "--logdir", str(tmp_path),
                         "--stop-reward", goal, "--max-frames", "400", "--as-test"]) == code
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: --as-test")]
    assert said == ([] if code == 0 else [
        "error: --as-test: the run ended unsolved (frame_budget): mean-100 reward 15.00, below the goal 16"])
