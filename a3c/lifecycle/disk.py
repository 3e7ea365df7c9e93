"""One guard for every file a run writes (checkpoints, TensorBoard's events, progress.jsonl,
summary.json): a write that fails for want of room becomes ``OutOfRoom``, which names the
file and the room left, and the run ends on it within seconds (reason ``disk_full``)
instead of a writer thread dying and the learner blocking behind it."""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A full disk, a full quota, a file over the process's size limit."""


class OutOfRoom(Exception):
    """A file of the run's could not be written for want of room."""

    def __init__(self, path: str | os.PathLike, error: OSError):
        self.path = Path(path)
        self.error = error
        super().__init__(f"could not write {self.path} ({error.strerror or error}); {room_left(self.path)}")


def room_left(path: str | os.PathLike) -> str:
    """The free space on the disk that holds ``path``, in words."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return "the room left is unknown"
    return f"{human_bytes(free)} left on its disk"


def human_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def room_error(exc: BaseException | None) -> OSError | None:
    """The OSError for want of room behind ``exc``, if any: torch's writer, for one, raises
    a RuntimeError of its own over the OSError its file met."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in ROOM_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Any error for want of room inside becomes ``OutOfRoom(path)``; other errors pass."""
    try:
        yield
    except OutOfRoom:
        raise
    except Exception as exc:
        cause = room_error(exc)
        if cause is None:
            raise
        raise OutOfRoom(path, cause) from exc


def replace_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to a file beside ``path``, then rename it over ``path``: a disk that
    fills midway leaves no torn file (``OutOfRoom``, the partial one removed)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.tmp")
    try:
        with writing(path):
            partial.write_text(text)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
