"""A disk that fills ends the run within seconds, saying which file could not be written and
how much room is left, with the last checkpoint intact: the fault made real by a file-size
limit (``ulimit -f``) and by a small tmpfs in a mount namespace of the test's own."""
import errno
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from a3c.lifecycle.checkpoint import load_checkpoint, save_checkpoint
from a3c.lifecycle.disk import OutOfRoom, room_error, writing
from a3c.lifecycle.event_file import run_writer
from tests.helpers import alive, only_run_dir


def test_an_error_for_want_of_room_names_the_file_and_the_room_left_and_others_pass(tmp_path):
    full = r"could not write .*events \(No space left on device\); .* left on its disk"
    with pytest.raises(OutOfRoom, match=full), writing(tmp_path / "events"):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(PermissionError), writing(tmp_path / "events"):
        raise PermissionError(errno.EACCES, "Permission denied")
    try:  # torch's writer raises its own RuntimeError while the OSError its stream met is handled
        try:
            raise OSError(errno.EFBIG, "File too large")
        except OSError:
            raise RuntimeError("unexpected pos 704 vs 598")  # while handling it, as torch's C++ does
    except RuntimeError as wrapped:
        assert room_error(wrapped).errno == errno.EFBIG
    assert room_error(RuntimeError("unexpected pos 704 vs 598")) is None


class FileSizeLimit:
    """This process's file-size limit lowered to ``size`` bytes inside the block (Python
    ignores SIGXFSZ, so a write past it fails with EFBIG)."""

    def __init__(self, size: int):
        self.size = size

    def __enter__(self):
        self.before = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.size, self.before[1]))

    def __exit__(self, *exc_info):
        resource.setrlimit(resource.RLIMIT_FSIZE, self.before)


def test_a_checkpoint_that_does_not_fit_leaves_the_last_one_whole_and_no_partial_file(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"weights": torch.arange(10.0)})
    with FileSizeLimit(4096), pytest.raises(OutOfRoom, match="checkpoint.pt .*File too large"):
        save_checkpoint(path, {"weights": torch.zeros(100_000)})
    assert torch.equal(load_checkpoint(path)["weights"], torch.arange(10.0))
    assert [entry.name for entry in tmp_path.iterdir()] == ["checkpoint.pt"]


def test_tensorboards_events_are_written_inline_so_a_failed_write_raises_at_once_then_drops(tmp_path):
    writer = run_writer(tmp_path)
    events = writer.file_writer.event_writer
    writer.add_scalar("fits", 1.0, 0)
    writer.flush()
    written = events.path.stat().st_size
    with FileSizeLimit(written + 100), pytest.raises(OutOfRoom, match=events.path.name):
        for step in range(1000):  # no thread: the write that fails raises here, no queue fills
            writer.add_scalar("grows", float(step), step)
        writer.flush()
    assert events.failed
    writer.add_scalar("after", 2.0, 1)  # the run is ending: dropped, not raised again
    writer.close()


def check_ended_by_a_full_disk(trainer, code: int, run_dir: Path, reason: str) -> None:
    """Exit 1 soon after the fault, one line naming the file and the room left, the last
    checkpoint whole, summary.json written or said not to be. The time is counted from the
    run's first line: imports on a loaded machine took over 30 s in CI, the run 2 s."""
    output = trainer.output
    assert code == 1, output
    seconds = time.monotonic() - trainer.first_line_at
    assert seconds < 30, f"{seconds:.0f} s: the run did not end soon after the disk filled\n{output}"
    errors = [line for line in output.splitlines() if line.startswith("error: could not write")]
    assert len(errors) == 1 and reason in errors[0] and "left on its disk" in errors[0], output
    if (run_dir / "checkpoint.pt").exists() or "checkpoint.pt not written" not in errors[0]:
        assert load_checkpoint(run_dir / "checkpoint.pt")["counters"]["frames"] > 0
    assert not [path for path in run_dir.iterdir() if path.name.endswith(".tmp")]
    if "summary.json not written" in errors[0]:
        assert not (run_dir / "summary.json").exists()
    else:
        assert json.loads((run_dir / "summary.json").read_text())["reason"] == "disk_full"


RUN = [sys.executable, "run_a3c.py", "-n", "full", "--env", "CartPole-v1", "--stop-reward", "1e9",
       "--max-seconds", "90", "--save-every", "1", "--mlp-hidden", "16"]  # checkpoints of 32 KB


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["processes", "serial"])
def test_a_file_over_the_size_limit_ends_the_run_with_one_line_and_the_checkpoint_whole(launch, tmp_path, backend):
    # 60 KB: the checkpoints fit; the TensorBoard events outgrow it within seconds
    command = ["bash", "-c", 'ulimit -f 60 && exec "$@"', "bash", *RUN]
    trainer = launch(["--logdir", str(tmp_path), *(["--backend", "serial"] if backend == "serial" else [])],
                     command=command)
    code = trainer.finish(timeout=100)
    check_ended_by_a_full_disk(trainer, code, only_run_dir(tmp_path), "File too large")
    assert "disk_full:" in trainer.output and alive(trainer.descendants) == []


def mount_namespace_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m none /mnt"],
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"no tmpfs in a mount namespace here: {probe.stderr.strip()}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("track", [False, True], ids=["tensorboard", "and-wandb"])
def test_a_real_full_disk_ends_the_run_with_one_line_and_the_checkpoint_whole(launch, tmp_path, track):
    problem = mount_namespace_problem()
    if problem:
        pytest.skip(problem)
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    disk.mkdir()
    # 192 KB of tmpfs: a checkpoint and the new one beside it while it is written; the events fill it
    script = ('mount -t tmpfs -o size=192k none "$1" && shift && "$@" --logdir "$DISK"; code=$?; '
              'cp -r "$DISK" "$KEPT"; exit $code')
    trainer = launch(["--track"] if track else [], command=["unshare", "-rm", "bash", "-c", script, "bash", str(disk), *RUN],
                     env={**os.environ, "DISK": str(disk), "KEPT": str(kept)})
    code = trainer.finish(timeout=100)
    check_ended_by_a_full_disk(trainer, code, only_run_dir(kept), "No space left on device")
