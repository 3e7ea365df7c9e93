"""Checkpoint history as Tune's checkpoint options: checkpoint.pt after every N-th iteration
(``checkpoint_every_iterations``), the newest K kept as checkpoint-ITERATION.pt
(``keep_checkpoints``, hard links of checkpoint.pt), and no checkpoint at the end where
``checkpoint_at_end`` is off."""
import os

from a3c import Trainer
from a3c.lifecycle.checkpoint import load_checkpoint
from tests.helpers import only_run_dir

COUNTING = "tests.toy_envs:Counting-v0"


def test_every_iteration_saves_and_the_newest_two_are_kept_and_the_end_saves_none(tmp_path):
    with Trainer(env=COUNTING, backend="serial", logdir=str(tmp_path), stop_reward=1e9, max_frames=1000,
                 checkpoint_every_iterations=2, keep_checkpoints=2, checkpoint_at_end=False) as trainer:
        while not (result := trainer.train(frames=160))["done"]:
            pass
    run_dir = only_run_dir(tmp_path)
    kept = sorted(path.name for path in run_dir.glob("checkpoint-*.pt"))
    last_even = result["training_iteration"] - 1 - (result["training_iteration"] - 1) % 2  # the end saved none
    assert kept == [f"checkpoint-{last_even - 2:06d}.pt", f"checkpoint-{last_even:06d}.pt"]
    latest = load_checkpoint(run_dir / "checkpoint.pt")
    assert latest["counters"]["training_iteration"] == last_even and latest["counters"]["frames"] < result["frames"]
    assert os.path.samefile(run_dir / "checkpoint.pt", run_dir / kept[-1])  # a link: no extra room
    older = load_checkpoint(run_dir / kept[0])
    assert older["counters"]["training_iteration"] == last_even - 2
    assert not result["checkpoint_written"]
