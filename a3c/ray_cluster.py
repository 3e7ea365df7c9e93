"""Joining a Ray cluster, or starting a local one for the length of a run; used by the Ray
backend and the sweeps. Ray is imported only here and where it is used, so the base
install runs without it."""
from __future__ import annotations

import os
import signal
import socket

from a3c.settings import ConfigError

CONNECT_SECONDS = 3.0


def parse_address(address: str) -> tuple[str, int]:
    """HOST and PORT of a Ray address (``ray://`` allowed before them); ConfigError otherwise."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--ray-address must be HOST:PORT, got {address!r}")
    return host, int(port)


def check_address(address: str) -> None:
    """ConfigError, in a few seconds at most, unless ``address`` (HOST:PORT, optionally after
    ``ray://``) accepts a TCP connection: ``ray.init`` would otherwise retry for a minute."""
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            pass
    except OSError as exc:
        raise ConfigError(f"--ray-address {address}: cannot connect ({exc.strerror or exc})") from exc


def connect(address: str | None, cpus: int | None = None) -> bool:
    """Join the cluster at ``address``, or start a local Ray with ``cpus`` CPUs (default: this
    machine's) bound to 127.0.0.1; True if Ray was started here (``disconnect`` stops it).
    Nothing to do, and False, when this process is already connected. The Ctrl-C and SIGTERM
    handlers in place before stay: Ray's driver would otherwise take SIGTERM for itself."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if ray.is_initialized():
        return False
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    else:
        # "local": a new Ray even where a cluster started with `ray start` runs on this machine
        ray.init(address="local", num_cpus=cpus or os.cpu_count(), include_dashboard=False,
                 log_to_driver=False, _node_ip_address="127.0.0.1")
    for signum, handler in handlers.items():  # Ray's own would end the run without its ending
        if handler is not None:
            signal.signal(signum, handler)
    return True


def disconnect(started_here: bool) -> None:
    """Leave the cluster; a Ray started here stops with every process it started."""
    import ray

    if started_here:
        ray.shutdown()
