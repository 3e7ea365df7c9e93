"""Checkpoints: written atomically, loadable with ``torch.load(weights_only=True)``.

A checkpoint holds only tensors, dicts, lists and primitives: model and optimizer state,
counters, the recent episode returns, RNG state and the config as a dict.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from a3c.lifecycle.disk import writing

CHECKPOINT_FORMAT = "a3c-checkpoint/1"
ZIP_MAGIC = b"PK\x03\x04"
"""How every file ``torch.save`` writes begins."""
WEIGHTS_ONLY_REFUSAL = "WeightsUnpickler error:"
"""Where torch's refusal of a file ``weights_only`` cannot read names what it met."""


class CheckpointError(ValueError):
    """The file is missing, damaged, or not a checkpoint of this project."""


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it.

    A kill at any instant leaves either the old file or the new one, never a torn one; so
    does a disk that fills (``OutOfRoom``, the partial file removed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path):
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with writing(path), os.fdopen(descriptor, "wb") as stream:
            torch.save({"format": CHECKPOINT_FORMAT, **state}, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


HISTORY_GLOB = "checkpoint-*.pt"


def keep_in_history(path: Path, iteration: int, keep: int) -> Path:
    """``path`` (just written) kept as ``checkpoint-ITERATION.pt`` beside it, a hard link
    put in place by rename (a copy where the disk has no links), and the oldest of those
    removed beyond the newest ``keep``; the kept file's path."""
    kept = path.with_name(f"checkpoint-{iteration:06d}.pt")
    partial = path.with_name(f".{kept.name}.tmp")
    partial.unlink(missing_ok=True)
    with writing(kept):
        try:
            os.link(path, partial)
        except OSError:
            shutil.copyfile(path, partial)
        os.replace(partial, kept)
    for old in sorted(path.parent.glob(HISTORY_GLOB))[:-keep]:
        old.unlink(missing_ok=True)
    return kept


def _unreadable_because(path: Path, error: BaseException) -> str:
    """What is wrong with a file ``torch.load`` refused, in a few words: torch's own messages
    put their advice first (weights-only) or say only "Invalid argument" (a cut zip)."""
    try:
        with path.open("rb") as stream:
            head = stream.read(len(ZIP_MAGIC))
    except OSError as unopened:
        return unopened.strerror or type(unopened).__name__
    text = str(error).strip()
    if not head:
        return "the file is empty"
    if WEIGHTS_ONLY_REFUSAL in text:
        lines = text.split(WEIGHTS_ONLY_REFUSAL, 1)[1].splitlines()
        met = next((line.strip().split(". ")[0] for line in lines if line.strip()), type(error).__name__)
        return f"not a file torch.save wrote from tensors alone: {met}"
    if head == ZIP_MAGIC and not zipfile.is_zipfile(path):
        return "a zip archive cut short or damaged, as a copy or download that stopped leaves it"
    return text.splitlines()[0] if text else type(error).__name__


def _read(path: str | os.PathLike, **load_options: Any) -> dict[str, Any]:
    """``torch.load`` of a checkpoint of this project; CheckpointError with a one-line reason."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    try:
        with warnings.catch_warnings():  # torch warns about a foreign pickle before refusing it
            warnings.simplefilter("ignore")
            state = torch.load(path, weights_only=True, **load_options)
    except (RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, EOFError, OSError,
            ValueError, AttributeError, TypeError) as exc:
        reason = _unreadable_because(path, exc)
        raise CheckpointError(f"{str(path)!r} is not a readable checkpoint ({reason[:160]})") from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a checkpoint of this project")
    return state


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and check a checkpoint; CheckpointError with a one-line reason otherwise."""
    state = _read(path, map_location=map_location)
    if "policy_version" not in state:  # written before the policy version had a key of its own
        state["policy_version"] = state.get("counters", {}).pop("optimizer_steps", 0)
    return state


def saved_settings(path: str | os.PathLike) -> dict[str, Any]:
    """The settings a checkpoint was saved with (``algo`` always: older ones are A3C's),
    read without loading its tensors (they are mapped); CheckpointError as ``load_checkpoint``."""
    state = _read(path, map_location="cpu", mmap=True)
    return {**state.get("config", {}), "algo": saved_algorithm(state)}


def check_matches(state: dict[str, Any], env_id: str, algo: str, net: torch.nn.Module,
                  net_shape: Mapping[str, Any] | None = None) -> None:
    """CheckpointError unless ``state`` was trained on ``env_id`` by ``algo`` with ``net``'s
    shapes; a shape error names ``net_shape``, the settings the checkpoint's net was built
    with, as the flags that build it again."""
    saved_env = state.get("config", {}).get("env_id")
    if saved_env != env_id:
        raise CheckpointError(f"checkpoint was trained on {saved_env}, this run is {env_id}")
    saved_algo = saved_algorithm(state)
    if saved_algo != algo:
        raise CheckpointError(f"checkpoint was trained with --algo {saved_algo}, this run is --algo {algo}")
    saved, built = state["model"], net.state_dict()
    for name in [*built, *(name for name in saved if name not in built)]:
        shapes = [tuple(tensors[name].shape) if name in tensors else "none" for tensors in (saved, built)]
        if shapes[0] != shapes[1]:
            flags = "".join(shape_flag(setting, value) for setting, value in (net_shape or {}).items())
            hint = f" (the checkpoint's net:{flags})" if flags else ""
            raise CheckpointError(f"network differs at {name}: checkpoint {shapes[0]}, this run {shapes[1]}{hint}")


def saved_algorithm(state: dict[str, Any]) -> str:
    """The algorithm that wrote ``state``: checkpoints from before DQN name none and are A3C's."""
    return state.get("config", {}).get("algo", "a3c")


def shape_flag(setting: str, value: object) -> str:
    """A net-shaping setting as its flag: `` --heads shared``; a switch only when on, the
    model config as JSON, nothing where unset."""
    flag = f" --{setting.replace('_', '-')}"
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return f"{flag} '{json.dumps(value)}'"
    if isinstance(value, bool):
        return flag if value else ""
    return f"{flag} {value}"
