"""Checkpoints written by earlier code (tests/data, made at commit fe7dfce with
``run_a3c.py --max-frames 3000 --seed 0``) still play, and resume with every tensor they
hold put back: the net, the optimizer and what the algorithm adds (the target nets)."""
import shutil
from pathlib import Path

import pytest
import torch

import a3c.play
from a3c import Trainer
from a3c.algos.optimizer import new_version_counter

SAVED = Path(__file__).parent / "data"
CHECKPOINTS = {"a3c": "a3c_cartpole_fe7dfce.pt", "dqn": "dqn_cartpole_fe7dfce.pt",
               "sac": "sac_pendulum_fe7dfce.pt"}


def saved_copy(tmp_path: Path, algo: str) -> Path:
    """A copy in its own folder: a resumed run writes beside its checkpoint."""
    path = tmp_path / "run" / "checkpoint.pt"
    path.parent.mkdir()
    shutil.copy(SAVED / CHECKPOINTS[algo], path)
    return path


def same_tensors(left: dict, right: dict) -> bool:
    return left.keys() == right.keys() and all(torch.equal(left[key], right[key]) for key in left)


@pytest.mark.parametrize("algo", sorted(CHECKPOINTS))
def test_a_saved_checkpoint_plays_with_its_trained_net(tmp_path, algo):
    path = saved_copy(tmp_path, algo)
    state = torch.load(path, weights_only=True)
    env, algorithm, net = a3c.play.load_policy(str(path))
    assert algorithm.name == algo and env.env_id == state["config"]["env_id"]
    assert same_tensors(net.state_dict(), state["model"])
    (played,) = a3c.play.play(str(path), episodes=1, greedy=True, max_steps=20)
    assert played.length == 20 or not played.cut


@pytest.mark.parametrize("algo", sorted(CHECKPOINTS))
def test_a_saved_checkpoint_resumes_with_every_tensor_it_holds(tmp_path, algo):
    """The resumed learner's state equals the file's: net, optimizer moments, counters and,
    where the algorithm keeps them, target nets (which differ by then from the copy of the
    online net that a new learner starts with)."""
    path = saved_copy(tmp_path, algo)
    state = torch.load(path, weights_only=True)
    with Trainer.restore(path, backend="serial") as trainer:
        resumed = trainer._learner_state().checkpoint_state(with_replay=False)
        new_learner = trainer.algorithm.make_learner(trainer.config, trainer.net, new_version_counter(),
                                                     trainer._shared.env_info)
        before = new_learner.checkpoint_extras(with_replay=False)
    assert same_tensors(resumed["model"], state["model"])
    # a counter newer than the file (training_iteration) starts at 0
    assert resumed["counters"] == {"training_iteration": 0, **state["counters"]}
    assert resumed["policy_version"] == state["policy_version"]
    assert resumed["optimizer"]["param_groups"] == state["optimizer"]["param_groups"]
    saved_moments = list(state["optimizer"]["state"].values())
    assert saved_moments and len(saved_moments) == len(resumed["optimizer"]["state"])
    for saved_step, resumed_step in zip(saved_moments, resumed["optimizer"]["state"].values()):
        assert same_tensors(saved_step, resumed_step)
    assert ("target_model" in state) == (algo != "a3c")
    if "target_model" in state:
        assert not same_tensors(before["target_model"], state["target_model"])
        assert same_tensors(resumed["target_model"], state["target_model"])


@pytest.mark.parametrize(("algo", "overrides"), [("a3c", {}), ("dqn", {"learning_starts": 200})])
def test_a_saved_checkpoint_trains_on_from_its_counters(tmp_path, algo, overrides):
    """Its replay not saved, DQN's buffer refills before it learns: 200 rows here."""
    path = saved_copy(tmp_path, algo)
    state = torch.load(path, weights_only=True)
    frames = state["counters"]["frames"]
    with Trainer.restore(path, backend="serial", max_frames=frames + 400, **overrides) as trainer:
        while not (result := trainer.train(seconds=5))["done"]:
            pass
    assert result["frames"] >= frames + 400
    assert result["policy_version"] > state["policy_version"]
