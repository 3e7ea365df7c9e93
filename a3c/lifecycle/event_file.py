"""TensorBoard's writer for a run, writing its events file in the learner's own thread.

tensorboardX writes through a thread fed by a queue of ten events: when a write fails (a
full disk) the thread dies, the queue fills, and the learner blocks in ``put`` for good,
deaf to SIGTERM. Written here instead, a failed write is ``OutOfRoom`` at the call that
made it, and the run ends on it. A few scalars an interval cost nothing to write inline."""
from __future__ import annotations

import time
from pathlib import Path

from tensorboardX import SummaryWriter

from a3c.lifecycle.disk import OutOfRoom, writing

FLUSH_SECONDS = 10.0
"""How often the events reach the file, so TensorBoard shows a live run."""


class InlineEventFile:
    """Takes over the events file of tensorboardX's threaded writer (stopping its thread
    before any event was queued) and writes each event as it comes; after a write fails
    for want of room, later events are dropped: the run is ending."""

    def __init__(self, threaded) -> None:  # tensorboardX.event_file_writer.EventFileWriter
        threaded._worker.stop()  # its queue is empty: the file holds only its header
        self._logdir = threaded.get_logdir()
        self._events = threaded._ev_writer
        self.path = Path(self._events._file_name)
        self.failed = False
        self._closed = False
        self._flushed = time.monotonic()

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event) -> None:
        if self.failed or self._closed:
            return
        self._write(lambda: self._events.write_event(event))
        if time.monotonic() - self._flushed >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if not (self.failed or self._closed):
            self._write(self._events.flush)
            self._flushed = time.monotonic()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            try:
                self._events.close()
            except OSError:  # what could not be flushed was said by the flush before
                pass

    def reopen(self) -> None:
        """Nothing to restart: no thread."""

    def _write(self, action) -> None:
        try:
            with writing(self.path):
                action()
        except OutOfRoom:
            self.failed = True
            raise


def run_writer(run_dir: Path) -> SummaryWriter:
    """A SummaryWriter for ``run_dir`` whose events are written inline (``InlineEventFile``)."""
    writer = SummaryWriter(str(run_dir))
    writer.file_writer.event_writer = InlineEventFile(writer.file_writer.event_writer)
    return writer
