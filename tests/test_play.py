"""Playing checkpoints: returns printed per episode, videos recorded, bad files refused."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import a3c.play
from a3c.lib.envs import describe_env
from a3c.lib.models import build_net
from a3c.lifecycle.checkpoint import save_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def policy_checkpoint(tmp_path, env_id, model_env_id=None, name="policy.pt"):
    torch.manual_seed(0)
    net = build_net(describe_env(model_env_id or env_id))
    path = tmp_path / name
    save_checkpoint(path, {"config": {"env_id": env_id}, "model": net.state_dict()})
    return path


def test_greedy_play_prints_each_return_and_the_mean_and_repeats_with_the_seed(tmp_path, capsys):
    path = policy_checkpoint(tmp_path, "CartPole-v1")
    first = a3c.play.play(str(path), episodes=3, greedy=True, seed=5)
    second = a3c.play.play(str(path), episodes=3, greedy=True, seed=5)
    assert first == second
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"episode 1: return {first[0].reward:.1f}, {first[0].length} steps"
    mean = sum(episode.reward for episode in first) / 3
    assert lines[3] == f"CartPole-v1, greedy actions: mean return {mean:.2f} over 3 episodes"


def test_max_steps_cuts_an_episode_and_says_so(tmp_path, capsys):
    (episode,) = a3c.play.play(str(policy_checkpoint(tmp_path, "CartPole-v1")), episodes=1,
                               max_steps=3)
    assert episode.length == 3 and episode.cut
    assert "(cut at 3 steps)" in capsys.readouterr().out


@pytest.mark.parametrize("env_id", ["CartPole-v1", "PongNoFrameskip-v4"])
def test_record_writes_one_video_per_episode(tmp_path, env_id):
    videos = tmp_path / "videos"
    a3c.play.main([str(policy_checkpoint(tmp_path, env_id)), "--episodes", "2", "--max-steps", "40",
                   "--record", str(videos)])
    recorded = sorted(path.name for path in videos.iterdir())
    assert recorded == [f"{env_id}-episode-0.mp4", f"{env_id}-episode-1.mp4"]
    assert all((videos / name).stat().st_size > 1000 for name in recorded)


def test_bad_input_gets_one_line_and_exit_2(tmp_path, capsys):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    good = policy_checkpoint(tmp_path, "CartPole-v1")
    mismatched = policy_checkpoint(tmp_path, "CartPole-v1", model_env_id="Acrobot-v1", name="other.pt")
    blocked = tmp_path / "file"
    blocked.write_text("")
    cases = [
        ([str(tmp_path / "missing.pt")], "does not exist"),
        ([str(garbage)], "not a readable checkpoint"),
        ([str(mismatched)], "does not hold a usable network"),
        ([str(good), "--episodes", "0"], "--episodes must be >= 1"),
        ([str(good), "--record", str(blocked / "videos")], "cannot be written"),
    ]
    for argv, reason in cases:
        with pytest.raises(SystemExit) as exited:
            a3c.play.main(argv)
        stderr = capsys.readouterr().err
        assert exited.value.code == 2, argv
        assert reason in stderr and len(stderr.strip().splitlines()) == 1, stderr


@pytest.mark.parametrize(("net_settings", "screen_size"), [
    ({"heads": "shared", "conv": "small"}, None), ({"heads": "shared"}, None), ({"heads": "separate"}, None),
    ({"heads": "shared", "conv": "small"}, 42)])
def test_play_builds_the_net_the_checkpoint_was_trained_with(tmp_path, net_settings, screen_size):
    """A checkpoint names its net's heads, conv body and screen size; one from before the
    conv setting holds the Nature body, one from before the screen size 84-pixel frames.
    Play then steps an env of the net's screen size."""
    torch.manual_seed(0)
    net = build_net(describe_env("PongNoFrameskip-v4", screen_size), **net_settings)
    path = tmp_path / "pong.pt"
    saved = {"env_id": "PongNoFrameskip-v4", **net_settings, **({"screen_size": screen_size} if screen_size else {})}
    save_checkpoint(path, {"config": saved, "model": net.state_dict()})
    env, algorithm, loaded = a3c.play.load_policy(str(path))
    assert algorithm.name == "a3c"  # a checkpoint that names no algorithm is A3C's
    assert env.env_id == "PongNoFrameskip-v4" and env.screen_size == screen_size and env.env_config is None
    assert env.frame_stack == 1  # nor does it name a frame stack
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), net.state_dict().values()))
    played = a3c.play.play(str(path), episodes=1, max_steps=5)
    assert played[0].length == 5


USER_MODULE = '''
import gymnasium as gym

gym.register("Grid-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv", max_episode_steps=20)
'''


@pytest.mark.parametrize("command", [["play_a3c.py"], ["-m", "a3c.play"]], ids=["script", "python-m"])
def test_a_checkpoint_of_an_env_in_the_users_module_plays_from_the_folder_that_holds_it(tmp_path, command):
    (tmp_path / "mygrid.py").write_text(USER_MODULE)
    path = policy_checkpoint(tmp_path, "mygrid:Grid-v0", model_env_id="CartPole-v1")
    script = [str(ROOT / command[0])] if command == ["play_a3c.py"] else command
    done = subprocess.run([sys.executable, *script, str(path), "--episodes", "1", "--greedy"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "mygrid:Grid-v0, greedy actions: mean return" in done.stdout
