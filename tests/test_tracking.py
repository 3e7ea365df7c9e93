"""``--track``: a run's TensorBoard scalars and settings mirrored to a Weights & Biases run,
offline in the suite (conftest.py sets WANDB_MODE), resumed in the same W&B run; and W&B's
failures as one line before any child."""
import importlib.util

import pytest

import a3c.cli
import a3c.lifecycle.trainer
from a3c.lifecycle.tracking import figures, tracking_id
from tests.helpers import alive, only_run_dir

# looked up, not imported: each test process collecting this module would import all of W&B
pytestmark = pytest.mark.skipif(importlib.util.find_spec("wandb") is None, reason="W&B is not installed (the wandb extra)")


def track(launch, tmp_path, *args: str) -> int:
    """A short tracked CartPole run of the CLI; its exit code, once no process it started is left."""
    trainer = launch(["-n", "track", "--env", "CartPole-v1", "--track", "--logdir", str(tmp_path), *args])
    code = trainer.finish(timeout=120)
    assert alive(trainer.descendants, grace=10.0) == [], trainer.output  # W&B's service left with it
    return code


@pytest.mark.timeout(300)
def test_a_tracked_run_logs_its_results_and_settings_and_a_resume_goes_on_in_the_same_wandb_run(launch, tmp_path):
    assert track(launch, tmp_path, "--max-frames", "4000", "--wandb-project", "cartpole") == 0
    run_dir = only_run_dir(tmp_path)
    run_id = tracking_id(run_dir)
    (first,) = (run_dir / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb")
    record = first.read_bytes()
    # the W&B run's history holds the results' figures, its config the settings
    for key in (b"episode_reward_mean", b"loss_total", b"frames_per_second", b"training_iteration"):
        assert key in record, key
    assert b"CartPole-v1" in record and b"cartpole" in record

    resumed = ["--max-frames", "8000", "--resume", str(run_dir / "checkpoint.pt")]
    assert track(launch, tmp_path, *resumed) == 0
    runs = sorted((run_dir / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(runs) == 2 and runs[0] == first.parent  # the same W&B run, gone on from the same folder


def test_a_wandb_run_that_cannot_start_is_one_line_and_exit_2_before_any_child(tmp_path, capsys, monkeypatch):
    # online with no API key: W&B refuses at once (its server, were it asked, is a closed local port)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("WANDB_API_KEY", "")
    monkeypatch.setattr(a3c.lifecycle.trainer, "make_pool", must_not_start)
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "x", "--env", "CartPole-v1", "--track", "--logdir", str(tmp_path)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "run_a3c.py: error: --track: W&B could not start the run: No API key configured. Use `wandb login` to log in."]
    assert list(tmp_path.rglob("checkpoint.pt")) == []


def must_not_start(*args, **kwargs):
    raise AssertionError("a worker pool was made")


def test_a_results_figures_are_its_numbers_nested_ones_by_path():
    result = {"frames": 4000, "episode_reward_mean": None, "loss_total": 1.5, "done": True, "reason": "solved",
              "custom_metrics": {"height_mean": 0.25, "deep": {"x": 2}}, "run_dir": "runs/x"}
    assert figures(result) == {"frames": 4000, "loss_total": 1.5, "custom_metrics/height_mean": 0.25,
                               "custom_metrics/deep/x": 2}
