"""What the tests call a run's workers in a tree of processes: multiprocessing's helpers
(its resource tracker, and the fork server that workers are forked from, one per process
that starts children, each outliving the runs of that process) are not workers."""
from __future__ import annotations

import psutil

FORK_SERVER = "from multiprocessing.forkserver import main"


def is_helper(process: psutil.Process) -> bool:
    """Whether ``process`` is a resource tracker or a fork server. A worker forked from the
    server has the server's command line; the server's parent does not. NoSuchProcess where
    it has gone."""
    command = " ".join(process.cmdline())
    if "resource_tracker" in command:
        return True
    return FORK_SERVER in command and FORK_SERVER not in " ".join(process.parent().cmdline())


def workers(root: psutil.Process) -> list[psutil.Process]:
    """``root``'s descendants but multiprocessing's helpers; one that exits while it is
    looked at is left out."""
    found = []
    for process in root.children(recursive=True):
        try:
            if not is_helper(process):
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found
