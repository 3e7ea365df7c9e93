"""Joining a Ray cluster, or starting a local one for the length of a run, and what the
driver checks of the cluster before any actor starts: the same code on every node, enough
CPUs for the actors, the learner's own CPUs held; used by the Ray backend and the sweeps.
Ray is imported only here and where it is used, so the base install runs without it."""
from __future__ import annotations

import hashlib
import os
import signal
import socket
from pathlib import Path
from typing import Any

from a3c.options import ConfigError

CONNECT_SECONDS = 3.0
CHECK_SECONDS = 60.0
"""How long a node may take to answer the code check, or the learner's CPUs to be held."""


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
    handlers in place before stay: Ray's driver would otherwise take SIGTERM for itself. A local
    Ray's daemons have both signals blocked, so they stay up until the run stops them; that
    costs ``ray.shutdown`` its one-second wait for each of them (about 5 s)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if ray.is_initialized():
        return False
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    else:
        # Ray's daemons start in this process group, so a SIGTERM to the group (kill -TERM -PGID,
        # a batch scheduler) would end them while the run is still ending; started with SIGTERM
        # blocked, they keep it blocked, as Ray itself blocks SIGINT in them.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            # "local": a new Ray even where a cluster started with `ray start` runs on this machine
            ray.init(address="local", num_cpus=cpus or os.cpu_count(), include_dashboard=False,
                     log_to_driver=False, _node_ip_address="127.0.0.1")
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    for signum, handler in handlers.items():  # Ray's own would end the run without its ending
        if handler is not None:
            signal.signal(signum, handler)
    return True


def disconnect(started_here: bool) -> None:
    """Leave the cluster; a Ray started here stops with every process it started."""
    import ray

    if started_here:
        ray.shutdown()


def code_fingerprint() -> str:
    """A hash of the sources of the ``a3c`` and ``lib`` packages as this process imports them."""
    import a3c
    from a3c import lib

    digest = hashlib.sha256()
    for package in (a3c, lib):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def check_same_code() -> None:
    """ConfigError unless every alive node imports the same a3c and lib as this driver: an
    actor running other code would act with other nets and settings, or fail mid-run."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    fingerprint = ray.remote(code_fingerprint)
    nodes = [node for node in ray.nodes() if node["Alive"]]
    answers = [fingerprint.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
        node["NodeID"], soft=False)).remote() for node in nodes]
    ready, _ = ray.wait(answers, num_returns=len(answers), timeout=CHECK_SECONDS)
    here = code_fingerprint()
    for node, answer in zip(nodes, answers):
        if answer not in ready:
            raise ConfigError(f"Ray node {node['NodeManagerAddress']} did not answer the code check in "
                              f"{CHECK_SECONDS:g} s")
        try:
            theirs = ray.get(answer)
        except ray.exceptions.TaskUnschedulableError:  # the node left since it was listed
            continue
        if theirs != here:
            raise ConfigError(f"Ray node {node['NodeManagerAddress']} runs other a3c code ({theirs}) than "
                              f"this driver ({here}): install the same version on every node")


class LearnerSeat:
    """An actor that does nothing but hold the learner's CPUs on the driver's node, as RLlib
    reserves its driver's, so that no rollout actor is placed on them."""

    def ready(self) -> bool:
        return True


def hold_learner_cpus(cpus: int) -> Any | None:
    """The seat holding ``cpus`` CPUs of the driver's node, or None where that node has
    fewer in Ray (a driver outside the cluster's nodes); ConfigError if they stay taken."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    node = next((node for node in ray.nodes() if node["NodeID"] == here), None)
    if node is None or node["Resources"].get("CPU", 0) < cpus:
        return None
    seat = ray.remote(LearnerSeat).options(
        num_cpus=cpus, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()
    ready, _ = ray.wait([seat.ready.remote()], timeout=CHECK_SECONDS)
    if not ready:
        ray.kill(seat)
        raise ConfigError(f"the learner's {cpus} CPU(s) on its node stayed taken for {CHECK_SECONDS:g} s")
    return seat


def actor_cpus(resource: str | None, held_here: int) -> float:
    """CPUs the rollout actors can have: on every alive node, or on those that carry the
    custom ``resource``, less the ``held_here`` the learner holds on the driver's node."""
    import ray

    here = ray.get_runtime_context().get_node_id()
    total = 0.0
    for node in ray.nodes():
        if node["Alive"] and (resource is None or node["Resources"].get(resource, 0) > 0):
            total += node["Resources"].get("CPU", 0) - (held_here if node["NodeID"] == here else 0)
    return total
