"""Runs inside a network namespace of its own (``unshare -n``, only loopback up), started by
tests/test_ray_backend.py; prints one JSON object of what it saw, for that test to check.

1. A two-node Ray cluster on 127.0.0.1 (``ray start`` for a head and a second node, each in
   a session of its own so that either can be killed whole): A3C on CartPole with four
   actors spread over both nodes, the second node killed mid-run, the run going on to solve.
2. ``--algo dqn`` on the same cluster for a few seconds: blocks reach the replay buffer and
   the learner steps.
3. ``run_a3c.py --backend ray`` with a Ray of its own, Ctrl-C: exit 130, a checkpoint, and
   none of the processes it started left; then ``--resume`` of that checkpoint on Ray.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_AUTH_MODE"] = "disabled"  # nothing outside this namespace can reach the cluster
ROOT = Path(__file__).resolve().parents[1]
PORT = 6390
ADDRESS = f"127.0.0.1:{PORT}"


def ray_node(*arguments: str) -> subprocess.Popen:
    """``ray start ... --block`` in a session of its own: killing its group ends the node."""
    ray = str(Path(sys.executable).with_name("ray"))
    return subprocess.Popen([ray, "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                             *arguments], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


def wait_for_nodes(count: int, timeout: float = 90.0) -> None:
    import ray

    deadline = time.monotonic() + timeout
    while sum(node["Alive"] for node in ray.nodes()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} Ray nodes did not come up")
        time.sleep(0.5)


def nodes(trainer) -> list[str | None]:
    """The node each actor's last block came from (None before its first)."""
    return [worker.node_id for worker in trainer._pool.workers()]


def cluster_runs(logdir: Path) -> dict:
    import ray

    from a3c import Trainer
    from a3c.config import ConfigError
    from a3c.ray_cluster import check_address

    head = ray_node("--head", f"--port={PORT}", "--num-cpus=3", "--include-dashboard=false")
    second = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                check_address(ADDRESS)
                break
            except ConfigError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        second = ray_node(f"--address={ADDRESS}", "--num-cpus=2")
        ray.init(address=ADDRESS, log_to_driver=False)
        wait_for_nodes(2)
        seen: dict = {}
        with Trainer(env="CartPole-v1", backend="ray", ray_address=ADDRESS, processes=4, envs_per_process=8,
                     logdir=str(logdir), name="nodes", max_seconds=240, max_worker_restarts=4) as trainer:
            first = trainer.train(seconds=2)
            while None in nodes(trainer) and first["seconds"] < 60:  # every actor has sent
                first = trainer.train(seconds=1)
            seen["nodes_at_start"] = nodes(trainer)
            kill_group(second)
            second = None
            while not (result := trainer.train(seconds=5))["done"]:
                pass
            seen["after_node_loss"] = {key: result[key] for key in ("reason", "worker_restarts", "frames",
                                                                   "episode_reward_mean")}
            seen["frames_before_loss"] = first["frames"]
        print("cluster:", json.dumps(seen), file=sys.stderr, flush=True)
        with Trainer(env="CartPole-v1", backend="ray", ray_address=ADDRESS, algo="dqn", processes=2,
                     logdir=str(logdir), name="dqn", max_seconds=60, learning_starts=500) as trainer:
            while not (result := trainer.train(seconds=5))["done"] and result["policy_version"] < 50:
                pass
            seen["dqn"] = {"steps": result["policy_version"], "replay": len(trainer._run.learner.replay),
                           "frames": result["frames"]}
        seen["cluster_still_up"] = ray.is_initialized()
        ray.shutdown()
    finally:
        for node in (second, head):
            if node is not None:
                kill_group(node)
    return seen


def own_ray_interrupted(logdir: Path) -> dict:
    """The CLI with a local Ray of its own, stopped by Ctrl-C once it trains; then resumed."""
    command = [sys.executable, "run_a3c.py", "-n", "own", "--env", "CartPole-v1", "--backend", "ray",
               "--logdir", str(logdir), "--stop-reward", "1e9", "--report-interval", "1"]
    cli = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    descendants, output = [], []
    for line in cli.stdout:
        output.append(line)
        if line.startswith("frames ") and not line.startswith("frames 0 "):  # training
            descendants = [process.pid for process in psutil.Process(cli.pid).children(recursive=True)]
            break
    os.killpg(cli.pid, signal.SIGINT)  # as Ctrl-C in a terminal: to the whole process group
    output += cli.stdout.readlines()
    code = cli.wait(timeout=60)
    time.sleep(3)
    left = [pid for pid in descendants if psutil.pid_exists(pid)
            and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    run_dir = next(path for path in logdir.iterdir() if path.name.startswith("own__"))
    summary = json.loads((run_dir / "summary.json").read_text())
    resumed = subprocess.run([sys.executable, "run_a3c.py", "-n", "own", "--env", "CartPole-v1",
                              "--backend", "ray", "--stop-reward", "1e9", "--resume", str(run_dir / "checkpoint.pt"),
                              "--max-seconds", "5"], cwd=ROOT, capture_output=True, text=True, timeout=180,
                             check=False)
    after = json.loads((run_dir / "summary.json").read_text())
    return {"exit_code": code, "descendants": len(descendants), "left": left, "reason": summary["reason"],
            "checkpoint": (run_dir / "checkpoint.pt").exists(), "frames": summary["frames"],
            "resumed_exit_code": resumed.returncode, "resumed_frames": after["frames"],
            "output": "".join(output)[-3000:], "resumed_output": (resumed.stdout + resumed.stderr)[-3000:]}


def main() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with tempfile.TemporaryDirectory() as folder:
        logdir = Path(folder)
        seen = {"cluster": cluster_runs(logdir), "own": own_ray_interrupted(logdir)}
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
