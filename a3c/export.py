"""A trained policy out of the trainer: one file that runs without this package (TorchScript,
or ONNX with the ``export`` extra) and a JSON beside it that says what goes in and comes out.

The file maps a batch of observations, as the net reads them, to the greedy action (what
``compute_action(greedy=True)`` gives) and the action distribution's parameters (logits, a
Gaussian's means then log-stds, a Q-network's values); a recurrent policy also takes its state
and gives the next one. Observation statistics (``--normalize-observations``) and Atari's
scaling to [0, 1] are inside it; what the env's wrappers do (Atari's frame processing and
stacking of 4, ``--frame-stack``, flattening a Dict) is written in the JSON.

``python -m a3c.export CHECKPOINT DIR`` (installed: ``a3c-export``) or
``trainer.export_policy(DIR)``.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from a3c.lib.distributions import DiagGaussian, policy_distribution
from a3c.lib.recurrent import is_recurrent

FORMATS = ("torchscript", "onnx")
FILES = {"torchscript": "policy.pt", "onnx": "policy.onnx"}
PARAMETERS = {"Categorical": "logits", "MultiCategorical": "logits of each part, end to end",
              "DiagGaussian": "means, then log-stds", "SquashedGaussian": "means, then log-stds, before the tanh",
              "NoisyDeterministic": "the actor's outputs before they are squashed into the bounds"}
"""What the second output holds, by the policy's distribution."""


class GreedyPolicy(nn.Module):
    """The net and its greedy action: ``forward(observations[, state])`` gives (actions,
    distribution parameters[, next state]), float32 observations in, a Box's actions within
    its bounds as the env gets them."""

    def __init__(self, net: nn.Module, algorithm: Any):
        super().__init__()
        self.net = net
        self.algorithm = algorithm
        self.distribution = policy_distribution(net)
        self.recurrent = is_recurrent(net)
        self.bounded = isinstance(self.distribution, DiagGaussian)  # a Gaussian's draws are clipped for the env
        self.register_buffer("low", torch.tensor(self.distribution.low if self.bounded else [], dtype=torch.float32))
        self.register_buffer("high", torch.tensor(self.distribution.high if self.bounded else [], dtype=torch.float32))

    def forward(self, observations: torch.Tensor, state: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        if self.recurrent:
            head, _, next_state = self.net(observations, state)
        else:
            head, _ = self.net(observations)
        actions = self.algorithm.play_actions(head, True, self.distribution)
        if self.bounded:
            actions = torch.maximum(torch.minimum(actions, self.high), self.low)
        return (actions, head, next_state) if self.recurrent else (actions, head)


def example_inputs(net: nn.Module, env_info: Any, rows: int = 2) -> tuple[torch.Tensor, ...]:
    """Inputs of the net's shape and dtype to trace it on: observations (and zero states)."""
    dtype = torch.uint8 if env_info.atari else torch.float32
    observations = torch.zeros((rows, *env_info.observation_shape), dtype=dtype)
    return (observations, net.initial_state(rows)) if is_recurrent(net) else (observations,)


def describe(settings: Mapping[str, Any], env_info: Any, net: nn.Module, algorithm: Any, file: str,
             export_format: str) -> dict[str, Any]:
    """What the JSON beside the file says: its inputs and outputs and what the env's wrappers
    do; ``settings`` are the run's (a Config's fields, or a checkpoint's ``config``)."""
    frame_stack = settings.get("frame_stack") or 1
    observation = {"shape": list(env_info.observation_shape), "dtype": "uint8" if env_info.atari else "float32"}
    if env_info.atari:
        observation["from_env"] = ("gymnasium's AtariPreprocessing (84x84 grayscale, frame skip 4, noop reset) "
                                   "and the last 4 frames stacked, as a3c.lib.envs.make_env gives them")
    elif frame_stack > 1:
        observation["from_env"] = (f"the last {frame_stack} observations end to end (zeros before an "
                                   "episode's first), as a3c.lib.envs.make_env(env, frame_stack=N) gives them")
    if env_info.raw_observation_space is not None:
        observation["flattened"] = "gymnasium.spaces.flatten of the env's observation space"
    distribution = policy_distribution(net)
    parameters = "q_values" if algorithm.head_is_q_values else PARAMETERS[type(distribution).__name__]
    outputs = ["actions", parameters]
    described = {"format": export_format, "file": file, "env_id": settings["env_id"], "algo": algorithm.name,
                 "inputs": ["observations"], "observation": observation, "outputs": outputs,
                 "action_space": env_info.action_space,
                 "normalized_inside": bool(getattr(net, "normalizer", None) is not None)}
    if isinstance(distribution, DiagGaussian):
        described["action_bounds"] = [list(distribution.low), list(distribution.high)]
    if is_recurrent(net):
        described["inputs"].append("state")
        described["outputs"].append("next_state")
        described["state_shape"] = list(net.state_shape)
        described["state_start"] = "zeros at an episode's start"
    return described


def export_policy(net: nn.Module, algorithm: Any, settings: Mapping[str, Any], env_info: Any,
                  directory: str | Path, export_format: str = "torchscript") -> Path:
    """Write the policy file and its JSON into ``directory``; the file's path. ``settings`` are
    the run's (a Config's fields, or a checkpoint's ``config``)."""
    if export_format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {export_format!r}")
    if env_info.agents:
        raise ValueError("export is for single-agent policies")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    policy = GreedyPolicy(copy.deepcopy(net), algorithm).cpu().eval()  # the trainer's net stays as it is
    policy.requires_grad_(False)  # its outputs are plain tensors where it is loaded
    inputs = example_inputs(net, env_info)
    path = directory / FILES[export_format]
    with torch.no_grad():
        if export_format == "torchscript":
            torch.jit.trace(policy, inputs, check_trace=False).save(str(path))
        else:
            names = ["observations", "state"][:len(inputs)]
            outputs = ["actions", "parameters", "next_state"][:len(inputs) + 1]
            torch.onnx.export(policy, inputs, str(path), input_names=names, output_names=outputs,
                              dynamic_axes={name: {0: "batch"} for name in [*names, *outputs]}, dynamo=False)
    described = describe(settings, env_info, net, algorithm, path.name, export_format)
    (directory / "policy.json").write_text(json.dumps(described, indent=2) + "\n")
    return path


def main(argv: Sequence[str] | None = None, prog: str = "python -m a3c.export") -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Write a checkpoint's policy as one file that "
                                     "runs without this package, and a JSON of its inputs and outputs.")
    parser.add_argument("checkpoint", help="checkpoint.pt or best.pt of a run")
    parser.add_argument("directory", help="folder to write policy.pt (or policy.onnx) and policy.json into")
    parser.add_argument("--format", default="torchscript", choices=FORMATS)
    args = parser.parse_args(argv)
    from a3c.lifecycle.checkpoint import saved_settings
    from a3c.play import PlayError, load_policy

    try:
        policy = load_policy(args.checkpoint)
        env_info = policy.env.describe(policy.algorithm.central_critic)
        path = export_policy(policy.net, policy.algorithm, saved_settings(args.checkpoint), env_info,
                             args.directory, args.format)
    except (PlayError, ValueError, OSError, ImportError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {path} and {path.with_name('policy.json')}")
    return 0


def installed_command() -> None:
    sys.exit(main(prog="a3c-export"))


if __name__ == "__main__":
    sys.exit(main())

