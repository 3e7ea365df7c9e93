"""Your own env, configured: ``register_env`` with a lambda defined inside the test (so only
the shipped creator can reach the spawned workers), ``env_config`` reaching every env with
its worker's and its own index, ``--env-config`` on the command line, keywords for a
gymnasium id, and gymnasium's env checker before any worker starts."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import Box

from a3c import ConfigError, EnvContext, Trainer, register_env
from a3c.config import parse_config
from a3c.lib.envs import make_env
from a3c.lib.registrations import install_registrations, shipped_registrations
from a3c.lib.user_envs import is_user_env
from tests.toy_envs import StepsEnv


def test_a_creator_gets_env_config_with_the_worker_and_env_index():
    register_env("steps-direct", lambda config: StepsEnv(config["base"] + config.worker_index + config.vector_index))
    env = make_env("steps-direct", env_config={"base": 2}, worker_index=3, vector_index=1)
    assert env.unwrapped.length == 6
    context = EnvContext({"base": 2}, worker_index=1, vector_index=4)
    assert context == {"base": 2} and (context.worker_index, context.vector_index) == (1, 4)


def test_a_module_that_registers_its_env_names_it_as_module_colon_name():
    assert make_env("tests.toy_envs:toy-steps", env_config={"length": 4}).unwrapped.length == 4
    config = parse_config(["-n", "m", "--env", "tests.toy_envs:toy-steps", "--env-config", '{"length": 6}'])
    assert config.env_config == {"length": 6}


def test_shipped_creators_work_where_they_were_never_registered():
    register_env("steps-shipped", lambda config: StepsEnv(config.get("length", 4)))
    shipped = shipped_registrations()
    from a3c.lib import user_envs

    user_envs._CREATORS.entries.pop("steps-shipped")
    assert not is_user_env("steps-shipped")
    install_registrations(shipped)
    assert make_env("steps-shipped", env_config={"length": 9}).unwrapped.length == 9


@pytest.mark.timeout(120)
def test_env_config_reaches_every_env_of_every_worker(tmp_path):
    # defined here, not at import: a spawned worker can only have it from the pool
    register_env("steps-config", lambda config: StepsEnv(config["base"] + 2 * config.worker_index
                                                         + config.vector_index))
    with Trainer(env="steps-config", env_config={"base": 2}, algo="a3c", processes=2, envs_per_process=2,
                 logdir=str(tmp_path), stop_reward=1e9) as trainer:
        seen: set[float] = set()
        while len(seen) < 4 and trainer.train(frames=1000)["frames"] < 100_000:  # a worker may start late
            seen |= set(trainer._run.rewards.recent_rewards)
        rewards = seen
    # lengths 2 + 2w + v for workers 0, 1 and envs 0, 1: returns L(L+1)/2
    assert rewards == {3.0, 6.0, 10.0, 15.0}


def test_gymnasium_ids_take_env_config_as_keywords_of_make():
    env = make_env("CartPole-v1", env_config={"max_episode_steps": 7})
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, _ = env.step(0 if steps % 2 else 1)
        if terminated or truncated:
            break
    assert steps <= 7 and truncated


def test_env_config_on_the_command_line_is_a_json_object():
    # bad JSON, an Atari id and keywords gymnasium refuses: tests/test_cli.py's bad inputs
    config = parse_config(["-n", "e", "--env", "CartPole-v1", "--env-config", '{"max_episode_steps": 50}'])
    assert config.env_config == {"max_episode_steps": 50}


class NotSeeded(StepsEnv):
    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.array([0.0], np.float32), {}


def test_the_env_checker_refuses_a_broken_env_and_warns_about_a_doubtful_one(tmp_path):
    register_env("not-seeded", lambda config: NotSeeded())
    with pytest.raises(ConfigError, match="not-seeded fails gymnasium's env checker: Expects the random"):
        Trainer(env="not-seeded", logdir=str(tmp_path))
    register_env("unbounded", lambda config: StepsEnv(space=Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)))
    with pytest.warns(UserWarning, match="minimum value is -infinity"):
        trainer = Trainer(env="unbounded", logdir=str(tmp_path))
    with trainer:  # the run goes on
        assert trainer.train(frames=100)["frames"] >= 100
    register_env("raising", lambda config: StepsEnv(config["missing"]))
    with pytest.raises(ConfigError, match="making raising failed: KeyError: 'missing'"):
        Trainer(env="raising", logdir=str(tmp_path))
