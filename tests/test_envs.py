"""The training envs match the envs play and the SB3 peer use, frame for frame."""
import gymnasium as gym
import numpy as np
import pytest

from a3c.lib.envs import describe_env, make_env, make_vector_env
from a3c.lib.experience import NStepAccumulator

PONG = "PongNoFrameskip-v4"


@pytest.mark.parametrize(("game", "screen_size"), [(PONG, 84), (PONG, 42), ("BreakoutNoFrameskip-v4", 84)])
def test_native_atari_vector_env_gives_the_wrappers_pixels_and_rewards(game, screen_size):
    """Without random no-ops both paths are deterministic, so they must agree exactly, at
    either screen size, FIRE at reset included (Breakout waits for it)."""
    native = make_vector_env(game, 1, noop_max=0, screen_size=screen_size)
    wrapped = make_env(game, noop_max=0, screen_size=screen_size)
    try:
        native_obs, _ = native.reset(seed=0)
        wrapped_obs, _ = wrapped.reset(seed=0)
        assert native_obs.shape == (1, 4, screen_size, screen_size)
        np.testing.assert_array_equal(native_obs[0], wrapped_obs)
        rng = np.random.default_rng(1)
        native_return = wrapped_return = 0.0
        for _ in range(300):
            action = int(rng.integers(0, native.single_action_space.n))
            native_obs, native_reward, native_over, _, info = native.step(np.array([action]))
            wrapped_obs, wrapped_reward, wrapped_over, _, _ = wrapped.step(action)
            assert native_over[0] == wrapped_over
            np.testing.assert_array_equal(info["final_obs"][0] if wrapped_over else native_obs[0], wrapped_obs)
            assert native_reward[0] == wrapped_reward
            native_return += float(native_reward[0])
            wrapped_return += float(wrapped_reward)
            if wrapped_over:  # the native env has reset itself; the game compared is over
                break
        assert native_return != 0  # random play loses (Pong) or scores (Breakout): rewards flowed
    finally:
        native.close()
        wrapped.close()


@pytest.mark.parametrize("screen_size", [None, 42])
def test_native_atari_vector_env_has_the_described_spaces(screen_size):
    info = describe_env(PONG, screen_size)
    assert info.observation_shape == (4, screen_size or 84, screen_size or 84)
    envs = make_vector_env(PONG, 3, screen_size=screen_size)
    try:
        observations, _ = envs.reset(seed=0)
        assert observations.shape == (3, *info.observation_shape)
        assert observations.dtype == np.uint8
        assert envs.single_action_space.n == info.n_actions
        next_observations, *_ = envs.step(np.zeros(3, dtype=np.int64))
        assert not np.shares_memory(observations, next_observations)  # the accumulator keeps rows
    finally:
        envs.close()


def test_native_atari_truncation_reports_the_final_observation(monkeypatch):
    """A frame limit cuts the episode (truncated, not terminated) with SAME_STEP autoreset."""
    spec = gym.spec(PONG)
    monkeypatch.setitem(spec.kwargs, "max_num_frames_per_episode", 40)
    envs = make_vector_env(PONG, 2, noop_max=0)
    try:
        envs.reset(seed=0)
        for step in range(1, 11):
            observations, _, terminated, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
            if truncated.any():
                break
        assert step == 10 and truncated.all() and not terminated.any()  # 40 frames / skip 4
        assert infos["final_obs"].shape == observations.shape
        assert not np.array_equal(infos["final_obs"], observations)  # reset obs came back
        assert not observations[:, :-1].any()  # a fresh stack: three zero frames
    finally:
        envs.close()


def test_cartpole_gets_gymnasiums_numpy_vector_env_and_its_episodes_add_up():
    """NEXT_STEP autoreset: each env's reset step is skipped, so every CartPole episode's
    return equals its length (reward 1 a step) and every real step gives one transition."""
    envs = make_vector_env("CartPole-v1", 4)
    accumulator = NStepAccumulator(4, 3, 0.99, envs.metadata["autoreset_mode"])
    assert accumulator.next_step_reset
    rng = np.random.default_rng(0)
    observations, _ = envs.reset(seed=0)
    transitions, episodes, reset_steps, resetting = 0, [], 0, np.zeros(4, dtype=bool)
    for _ in range(300):
        actions = rng.integers(0, 2, 4)
        next_observations, rewards, terminated, truncated, infos = envs.step(actions)
        reset_steps += int(resetting.sum())
        batch, finished = accumulator.step(observations, actions, rewards, terminated, truncated,
                                           next_observations, infos)
        transitions += 0 if batch is None else len(batch)
        episodes += finished
        resetting = terminated | truncated
        observations = next_observations
    envs.close()
    assert len(episodes) > 10  # random CartPole episodes last about 20 steps
    assert all(episode.reward == episode.length for episode in episodes)
    pending = sum(len(queue) for queue in accumulator._pending)
    assert transitions + pending == 4 * 300 - reset_steps


def test_envs_without_a_vector_implementation_get_a_sync_vector_env():
    envs = make_vector_env("Acrobot-v1", 2)
    try:
        assert isinstance(envs, gym.vector.SyncVectorEnv)
        assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    finally:
        envs.close()


def test_fire_at_reset_is_one_more_noop_in_pong_and_starts_breakout():
    """Pressing FIRE after a reset (``FireResetPreprocessing``, the native ``use_fire_reset``)
    leaves Pong's state exactly as a no-op would, so Pong's figures do not move with it,
    while Breakout's state differs: its ball is served."""
    for game, fire_changes_the_game in ((PONG, False), ("BreakoutNoFrameskip-v4", True)):
        memories = []
        for first_action in (0, 1):  # NOOP, FIRE
            env = gym.make(game)
            env.reset(seed=0)
            env.step(first_action)
            for _ in range(80):
                env.step(0)
            memories.append(env.unwrapped.ale.getRAM().copy())
            env.close()
        assert (not np.array_equal(*memories)) == fire_changes_the_game, game


def test_the_ale_v5_ids_with_sticky_actions_run_in_both_paths():
    """``ALE/Breakout-v5`` (sticky actions, repeat probability 0.25) is an Atari id like the
    NoFrameskip-v4 ones: the native vector env and play's env take it, frame-skipped by the
    trainer rather than by the ALE."""
    game = "ALE/Breakout-v5"
    info = describe_env(game)
    assert info.atari and info.observation_shape == (4, 84, 84) and info.n_actions == 4
    native = make_vector_env(game, 2)
    single = make_env(game)
    try:
        observations, _ = native.reset(seed=0)
        assert observations.shape == (2, 4, 84, 84)
        for _ in range(20):
            observations, *_ = native.step(np.array([1, 3]))
        assert observations.shape == (2, 4, 84, 84)
        observation, _ = single.reset(seed=0)
        assert observation.shape == (4, 84, 84) and single.unwrapped._frameskip == 1
    finally:
        native.close()
        single.close()


def test_an_envs_kind_is_worked_out_once_per_id(monkeypatch):
    """The path from the command line to the first worker asks an id's kind many times
    (settings, pre-flight, each env made); the module probe behind it runs once."""
    import importlib

    from a3c.lib import env_kind

    probes = []
    real_import = importlib.import_module
    monkeypatch.setattr(env_kind.importlib, "import_module", lambda name: probes.append(name) or real_import(name))
    env_kind.env_family.cache_clear()
    env_kind.is_multiagent.cache_clear()
    for _ in range(3):
        assert env_kind.env_family("tests.toy_envs:SideVec-v0").multiagent is False
        assert env_kind.is_multiagent("tests.toy_envs:SideVec-v0") is False
        assert env_kind.env_family("mpe2.simple_spread_v3").multiagent is True
    assert sorted(probes) == ["mpe2.simple_spread_v3", "tests.toy_envs"]
