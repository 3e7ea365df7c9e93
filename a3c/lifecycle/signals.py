"""Ctrl-C and SIGTERM as requests the learner polls, never as exceptions mid-operation.

An exception raised from a signal handler can land anywhere: half-way through reading a
queue message (the next read then starts inside the old one and can block forever), in
a checkpoint write, in an optimizer step. So the first signal only asks the run to stop
(``request_stop``), and the learner's loop, which checks at least once a second, stops
cleanly. A second Ctrl-C or SIGTERM, while the run is ending or once it already was asked
to, calls ``exit_now``: the way out when the ordered shutdown is itself stuck.
"""
from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType


def _never() -> bool:
    return False

REASONS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}

_early: list[int] = []
"""Signals that arrived between ``keep_early_signals`` and a run's ``StopSignals``."""


def keep_early_signals() -> None:
    """From a command's first instant: keep a Ctrl-C or SIGTERM for the run to obey once it
    can, instead of losing it (a shell starts a background job with SIGINT ignored, and a
    run installs its handlers only after its imports) or raising it in the middle of an
    import."""
    for signum in REASONS:
        signal.signal(signum, lambda received, frame: _early.append(received))


def early_signal() -> int | None:
    """The first signal ``keep_early_signals`` kept, if any."""
    return _early[0] if _early else None


class StopSignals:
    """Installed for the life of a run: ``with StopSignals(exit_now, request_stop, ending): ...``."""

    def __init__(self, exit_now: Callable[[int], None],
                 request_stop: Callable[[str], None] | None = None, ending: Callable[[], bool] = _never):
        self.exit_now = exit_now
        self.request_stop = request_stop
        self.ending = ending
        """True once the run has begun its ending: a signal then exits at once."""
        self.reason: str | None = None
        """"interrupted" (SIGINT) or "terminated" (SIGTERM) once one has arrived."""
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:  # noqa: PYI034 - Self needs Python 3.11
        for signum in REASONS:
            self._previous[signum] = signal.signal(signum, self._handle)
        kept = early_signal()
        if kept is not None:  # since the command started: obeyed now
            self._handle(kept, None)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.reason is not None or self.ending():
            self.exit_now(128 + signum)
            return
        self.reason = REASONS[signal.Signals(signum)]
        if self.request_stop is not None:
            self.request_stop(self.reason)
