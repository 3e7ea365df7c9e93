"""DQN's env frames/s on Pong with this tree's code against another revision's, run in
turn on this machine: the rate while the replay buffer fills (children, transport and
buffer inserts alone) and while the learner trains at the replay ratio.

    python -m benchmarks.dqn_transfer --rev 200aa75 --rounds 2 --seconds 100

The other revision is checked out into a temporary git worktree and run from there.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PONG = "PongNoFrameskip-v4"


def phase_rates(progress: list[dict]) -> dict[str, float]:
    """Frames/s before the first optimizer step and after it, from cumulative records."""
    filling = [record for record in progress if record["policy_version"] == 0 and record["seconds"] > 0]
    learning = [record for record in progress if record["policy_version"] > 0]
    rates = {}
    if filling:
        rates["filling"] = filling[-1]["frames"] / filling[-1]["seconds"]
    if len(learning) >= 2:
        first, last = learning[0], learning[-1]
        rates["learning"] = (last["frames"] - first["frames"]) / (last["seconds"] - first["seconds"])
    return rates


def run_once(tree: Path, logdir: Path, name: str, seconds: float, learning_starts: int) -> dict[str, float]:
    subprocess.run([sys.executable, "run_a3c.py", "-n", name, "--env", PONG, "--algo", "dqn",
                    "--replay-size", str(2 * learning_starts), "--learning-starts", str(learning_starts),
                    "--max-seconds", str(seconds), "--report-interval", "2", "--logdir", str(logdir)],
                   cwd=tree, check=True, capture_output=True)
    (run_dir,) = [path for path in logdir.iterdir() if path.name.startswith(name + "__")]
    lines = (run_dir / "progress.jsonl").read_text().splitlines()
    return phase_rates([json.loads(line) for line in lines if line.strip()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="the revision to compare with (the baseline)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, taken in turn")
    parser.add_argument("--seconds", type=float, default=100.0, help="each run's length")
    parser.add_argument("--learning-starts", type=int, default=60_000,
                        help="transitions stored before learning: the filling phase's length")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        baseline_tree = Path(folder) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline_tree), args.rev], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            rates: dict[str, list[dict[str, float]]] = {"baseline": [], "this tree": []}
            for round_index in range(args.rounds):
                for label, tree in (("baseline", baseline_tree), ("this tree", ROOT)):
                    logdir = Path(folder) / f"runs-{round_index}-{label.replace(' ', '-')}"
                    rates[label].append(run_once(tree, logdir, "dqn", args.seconds, args.learning_starts))
                    print(f"round {round_index + 1}, {label}: " + ", ".join(
                        f"{phase} {rate:,.0f} frames/s" for phase, rate in rates[label][-1].items()), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline_tree)], cwd=ROOT, check=False)
    print(f"\nDQN on {PONG}, median over {args.rounds} rounds, baseline {args.rev}:")
    print("| phase | baseline frames/s | this tree frames/s | ratio |\n| - | - | - | - |")
    for phase in ("filling", "learning"):
        base = statistics.median(run[phase] for run in rates["baseline"])
        ours = statistics.median(run[phase] for run in rates["this tree"])
        print(f"| {phase} | {base:,.0f} | {ours:,.0f} | {ours / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
