"""Ray's scenarios run in a network namespace of their own (only loopback up). The two-node
scenario mostly waits (nodes starting, actors timing out: about a third of a core over its
three minutes), so it starts as soon as the suite is collected and runs beside the tests
before it; ``tests/test_ray_backend.py`` collects its result."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[1]
RAY_SCENARIOS = ["unshare", "-rn", sys.executable, "-m", "tests.ray_scenarios"]


SKIP_WITHOUT_NAMESPACE = "A3C_SKIP_RAY_TESTS"
"""Set to 1 on a developer's machine that cannot make network namespaces, the Ray tests
skip there; anywhere else (CI) they fail, so the Ray backend is never left untested."""


def skip_or_fail_without_namespace() -> None:
    """Fail the calling test where no network namespace can be made, or skip it if
    ``SKIP_WITHOUT_NAMESPACE`` allows; return where one can."""
    problem = namespace_problem()
    if problem is None:
        return
    if os.environ.get(SKIP_WITHOUT_NAMESPACE) == "1":
        pytest.skip(problem)
    pytest.fail(f"{problem} (set {SKIP_WITHOUT_NAMESPACE}=1 to skip the Ray tests on this machine)")


def namespace_problem() -> str | None:
    """Why a network namespace cannot be made here, or None."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"], check=False,
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"network namespaces are not permitted here: {probe.stderr.strip()}"
    return None


SCENARIO_FOLDER = "A3C_RAY_SCENARIO_FOLDER"
"""Set by the pytest process that started the scenario (the controller, under
``pytest -n 2``) to the folder its output goes to, so that a worker process reads it."""


class Scenario:
    """``command`` started now in a session of its own, its output in files of ``folder`` (a
    pipe nobody reads would fill and stall it) and its exit code in ``folder/exit`` once it
    ends; ``scenario_result`` reads them from any process, ``stop`` kills what is left."""

    def __init__(self, command: list[str], folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        (folder / "started").write_text(repr(time.time()))
        with open(folder / "stdout", "w") as stdout, open(folder / "stderr", "w") as stderr:
            self.process = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=stderr,
                                            text=True, start_new_session=True)
        # reaped as soon as it exits, so that tests listing this process's children see no zombie
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        code = self.process.wait()
        (self.folder / "exit.part").write_text(str(code))
        (self.folder / "exit.part").rename(self.folder / "exit")

    def stop(self) -> None:
        """Kill the scenario and everything it started (its Ray nodes run in sessions of
        their own, out of reach of a signal to its group)."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in [*psutil.Process(self.process.pid).children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
        self.process.kill()
        self.process.wait()


def scenario_result(folder: Path, timeout: float) -> dict:
    """The JSON object the scenario writing to ``folder`` printed last; fails with its
    output's tail if it failed or had not ended ``timeout`` seconds after its start."""
    deadline = float((folder / "started").read_text()) + timeout
    while not (folder / "exit").exists() and time.time() < deadline:
        time.sleep(0.5)
    code = int((folder / "exit").read_text()) if (folder / "exit").exists() else None
    stdout, stderr = (folder / "stdout").read_text(), (folder / "stderr").read_text()
    assert code == 0, f"exit {code} (None: still running after {timeout} s):\n{stdout[-3000:]}{stderr[-5000:]}"
    return json.loads(stdout.strip().splitlines()[-1])


def scenario_processes() -> set[int]:
    """The PIDs of a scenario this process started that still runs, and of its descendants:
    tests that check what this process leaves behind leave these out."""
    pids = set()
    for child in psutil.Process().children():
        try:
            if "tests.ray_scenarios" in child.cmdline():
                pids |= {child.pid, *(process.pid for process in child.children(recursive=True))}
        except psutil.NoSuchProcess:
            continue
    return pids


RAY_SCENARIO = pytest.StashKey[Scenario]()
"""Where conftest.py keeps the two-node scenario it started, if the run selected its tests."""
