"""What starting children from the fork server saves, against spawning them: a learner
process starts a pool of CartPole workers, waits for every worker's first message, and
closes it, several rounds over (a run's start, then restarts). Each way runs in a fresh
process of its own; the figures are its wall seconds per round and the machine's busy
CPU-seconds over all its rounds.

    python -m benchmarks.child_start                      # 2 children, 5 rounds each way
    python -m benchmarks.child_start --processes 4 --rounds 10
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from benchmarks.steal import cpu_counters

METHODS = ("spawn", "forkserver")


def busy_cpu_seconds() -> float:
    """The machine's busy CPU time so far, all cores: every counter of /proc/stat's but idle
    and iowait (``benchmarks.steal.cpu_counters``, in clock ticks of 1/100 s)."""
    counters = cpu_counters()
    if counters is None:
        raise SystemExit("benchmarks.child_start needs /proc/stat (Linux)")
    user, nice, system, _idle, _iowait, irq, softirq, steal = counters[:8]
    return (user + nice + system + irq + softirq + steal) / 100


def pool_rounds(method: str, processes: int, rounds: int) -> list[float]:
    """Wall seconds of each round: a pool started, every worker's first message, the pool closed."""
    import torch
    import torch.multiprocessing as mp

    from a3c.algos import get_algorithm
    from a3c.config import make_config
    from a3c.lib.envs import describe_env
    from a3c.lib.models import build_net
    from a3c.transport import process_pool

    if method == "spawn":
        process_pool.child_context = lambda *_: mp.get_context("spawn")
    config = make_config(name="start", env="CartPole-v1", processes=processes, envs_per_process=4)
    env_info = describe_env(config.env_id)
    net = build_net(env_info)
    net.share_memory()
    version = torch.zeros((), dtype=torch.int64).share_memory_()
    seconds = []
    for round_index in range(rounds):
        started = time.monotonic()
        pool = process_pool.ProcessPool(get_algorithm(config.algo), config, env_info, net, version, round_index)
        pool.start()
        heard: set[int] = set()
        while len(heard) < processes:
            message = pool.get(timeout=0.5)
            if message is not None and hasattr(message, "worker_id"):
                heard.add(message.worker_id)
        pool.close()
        seconds.append(time.monotonic() - started)
    return seconds


def measured(method: str, processes: int, rounds: int) -> dict:
    """One way's rounds in a fresh process, with the machine's busy CPU-seconds over them."""
    before = busy_cpu_seconds()
    output = subprocess.run([sys.executable, "-m", "benchmarks.child_start", "--inner", method,
                             "--processes", str(processes), "--rounds", str(rounds)],
                            check=True, capture_output=True, text=True).stdout
    seconds = json.loads(output.strip().splitlines()[-1])
    return {"method": method, "first_round_s": seconds[0],
            "later_round_s": sum(seconds[1:]) / max(1, len(seconds) - 1),
            "busy_cpu_s": busy_cpu_seconds() - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inner", choices=METHODS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(pool_rounds(args.inner, args.processes, args.rounds)))
        return
    results = {method: measured(method, args.processes, args.rounds) for method in METHODS}
    print(f"{args.processes} CartPole children, {args.rounds} rounds each way (start, first message from each, close)")
    print(f"{'':12}{'first round s':>15}{'later rounds s':>16}{'busy CPU-s':>12}")
    for method, figures in results.items():
        print(f"{method:12}{figures['first_round_s']:15.2f}{figures['later_round_s']:16.2f}{figures['busy_cpu_s']:12.1f}")
    spawn, fork = results["spawn"], results["forkserver"]
    print(f"forkserver / spawn: first round {fork['first_round_s'] / spawn['first_round_s']:.2f}, later rounds "
          f"{fork['later_round_s'] / spawn['later_round_s']:.2f}, CPU {fork['busy_cpu_s'] / spawn['busy_cpu_s']:.2f}")


if __name__ == "__main__":
    main()
