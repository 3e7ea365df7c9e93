"""Checkpoints survive kills mid-write; damaged or foreign files get a one-line error."""
import fractions
import pickle
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import a3c.lifecycle.checkpoint
from a3c.lifecycle.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


def test_round_trip_loads_with_weights_only(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"model": {"w": torch.ones(2)}, "counters": {"frames": 7}})
    state = torch.load(path, weights_only=True)
    assert state["counters"] == {"frames": 7} and torch.equal(state["model"]["w"], torch.ones(2))
    assert load_checkpoint(path)["counters"]["frames"] == 7


def test_failed_write_keeps_previous_checkpoint_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"counters": {"frames": 1}})

    def torn_save(obj, stream):
        stream.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(a3c.lifecycle.checkpoint.torch, "save", torn_save)
    with pytest.raises(OSError):
        save_checkpoint(path, {"counters": {"frames": 2}})
    assert load_checkpoint(path)["counters"]["frames"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]


@pytest.mark.timeout(60)
def test_sigkill_in_the_middle_of_a_write_leaves_the_previous_checkpoint(tmp_path):
    # the writer saves one whole checkpoint, then stalls half-way through the bytes of the
    # next one and says so; the kill lands there, not wherever a sleep happens to end
    path = tmp_path / "checkpoint.pt"
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        import a3c.lifecycle.checkpoint
        from a3c.lifecycle.checkpoint import save_checkpoint
        save_checkpoint({str(path)!r}, {{"counters": {{"frames": 1}}}})

        def stalled_save(obj, stream):
            stream.write(b"half a checkpoint")
            stream.flush()
            print("mid-write", flush=True)
            time.sleep(60)

        a3c.lifecycle.checkpoint.torch.save = stalled_save
        save_checkpoint({str(path)!r}, {{"counters": {{"frames": 2}}}})
        """)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "mid-write"
    writer.kill()
    writer.wait()
    assert load_checkpoint(path)["counters"]["frames"] == 1


@pytest.mark.parametrize("content, reason", [
    (b"", r"not a readable checkpoint \(the file is empty\)"),
    (b"garbage" * 100, (r"not a readable checkpoint \(not a file torch.save wrote from tensors alone: "
                        r"Unsupported operand \d+\)")),
    (pickle.dumps({"w": 1.0}, protocol=4), "not a file torch.save wrote from tensors alone: Unsupported operand"),
    (None, "not a checkpoint of this project"),
])
def test_damaged_or_foreign_files_are_refused_in_one_line_without_torchs_warnings(tmp_path, content, reason):
    path = tmp_path / "bad.pt"
    if content is None:
        torch.save({"state_dict": {"w": torch.ones(1)}}, path)
    else:
        path.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns of a protocol-4 pickle before refusing it
        with pytest.raises(CheckpointError, match=reason) as refused:
            load_checkpoint(path)
    assert "\n" not in str(refused.value)


def test_a_file_holding_objects_beyond_tensors_is_refused_naming_the_first(tmp_path):
    path = tmp_path / "foreign.pt"
    torch.save({"model": fractions.Fraction(1, 3)}, path)
    with pytest.raises(CheckpointError, match="Unsupported global: GLOBAL fractions.Fraction was not an allowed"
                                              r" global by default\)$"):
        load_checkpoint(path)


def test_truncated_checkpoint_is_refused(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"model": {"w": torch.randn(10_000)}})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="a zip archive cut short or damaged"):
        load_checkpoint(path)


def test_a_checkpoint_from_before_the_policy_version_key_reads_its_step_count(tmp_path):
    path = tmp_path / "old.pt"
    save_checkpoint(path, {"counters": {"frames": 800, "optimizer_steps": 12}})
    state = load_checkpoint(path)
    assert state["policy_version"] == 12 and state["counters"] == {"frames": 800}


def test_a_layer_either_side_lacks_is_named_with_none_on_that_side():
    from a3c.lifecycle.checkpoint import check_matches

    run_net = torch.nn.Sequential(torch.nn.Linear(4, 8))
    wider = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))  # one layer more
    state = {"config": {"env_id": "CartPole-v1", "algo": "a3c"}, "model": wider.state_dict()}
    with pytest.raises(CheckpointError, match=r"differs at 1.weight: checkpoint \(2, 8\), this run none$"):
        check_matches(state, "CartPole-v1", "a3c", run_net)
    state["model"] = {}
    with pytest.raises(CheckpointError, match=r"differs at 0.weight: checkpoint none, this run \(8, 4\)$"):
        check_matches(state, "CartPole-v1", "a3c", run_net)
    state["model"] = run_net.state_dict()
    check_matches(state, "CartPole-v1", "a3c", run_net)  # the same net passes
