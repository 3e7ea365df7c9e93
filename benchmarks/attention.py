"""Attention against the LSTM where the cue lies further back than the learner's sequences:
``--algo ppo`` on CueMemory-v0 with a gap of ``--delay`` steps and sequences of ``--seq-len``
(shorter), once with ``--lstm`` and once with ``use_attention`` (a memory of ``--memory``
steps), on the same seeds, in one invocation.

    python -m benchmarks.attention --delay 16 --seq-len 8 --seeds 0,1
"""
from __future__ import annotations

import argparse
import tempfile
import time

from a3c import Trainer
from a3c.lib.memory_task import ENV_ID


def frames_to_solve(memory: dict, delay: int, seq_len: int, seed: int, max_frames: int) -> dict:
    """One serial run to the task's goal (a mean-100 of 0.9): frames and seconds (None: not
    solved within ``max_frames``), and the last mean-100 (random play: 0)."""
    started = time.monotonic()
    with Trainer(env=ENV_ID, env_config={"delay": delay}, algo="ppo", seq_len=seq_len, backend="serial",
                 max_frames=max_frames, logdir=tempfile.mkdtemp(), name="attention", seed=seed, **memory) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
    return {"frames": result["frames"] if result["reason"] == "solved" else None,
            "seconds": time.monotonic() - started, "mean": result["episode_reward_mean"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=8)
    parser.add_argument("--memory", type=int, default=32)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--max-frames", type=int, default=300_000)
    args = parser.parse_args()
    memories = {"lstm": {"lstm": True},
                "attention": {"model": {"use_attention": True, "attention_memory_inference": args.memory}}}
    print(f"CueMemory-v0, delay {args.delay} (the cue {args.delay} steps before the answer), --seq-len "
          f"{args.seq_len}, attention memory {args.memory}, up to {args.max_frames:,} frames")
    print("| memory | seed | frames to a mean-100 of 0.9 | seconds | last mean-100 |")
    print("|---|---|---|---|---|")
    for seed in (int(seed) for seed in args.seeds.split(",")):
        for name, memory in memories.items():
            run = frames_to_solve(memory, args.delay, args.seq_len, seed, args.max_frames)
            shown = "not solved" if run["frames"] is None else f"{run['frames']:,}"
            print(f"| {name} | {seed} | {shown} | {run['seconds']:.0f} | {run['mean']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
