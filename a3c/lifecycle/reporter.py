"""What a run tells a person, in one place. The CLI gives the trainer a ``ConsoleReporter``
(the start line, progress lines, restarts, rollbacks on the console); the Python API's
default ``Reporter`` keeps the information to itself and still writes warnings (a worker's
traceback, a restart) to stderr, since those need a person whichever way the run started."""
from __future__ import annotations

import sys


class Reporter:
    """Quiet: ``info`` says nothing, ``warning`` goes to stderr."""

    def info(self, text: str) -> None:
        """A line of the run's story: its start, progress, an ending under way."""

    def warning(self, text: str) -> None:
        """Something went wrong and the run copes: a worker's crash, a restart, a rollback."""
        print(text, file=sys.stderr, flush=True)


class ConsoleReporter(Reporter):
    """``info`` on stdout as well: what ``run_a3c.py`` prints."""

    def info(self, text: str) -> None:
        print(text, flush=True)
