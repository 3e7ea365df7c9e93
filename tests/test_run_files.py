"""A run folder holds RLlib's files as the run goes: params.json (the settings), result.json
(a JSON line per train() result, custom metrics nested) and progress.csv (the same, flattened,
a column per key, widened when a key first appears), continued by a resume in place."""
import csv
import json

import pytest

from a3c import Callback, Trainer
from a3c.lifecycle.run_files import flattened
from tests.helpers import only_run_dir

COUNTING = "tests.toy_envs:Counting-v0"  # every episode: 5 steps, a return of 15


def test_nested_results_flatten_into_slash_separated_columns():
    assert flattened({"a": 1, "custom_metrics": {"x_mean": 2.5}, "none": None, "curve": [1, 2]}) == {
        "a": 1, "custom_metrics/x_mean": 2.5, "none": "", "curve": "[1, 2]"}


class LateMetric(Callback):
    """A custom metric from the second iteration on: progress.csv must widen for it."""

    def on_train_result(self, trainer, result):
        if result["training_iteration"] >= 2:
            result["custom_metrics"]["late"] = 7.0


def rows(path):
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


@pytest.mark.timeout(120)
def test_every_result_is_a_line_of_result_json_and_a_row_of_progress_csv_and_a_resume_goes_on(tmp_path):
    with Trainer(env=COUNTING, backend="serial", logdir=str(tmp_path), stop_reward=1e9, lr=1e-3,
                 callbacks=[LateMetric()]) as trainer:
        results = [trainer.train(frames=200) for _ in range(3)]
        path = trainer.save()
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "params.json").read_text())["lr"] == 1e-3
    lines = [json.loads(line) for line in (run_dir / "result.json").read_text().splitlines()]
    assert [line["training_iteration"] for line in lines] == [1, 2, 3]
    assert [line["timesteps_total"] for line in lines] == [result["timesteps_total"] for result in results]
    assert lines[2]["custom_metrics"]["late"] == 7.0 and "late" not in lines[0]["custom_metrics"]
    table = rows(run_dir / "progress.csv")
    assert [row["training_iteration"] for row in table] == ["1", "2", "3"]
    assert [row["custom_metrics/late"] for row in table] == ["", "7.0", "7.0"]
    assert float(table[2]["episode_reward_mean"]) == pytest.approx(results[2]["episode_reward_mean"])
    resumed = Trainer.restore(path)
    resumed.train(frames=200)
    resumed.stop()
    assert len((run_dir / "result.json").read_text().splitlines()) == 4
    assert len(rows(run_dir / "progress.csv")) == 4
