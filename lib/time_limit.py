"""A bound on how long this process's main thread may spend in a user's env: the pre-flight's
look at one env, and each step of the serial backend's workers (its workers are this
process). A process child or a Ray actor is watched from outside instead (``--worker-timeout``)."""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator


class TimeLimitExceeded(BaseException):
    """The block ran past its limit. Not an Exception, so that neither an env's own
    ``except Exception`` nor a check's takes it."""


def _raise(signum: int, frame: object) -> None:
    if sys.gettrace() is None:  # a debugger holds the process (a breakpoint in the env): its time is the user's
        raise TimeLimitExceeded


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """``TimeLimitExceeded`` in the block once ``seconds`` pass (SIGALRM: Python code, or a
    sleep, is interrupted; a C call that never returns is not). Off the main thread, where
    no signal arrives, the block is not bounded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
