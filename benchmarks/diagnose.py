"""What tells a stuck actor-critic from a slow one, from a run's own records: the learner's
sampled diagnostics (each loss term's gradient norm and its share of the clip, the update's
size against the weights', the share of each ReLU layer's units firing on the batch), and,
from the run's checkpoint, the share of units that fire on states of random play and how
much the policy's logits vary across those states.

    python -m benchmarks.diagnose runs/RUN --out docs/learning_diagnosis.json

docs/learning.md quotes these figures.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from a3c.algos import get_algorithm
from a3c.algos.a3c.learner import relu_activity
from a3c.lib.envs import describe_env, make_env
from a3c.lib.models import forward
from a3c.lifecycle.checkpoint import load_checkpoint, saved_algorithm


def sampled_diagnostics(run_dir: Path) -> dict[str, dict[str, float]]:
    """Each ``diagnostics/`` scalar over the run: how many samples, min, median, max."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    figures = {}
    for tag in sorted(events.Tags()["scalars"]):
        if tag.startswith("diagnostics/"):
            values = [point.value for point in events.Scalars(tag)]
            figures[tag.removeprefix("diagnostics/")] = {
                "samples": len(values), "min": min(values), "median": statistics.median(values),
                "max": max(values)}
    return figures


def random_play_states(env_id: str, count: int, seed: int, screen_size: int | None = None) -> np.ndarray:
    """``count`` observations of uniformly random play, from one episode or more."""
    env = make_env(env_id, screen_size=screen_size)
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    states = []
    try:
        while len(states) < count:
            states.append(np.asarray(observation))
            observation, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            if terminated or truncated:
                observation, _ = env.reset()
    finally:
        env.close()
    return np.stack(states)


def checkpoint_activity(path: Path, states: int, seed: int) -> dict[str, float]:
    """Share of each ReLU layer's units firing on some state of random play, and the spread
    (standard deviation across states, averaged over actions) of the logits and values."""
    state = load_checkpoint(path)
    config = state["config"]
    screen_size = config.get("screen_size")
    net = get_algorithm(saved_algorithm(state)).build_net(describe_env(config["env_id"], screen_size), config)
    net.load_state_dict(state["model"])
    observations = torch.as_tensor(random_play_states(config["env_id"], states, seed, screen_size))
    with torch.no_grad(), relu_activity(net) as alive:
        logits, values = forward(net, observations)
    return {**{f"alive_{name}": share for name, share in alive.items()},
            "logits_spread": float(logits.std(0).mean()), "values_spread": float(values.std()),
            "frames": state["counters"]["frames"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (with checkpoint.pt)")
    parser.add_argument("--states", type=int, default=80, help="states of random play fed to the net")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    figures = {run.name: {"sampled": sampled_diagnostics(run),
                          "checkpoint": checkpoint_activity(run / "checkpoint.pt", args.states, args.seed)}
               for run in args.runs}
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
