"""The one way tests launch ``run_a3c.py``: a ``Trainer`` whose output lines arrive as they
are printed, so a test waits for the event it needs (a progress line, a restart) instead of
sleeping for a guess at how fast this machine is."""
from __future__ import annotations

import importlib.util
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

import a3c.cli
from tests.namespaces import (
    RAY_SCENARIO,
    RAY_SCENARIOS,
    SCENARIO_FOLDER,
    Scenario,
    namespace_problem,
    scenario_processes,
)
from tests.process_tree import workers

ROOT = Path(__file__).resolve().parents[1]
REAL_RAY_STATE = pytest.StashKey[dict | None]()
SESSION_HOME = pytest.StashKey[str]()


RUN_A3C = [sys.executable, "run_a3c.py"]
INSTALLED_COMMAND = Path(sys.executable).parent / "a3c-train"
"""The console script ``pip install -e .`` puts beside this Python."""


class Trainer:
    """``run_a3c.py ARGS`` (or another ``command``) in a subprocess, its stdout and stderr read
    line by line by a thread, and every descendant it has started recorded each time the test
    looks."""

    def __init__(self, args: list[str], env: dict | None = None, command: list[str] = RUN_A3C):
        self.process = subprocess.Popen([*command, *args], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.first_line_at: float | None = None
        """When the first line arrived (``time.monotonic()``): the run has started, so a
        test's time bound need not cover imports on a loaded machine."""
        self.descendants: set[int] = set()
        self._arrived: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if self.first_line_at is None:
                self.first_line_at = time.monotonic()
            self._arrived.put(line)
        self._arrived.put(None)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def children(self) -> list[int]:
        """The trainer's workers now: its descendants but multiprocessing's helpers
        (``tests.process_tree``); every descendant, helpers too, is recorded."""
        try:
            root = psutil.Process(self.process.pid)
            self.descendants.update(process.pid for process in root.children(recursive=True))
        except psutil.NoSuchProcess:
            return []
        return [process.pid for process in workers(root)]

    def wait_for(self, wanted: str | Callable[[str], bool], timeout: float = 120.0) -> str:
        """The first line from now on that contains ``wanted`` (or satisfies it); fails the
        test if the trainer exits or ``timeout`` passes first."""
        matches = wanted if callable(wanted) else (lambda line: wanted in line)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.children()
            try:
                line = self._arrived.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                pytest.fail(f"the trainer exited before a line with {wanted!r}:\n{self.output}")
            self.lines.append(line)
            if matches(line):
                return line
        pytest.fail(f"no line with {wanted!r} within {timeout} s:\n{self.output}")

    def wait_for_children(self, count: int, timeout: float = 120.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while len(pids := self.children()) < count:
            assert time.monotonic() < deadline, f"only {len(pids)} of {count} children started"
            time.sleep(0.1)
        return pids

    def finish(self, timeout: float = 240.0) -> int:
        """Wait for the trainer to exit, reading the rest of its output; its exit code."""
        deadline = time.monotonic() + timeout
        while (line := self._next_line(deadline)) is not None:
            self.lines.append(line)
        return self.process.wait(timeout=max(1.0, deadline - time.monotonic()))

    def _next_line(self, deadline: float) -> str | None:
        while True:
            self.children()
            try:
                return self._arrived.get(timeout=0.2)
            except queue.Empty:
                if time.monotonic() > deadline:
                    pytest.fail(f"trainer still running after its time:\n{self.output}")


@pytest.fixture
def launch() -> Iterator[Callable[..., Trainer]]:
    """``launch(args, env=None, command=RUN_A3C)`` starts a Trainer; any still running at the
    end is killed."""
    started: list[Trainer] = []

    def start(args: list[str], env: dict | None = None, command: list[str] = RUN_A3C) -> Trainer:
        trainer = Trainer(args, env, command)
        started.append(trainer)
        return trainer

    yield start
    for trainer in started:
        if trainer.process.poll() is None:
            trainer.process.kill()
            trainer.process.wait()


class CommandRun:
    """What ``a3c.cli.main(args)`` did when run in this process: its exit code, its output
    (stdout then stderr), and every worker it started, recorded by a thread while it ran.
    The test's own process is the learner, so a run costs no interpreter, torch import or
    fork server of its own; the tests that need the command's process itself (its signals,
    its exit, its wrapper script) use ``launch``."""

    def __init__(self, code: int, output: str, workers: set[int]):
        self.code, self.output, self.workers = code, output, workers


@pytest.fixture
def run_command(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], CommandRun]:
    """``run_command(args)``: the command run in this process (``CommandRun``)."""

    def run(args: list[str]) -> CommandRun:
        capsys.readouterr()
        before = {process.pid for process in workers(psutil.Process())} | scenario_processes()
        seen: set[int] = set()
        running = threading.Event()
        running.set()

        def watch() -> None:
            while running.is_set():
                seen.update(process.pid for process in workers(psutil.Process()))
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            code = a3c.cli.main(args)
        finally:
            running.clear()
            watcher.join()
        captured = capsys.readouterr()
        return CommandRun(code, captured.out + captured.err, seen - before)

    return run


REAL_RAY_DIR = Path.home() / ".ray"
"""Where Ray keeps the user's own files (its authentication token among them), read before
the suite points HOME elsewhere."""


def folder_state(folder: Path) -> dict[str, tuple[int, int]] | None:
    """Each file under ``folder`` with its size and modification time; None if it is absent."""
    if not folder.exists():
        return None
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}


def pytest_configure(config: pytest.Config) -> None:
    """Everything the suite starts (Ray's nodes, Tune, runs) keeps its state in a temporary
    home and temp folder of the session's, not in the user's ``~/.ray``: a local Ray writes its
    token there, and a cluster started later would pick it up (README, "On a Ray cluster")."""
    config.stash[REAL_RAY_STATE] = folder_state(REAL_RAY_DIR)
    home = tempfile.mkdtemp(prefix="a3c-tests-")  # short: Ray's socket paths live below it
    config.stash[SESSION_HOME] = home
    os.environ["HOME"] = home
    os.environ["RAY_TMPDIR"] = home
    os.environ["WANDB_MODE"] = "offline"  # --track's W&B runs stay on disk: no server is ever asked
    if _is_xdist_controller(config):
        os.environ[SCENARIO_FOLDER] = str(_scenario_folder(config))  # the workers it starts inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(SESSION_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def real_ray_dir_unchanged(request: pytest.FixtureRequest) -> Callable[[], bool]:
    """Whether the user's ``~/.ray`` is still as it was before the suite started."""
    before = request.config.stash[REAL_RAY_STATE]
    return lambda: folder_state(REAL_RAY_DIR) == before


def _scenario_folder(config: pytest.Config) -> Path:
    return Path(config.stash[SESSION_HOME]) / "ray-scenario"


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config: pytest.Config) -> bool:
    return not _is_xdist_worker(config) and getattr(config.option, "numprocesses", None) not in (None, 0)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start Ray's two-node scenario now if a selected test reads it, so that its waiting
    overlaps the tests before it (tests/namespaces.py). Under ``pytest -n N`` a worker only
    says it is wanted, and the controller, which outlives every worker, starts it."""
    wanted = any("seen" in getattr(item, "fixturenames", ()) and item.nodeid.startswith("tests/test_ray_backend.py")
                 for item in session.items)
    wanted = wanted and not session.config.option.collectonly
    if not wanted or importlib.util.find_spec("ray") is None or namespace_problem() is not None:
        return
    if _is_xdist_worker(session.config):
        Path(os.environ[SCENARIO_FOLDER]).mkdir(parents=True, exist_ok=True)
        (Path(os.environ[SCENARIO_FOLDER]) / "wanted").touch()
    else:
        _start_scenario(session.config)


def _start_scenario(config: pytest.Config) -> None:
    folder = _scenario_folder(config)
    os.environ[SCENARIO_FOLDER] = str(folder)
    config.stash[RAY_SCENARIO] = Scenario(RAY_SCENARIOS, folder)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids) -> None:
    """The controller starts the scenario once, when the first worker that collected its
    tests has said so."""
    config = node.config
    if RAY_SCENARIO not in config.stash and (_scenario_folder(config) / "wanted").exists():
        _start_scenario(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A scenario no test waited for (a run stopped early) leaves nothing behind."""
    scenario = session.config.stash.get(RAY_SCENARIO, None)
    if scenario is not None:
        scenario.stop()
