"""An exported policy runs where this package cannot be imported and acts as the trainer
does: the TorchScript and the ONNX file of a Discrete, a Box, an image, a recurrent and an
attention policy give ``compute_action(greedy=True)``'s actions on 200 observations."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from a3c import Trainer
from a3c.export import main

RUNNER = textwrap.dedent("""
    import sys
    sys.modules["a3c"] = None  # this process cannot import the package
    import json
    import numpy as np

    def act(folder):
        described = json.load(open(folder + "/policy.json"))
        observations = np.load(folder + "/observations.npy")
        recurrent = "state" in described["inputs"]
        state = np.zeros((1, *described.get("state_shape", [0])), np.float32)
        if described["format"] == "torchscript":
            import torch
            policy = torch.jit.load(folder + "/policy.pt")
            run = lambda rows, state: [out.numpy() for out in policy(*map(torch.as_tensor, [rows, state][:1 + recurrent]))]
        else:
            import onnxruntime
            session = onnxruntime.InferenceSession(folder + "/policy.onnx")
            run = lambda rows, state: session.run(None, dict(zip(described["inputs"], [rows, state])))
        if recurrent:  # one episode: each step from the state the last one gave
            actions = []
            for row in observations:
                action, _, state = run(row[None], state)
                actions.append(action[0])
            actions = np.stack(actions)
        else:
            actions = run(observations, state)[0]
        np.save(folder + "/actions.npy", actions)

    for folder in sys.argv[1:]:
        act(folder)
""")

CASES = {
    "discrete": ("CartPole-v1", {}),
    "box": ("Pendulum-v1", {"algo": "ppo"}),
    "image": ("PongNoFrameskip-v4", {"envs_per_process": 2}),
    "recurrent": ("CartPole-v1", {"lstm": True}),
    "attention": ("CartPole-v1", {"model": {"use_attention": True, "attention_memory_inference": 6}}),
}


def observations_of(env_info, rows: int, seed: int = 0) -> np.ndarray:
    generator = np.random.default_rng(seed)
    if env_info.atari:
        return generator.integers(0, 256, (rows, *env_info.observation_shape), dtype=np.uint8)
    return generator.normal(0, 1, (rows, *env_info.observation_shape)).astype(np.float32)


def exported(case: str, folder) -> np.ndarray:
    """``case``'s policy trained for 200 frames and exported in both formats under ``folder``,
    each beside the observations it is to act on; the trainer's greedy actions on them."""
    env, settings = CASES[case]
    with Trainer(env=env, backend="serial", processes=1, max_frames=200, logdir=str(folder), name="x",
                 **{"envs_per_process": 4, **settings}) as trainer:
        while not trainer.train()["done"]:
            pass
        observations = observations_of(trainer._shared.env_info, 200)
        if settings.get("lstm") or "model" in settings:
            expected, state = [], None
            for row in observations:
                action, state = trainer.compute_action(row, greedy=True, state=state)
                expected.append(action)
            expected = np.array(expected)
        else:
            expected = np.array([trainer.compute_action(row, greedy=True) for row in observations])
        for export_format in ("torchscript", "onnx"):
            trainer.export_policy(folder / export_format, export_format)
            np.save(folder / export_format / "observations.npy", observations)
    return expected


@pytest.mark.timeout(240)
def test_an_export_acts_as_compute_action_without_the_package(tmp_path):
    expected = {case: exported(case, tmp_path / case) for case in CASES}
    folders = [tmp_path / case / export_format for case in CASES for export_format in ("torchscript", "onnx")]
    # one process acts with all ten: torch and onnxruntime imported once
    done = subprocess.run([sys.executable, "-c", RUNNER, *map(str, folders)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    for folder in folders:
        case, export_format = folder.parent.name, folder.name
        actions, wanted = np.load(folder / "actions.npy"), expected[case]
        if np.issubdtype(wanted.dtype, np.integer):
            assert np.array_equal(actions, wanted), (case, export_format, actions[:10], wanted[:10])
        else:
            assert np.allclose(actions.reshape(wanted.shape), wanted, atol=1e-5), (case, export_format)
    described = {case: json.loads((tmp_path / case / "onnx" / "policy.json").read_text()) for case in CASES}
    for case, (env, _) in CASES.items():
        assert described[case]["file"] == "policy.onnx" and described[case]["env_id"] == env, case
    assert described["image"]["observation"]["dtype"] == "uint8"
    assert "4 frames stacked" in described["image"]["observation"]["from_env"]
    assert described["box"]["action_bounds"] == [[-2.0], [2.0]] and described["box"]["outputs"][1] == "means, then log-stds"
    assert described["recurrent"]["inputs"] == ["observations", "state"] and described["recurrent"]["state_shape"] == [2, 256]
    # 6 steps remembered, each the body's 128 features and the step's flag
    assert described["attention"]["inputs"] == ["observations", "state"]
    assert described["attention"]["state_shape"] == [6, 129]


def test_the_command_exports_a_checkpoint_and_says_what_is_wrong_in_one_line(tmp_path, capsys):
    with Trainer(env="CartPole-v1", backend="serial", processes=1, envs_per_process=4, max_frames=100,
                 logdir=str(tmp_path), name="x") as trainer:
        while not trainer.train()["done"]:
            pass
        saved = trainer.save(tmp_path / "saved")
    assert main([str(saved), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "policy.pt").exists() and (tmp_path / "out" / "policy.json").exists()
    assert main([str(tmp_path / "missing.pt"), str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("python -m a3c.export: error: ")


def test_the_json_names_a_q_networks_second_output_by_asking_the_algorithm():
    from a3c.algos import get_algorithm
    from a3c.config import make_config
    from a3c.export import describe
    from a3c.lib.envs import describe_env

    env_info = describe_env("CartPole-v1")
    for algo, second in [("dqn", "q_values"), ("a3c", "logits")]:
        settings = vars(make_config(name="x", env="CartPole-v1", algo=algo))
        algorithm = get_algorithm(algo)
        described = describe(settings, env_info, algorithm.build_net(env_info, settings), algorithm, "policy.pt",
                             "torchscript")
        assert described["outputs"] == ["actions", second] and described["algo"] == algo
