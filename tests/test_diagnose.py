"""benchmarks/diagnose.py on a short CartPole run: the learner's sampled diagnostics read
back from TensorBoard, and the checkpoint's units and logits measured on random play."""
import json

import pytest

from a3c import Trainer
from benchmarks.diagnose import main


@pytest.mark.timeout(120)
def test_a_runs_diagnostics_and_its_checkpoints_activity_are_reported(tmp_path, capsys):
    with Trainer(env="CartPole-v1", logdir=str(tmp_path), stop_reward=1e9, backend="serial") as trainer:
        while trainer.train(frames=5_000)["policy_version"] <= 100:  # a sampled step at 0 and at 100
            pass
        run_dir = trainer.save().parent
    out = tmp_path / "diagnosis.json"
    assert main([str(run_dir), "--states", "40", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())[run_dir.name]
    sampled, checkpoint = figures["sampled"], figures["checkpoint"]
    assert sampled["clip_share_value"]["samples"] >= 2
    assert sampled["grad_norm_policy"]["min"] <= sampled["grad_norm_policy"]["median"] <= sampled[
        "grad_norm_policy"]["max"]
    alive = {name: share for name, share in checkpoint.items() if name.startswith("alive_")}
    assert alive and all(0.0 <= share <= 1.0 for share in alive.values())
    assert checkpoint["logits_spread"] > 0.0 and checkpoint["frames"] > 0
