"""Runs inside a network namespace of its own (``unshare -rn``, only loopback up), started by
tests/test_ray_backend.py; prints one JSON object of what it saw, for that test to check.

1. A two-node Ray cluster on 127.0.0.1 (``ray start`` for a head of 3 CPUs and a second node
   of 2, each in a session of its own so that either can be killed whole):
   - more ``--processes`` than the CPUs besides the learner's: refused before any actor;
   - every CPU taken (the learner's seat and four actors), one actor on the second node
     killed: its replacement spills to the CPU it freed and sends blocks; once the trainer
     stops, no actor of the run is left though the driver is still connected;
   - A3C with two actors, one on each node, the second node killed mid-run: the
     replacement sends blocks from the head and the run goes on;
   - an actor whose env hangs is taken for stuck after ``--worker-timeout``;
   - ``--algo dqn`` for a few seconds: blocks reach the replay buffer and the learner steps;
   - ``--algo ppo`` on CartPole with two actors until its mean-100 is three times random play's;
   - tests/test_columns.py's algorithm: its own columns reach the learner intact;
   - tests/test_callbacks.py's worker-side callback: its custom metrics from the actors;
   - a third node that imports other a3c code: refused in one ConfigError.
2. ``run_a3c.py --backend ray`` with a Ray of its own, Ctrl-C: exit 130, a checkpoint, and
   none of the processes it started left; then ``--resume`` of that checkpoint on Ray, ended
   by SIGTERM: exit 143, a checkpoint further on, none left. Both signals go to the CLI's
   whole process group, which holds the Ray daemons it started: they have both blocked.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_AUTH_MODE"] = "disabled"  # nothing outside this namespace can reach the cluster
LEARNED = 66.0
"""CartPole's mean-100 that DQN and PPO on Ray must reach: three times random play's 22 (both
solve CartPole in the tests of the other backends, which share everything but the transport)."""
PACED = "tests.toy_envs:Paced-v0"
"""The env of the runs that check where actors run and how they are replaced, not what is
learned: it leaves the cores to the rest of the suite while Ray notices a lost node."""
ROOT = Path(__file__).resolve().parents[1]
PORT = 6390
ADDRESS = f"127.0.0.1:{PORT}"


def ray_node(*arguments: str, code: Path = ROOT) -> subprocess.Popen:
    """``ray start ... --block`` in a session of its own (killing its group ends the node),
    its workers importing a3c and the toy envs from ``code``."""
    ray = str(Path(sys.executable).with_name("ray"))
    return subprocess.Popen([ray, "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
                             *arguments], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(code)})


def wait_for_node(known: set[str], timeout: float = 90.0) -> None:
    """Until a node other than the ``known`` ones is alive."""
    import ray

    deadline = time.monotonic() + timeout
    while not any(node["Alive"] and node["NodeID"] not in known for node in ray.nodes()):
        if time.monotonic() > deadline:
            raise TimeoutError("the new Ray node did not come up")
        time.sleep(0.5)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_actors_left() -> list[str]:
    """Ray worker processes of this project's actors still running (their titles name them)."""
    names = ("RolloutActor", "WeightBoard", "LearnerSeat")
    left = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if command.startswith("ray::") and any(name in command for name in names):
            left.append(command[:80])
    return left


def blocks_sigterm(process: psutil.Process) -> bool:
    """Whether ``process`` has SIGTERM blocked (its SigBlk mask in /proc)."""
    with open(f"/proc/{process.pid}/status") as status:
        mask = next(line.split()[1] for line in status if line.startswith("SigBlk:"))
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


def still_there(find: Callable[[], list], seconds: float = 30.0) -> list:
    """What ``find`` still finds after waiting up to ``seconds`` for it to find nothing:
    a killed Ray worker exits a moment after the kill returns, later on a busy machine."""
    deadline = time.monotonic() + seconds
    left = find()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = find()
    return left


def other_code(folder: Path) -> Path:
    """A copy of the package with one comment added: another version of the code."""
    for package in ("a3c", "lib", "tests"):
        shutil.copytree(ROOT / package, folder / package, ignore=shutil.ignore_patterns("__pycache__"))
    with (folder / "a3c" / "settings.py").open("a") as settings:
        settings.write("# another version\n")
    return folder


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


def refused(**settings) -> str | None:
    """The ConfigError of a Trainer on the cluster with ``settings``, or None."""
    from a3c import ConfigError, Trainer

    try:
        with Trainer(backend="ray", ray_address=ADDRESS, **settings) as trainer:
            trainer.train(seconds=1)
    except ConfigError as error:
        return str(error)
    return None


def refused_elsewhere(logdir: Path) -> str:
    """``refused`` from a driver whose working directory holds no code: Ray puts a driver's
    directory first on every worker's path, which on one machine would hide a node's own."""
    driver = (f"from tests.ray_scenarios import refused\n"
              f"print(refused(env='CartPole-v1', processes=1, logdir={str(logdir)!r}, name='other'))")
    finished = subprocess.run([sys.executable, "-c", driver], cwd=logdir, capture_output=True, text=True,
                              timeout=180, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return finished.stdout.strip().splitlines()[-1] if finished.stdout.strip() else finished.stderr[-500:]


def replacement_on_a_full_cluster(logdir: Path, second_node: str) -> dict:
    """Every CPU taken; one actor on the second node killed: where its replacement runs."""
    import ray

    from a3c import Trainer

    seen: dict = {}
    with Trainer(env=PACED, backend="ray", ray_address=ADDRESS, processes=4, envs_per_process=4,
                 logdir=str(logdir), name="full", stop_reward=1e9, max_worker_restarts=2) as trainer:
        result = trainer.train(seconds=2)
        while None in nodes(trainer) and result["seconds"] < 60:
            result = trainer.train(seconds=1)
        seen["free_cpus_before"] = ray.available_resources().get("CPU", 0)
        victim = nodes(trainer).index(second_node)
        ray.kill(trainer._pool._actors[victim], no_restart=True)
        killed_at = time.monotonic()
        while result["worker_restarts"] == 0 or nodes(trainer)[victim] is None:
            result = trainer.train(seconds=1)
            if time.monotonic() - killed_at > 60:
                break
        seen["replacement_node"] = nodes(trainer)[victim]
        seen["replacement_seconds"] = time.monotonic() - killed_at
        seen["restarts"] = result["worker_restarts"]
        trainer.stop()
        seen["actors_left_after_stop"] = still_there(run_actors_left)
    return seen


def cluster_runs(logdir: Path) -> dict:
    import ray
    import torch

    from a3c import Trainer, register_model
    from a3c.config import ConfigError
    from a3c.transport.ray_cluster import check_address
    from tests.test_callbacks import CountingMetrics
    from tests.test_columns import stamped_run

    class LocalModel(torch.nn.Module):  # defined here: an actor can only have it by value
        def __init__(self, observation_space, config):
            super().__init__()
            self.features_dim = 6
            self.layer = torch.nn.Linear(observation_space.shape[0], 6)

        def forward(self, observations):
            return torch.relu(self.layer(observations))

    head = ray_node("--head", f"--port={PORT}", "--num-cpus=3", "--include-dashboard=false")
    second = third = None
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
        head_node = ray.get_runtime_context().get_node_id()
        second_node = next(node["NodeID"] for node in ray.nodes() if node["NodeID"] != head_node)
        seen: dict = {"too_many": refused(env="CartPole-v1", processes=5, logdir=str(logdir), name="many"),
                      "no_resource": refused(env="CartPole-v1", processes=1, ray_actor_resource="actor_host",
                                             logdir=str(logdir), name="resource")}
        seen["full"] = replacement_on_a_full_cluster(logdir, second_node)
        with Trainer(env=PACED, backend="ray", ray_address=ADDRESS, processes=2, envs_per_process=8,
                     logdir=str(logdir), name="nodes", max_seconds=240, max_worker_restarts=4,
                     stop_reward=1e9) as trainer:
            first = trainer.train(seconds=2)
            while None in nodes(trainer) and first["seconds"] < 60:  # every actor has sent
                first = trainer.train(seconds=1)
            seen["nodes_at_start"] = nodes(trainer)
            kill_group(second)
            second = None
            replaced_at = None  # the frames when every replacement had sent
            while not (result := trainer.train(seconds=2))["done"]:  # until replaced and trained on
                restarted = [worker for worker, count in enumerate(trainer._pool._incarnations) if count]
                seen["replacements_sent_from"] = [nodes(trainer)[worker] for worker in restarted]
                if restarted and None not in seen["replacements_sent_from"]:
                    replaced_at = replaced_at or result["frames"]
                    if result["frames"] >= replaced_at + 4000:
                        break
            seen["after_node_loss"] = {"steps_since_loss": result["policy_version"] - first["policy_version"],
                                       **{key: result[key] for key in ("reason", "worker_restarts", "frames")}}
            seen["head_node"] = head_node
            seen["frames_before_loss"] = first["frames"]
        print("cluster:", json.dumps(seen), file=sys.stderr, flush=True)
        with Trainer(env="tests.toy_envs:Hanging-v0", backend="ray", ray_address=ADDRESS, processes=1,
                     envs_per_process=1, logdir=str(logdir), name="hung", worker_timeout=3.0,
                     max_worker_restarts=1, stop_reward=1e9) as trainer:
            started = time.monotonic()
            while not (result := trainer.train(seconds=2))["done"] and time.monotonic() - started < 90:
                pass
            seen["hung"] = {"reason": result["reason"], "message": result.get("message", ""),
                            "restarts": result["worker_restarts"], "seconds": time.monotonic() - started}
        with Trainer(env="CartPole-v1", backend="ray", ray_address=ADDRESS, algo="dqn", processes=2,
                     logdir=str(logdir), name="dqn", max_seconds=120, learning_starts=500,
                     stop_reward=LEARNED) as trainer:
            while not (result := trainer.train(seconds=5))["done"]:
                pass
            seen["dqn"] = {"steps": result["policy_version"], "replay": len(trainer._run.learner.replay),
                           "frames": result["frames"], "reason": result["reason"],
                           "mean_reward": result["episode_reward_mean"]}
        with Trainer(env="CartPole-v1", backend="ray", ray_address=ADDRESS, algo="ppo", processes=2,
                     logdir=str(logdir), name="ppo", max_seconds=120, stop_reward=LEARNED) as trainer:
            lags = []  # an iteration that ends in the solve may have had no optimizer step
            while not (result := trainer.train(seconds=5))["done"]:
                lags.append(result["policy_lag"])
            lags.append(result["policy_lag"])
            seen["ppo"] = {"policy_lag": max((lag for lag in lags if lag is not None), default=None),
                           **{key: result[key] for key in ("reason", "frames", "policy_version",
                                                           "episode_reward_mean")}}
        with Trainer(env="tests.toy_envs:Reach-v0", backend="ray", ray_address=ADDRESS, algo="sac", processes=1,
                     logdir=str(logdir), name="sac", batch_size=64, replay_ratio=16, learning_starts=200,
                     stop_reward=1e9) as trainer:
            result = trainer.train(frames=800)
            replay = trainer._run.learner.steps.replay
            actions = replay.actions[:len(replay), 0]
            seen["sac"] = {"replay": len(replay), "actions": [float(actions.min()), float(actions.max())],
                           "distinct_actions": len(set(actions.tolist())),
                           **{key: result[key] for key in ("frames", "policy_lag", "policy_version")}}
        seen["columns"] = stamped_run(logdir, 2000, backend="ray", ray_address=ADDRESS, name="stamped")
        register_model("local", LocalModel)
        with Trainer(env="tests.toy_envs:Counting-v0", backend="ray", ray_address=ADDRESS, processes=2,
                     callbacks=[CountingMetrics()], logdir=str(logdir), name="callbacks", stop_reward=1e9,
                     model={"custom_model": "local"}) as trainer:
            result = trainer.train(frames=1000)
            seen["callbacks"] = result["custom_metrics"]
            seen["custom_model"] = {"features": trainer.net.encoder.size, "restarts": result["worker_restarts"],
                                    "frames": result["frames"]}
            seen["foreach_env"] = trainer.workers.foreach_env(lambda env: type(env).__name__)
            seen["frames_after_call"] = trainer.train(frames=500)["frames"]
        third = ray_node(f"--address={ADDRESS}", "--num-cpus=1", code=other_code(logdir / "other"))
        wait_for_node(known={head_node, second_node})
        seen["other_code"] = refused_elsewhere(logdir)
        seen["cluster_still_up"] = ray.is_initialized()
        ray.shutdown()
    finally:
        ray.shutdown()  # before the nodes go: a driver that loses its cluster aborts the process
        for node in (third, second, head):
            if node is not None:
                kill_group(node)
    return seen


def own_ray_interrupted(logdir: Path, signum: int, resume: Path | None = None) -> dict:
    """The CLI with a local Ray of its own (resuming the checkpoint ``resume``, if given),
    stopped by ``signum`` to its whole process group once it trains."""
    command = [sys.executable, "run_a3c.py", "-n", "own", "--env", "CartPole-v1", "--backend", "ray",
               "--logdir", str(logdir), "--stop-reward", "1e9", "--report-interval", "1",
               *(["--resume", str(resume)] if resume else [])]
    cli = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    descendants, daemons, output, first_frames = [], [], [], None
    for line in cli.stdout:
        output.append(line)
        if not line.startswith("frames "):
            continue
        frames = int(line.split()[1].replace(",", ""))
        first_frames = frames if first_frames is None else first_frames
        if frames > first_frames:  # training
            processes = psutil.Process(cli.pid).children(recursive=True)
            descendants = [process.pid for process in processes]
            daemons = [blocks_sigterm(process) for process in processes
                       if process.name() in ("gcs_server", "raylet")]
            break
    os.killpg(cli.pid, signum)  # as Ctrl-C in a terminal does: to the whole process group
    output += cli.stdout.readlines()
    code = cli.wait(timeout=60)
    left = still_there(lambda: [pid for pid in descendants if alive(pid)])
    run_dir = next(path for path in logdir.iterdir() if path.name.startswith("own__"))
    if not (run_dir / "summary.json").exists():  # say why: the run's own words, not a FileNotFoundError
        raise AssertionError(f"no summary.json after signal {signum}, exit {code}, "
                             f"{len(left)} processes left:\n{''.join(output)[-3000:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"exit_code": code, "descendants": len(descendants), "daemons_block_sigterm": daemons,
            "left": left, "reason": summary["reason"], "checkpoint": str(run_dir / "checkpoint.pt"),
            "saved": (run_dir / "checkpoint.pt").exists(), "frames": summary["frames"],
            "output": "".join(output)[-3000:]}


def leave_with_parent() -> None:
    """Once the pytest that started this scenario is gone (killed by a timeout, say), kill
    every process the scenario started (the nodes, their daemons, a CLI run) and exit."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    leave_with_parent()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with tempfile.TemporaryDirectory() as folder:
        logdir = Path(folder)
        seen = {"cluster": cluster_runs(logdir), "own": own_ray_interrupted(logdir, signal.SIGINT)}
        seen["terminated"] = own_ray_interrupted(logdir, signal.SIGTERM, resume=Path(seen["own"]["checkpoint"]))
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
