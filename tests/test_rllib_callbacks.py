"""Callbacks as RLlib's users write them: a class, an instance, a list, "module:Class" or a
dict of functions; methods with RLlib's keyword-only arguments; the episode's
``episode_id``, ``last_raw_obs_for()`` and ``last_info_for()`` with the env's real info;
the positional form of this project's first callbacks still works."""
import numpy as np
import pytest

import a3c
from a3c import ConfigError, Trainer
from a3c.lib.hook_call import call_hook

INFO_COUNTING = "tests.toy_envs:InfoCounting-v0"  # 5 steps an episode, info {"t": step}


class NotesStyle(a3c.Callback):
    """Written with RLlib's signatures, as the notes' callbacks are."""

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        episode.user_data["observed"] = [float(episode.last_raw_obs_for()[0])]

    def on_episode_step(self, *, worker, base_env, episode, env_index, **kwargs):
        episode.user_data["observed"].append(float(episode.last_observation_for()[0]))
        episode.user_data["last_t"] = episode.last_info_for()["t"]

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        episode.custom_metrics["steps_seen"] = len(episode.user_data["observed"]) - 1
        episode.custom_metrics["last_t"] = episode.user_data["last_t"]
        episode.custom_metrics["has_id"] = float(isinstance(episode.episode_id, int))
        episode.custom_metrics["worker"] = float(worker.worker_index)

    def on_sample_end(self, *, worker, samples, **kwargs):  # in the worker: a failing assert ends the run
        assert samples.count == len(samples["rewards"]) > 0 and worker.worker_index in (0, 1)

    def on_train_result(self, *, trainer, result, **kwargs):
        result["notes_saw"] = True


class OldStyle(a3c.Callback):
    def on_train_result(self, trainer, result):
        result["old_saw"] = True


def test_a_hook_gets_the_keywords_it_takes_or_its_positions():
    class Hooks:
        def keywords(self, *, result, **kwargs):
            return ("keywords", result, sorted(kwargs))

        def named(self, trainer, result):
            return ("named", trainer, result)

        def positions(self, t, r):
            return ("positions", t, r)

    hooks = Hooks()
    given = {"trainer": "T", "algorithm": "T", "result": "R"}
    assert call_hook(hooks.keywords, given, ("T", "R")) == ("keywords", "R", ["algorithm", "trainer"])
    assert call_hook(hooks.named, given, ("T", "R")) == ("named", "T", "R")
    assert call_hook(hooks.positions, given, ("T", "R")) == ("positions", "T", "R")


@pytest.mark.parametrize("given", [
    NotesStyle, [NotesStyle(), OldStyle], [NotesStyle, "tests.test_rllib_callbacks:OldStyle"]],
    ids=["a-class", "a-list", "with-module-class"])
def test_callbacks_given_as_rllib_users_give_them_run_with_rllibs_signatures(tmp_path, given):
    with Trainer(env=INFO_COUNTING, backend="serial", processes=2, logdir=str(tmp_path), stop_reward=1e9,
                 callbacks=given) as trainer:
        result = trainer.train(frames=2000)
    metrics = result["custom_metrics"]
    assert metrics["steps_seen_mean"] == 5.0 and metrics["last_t_max"] == 5.0  # the env's own info
    assert metrics["has_id_min"] == 1.0 and metrics["worker_max"] == 1.0  # both workers' episodes
    assert result["notes_saw"]
    assert result.get("old_saw") is (True if given is not NotesStyle else None)


def test_a_dict_of_functions_gets_rllibs_info_dict_and_an_unknown_hook_is_refused(tmp_path):
    seen = {}

    def on_train_result(info):
        seen["iteration"] = info["result"]["training_iteration"]
        seen["trainer"] = info["trainer"]

    with Trainer(env=INFO_COUNTING, backend="serial", logdir=str(tmp_path), stop_reward=1e9,
                 callbacks={"on_train_result": on_train_result}) as trainer:
        trainer.train(frames=100)
    assert seen == {"iteration": 1, "trainer": trainer}
    with pytest.raises(ConfigError, match="no hook named on_postprocess_trajectori"):
        Trainer(env=INFO_COUNTING, logdir=str(tmp_path), callbacks={"on_postprocess_trajectori": print})


def test_episode_ids_differ(tmp_path):
    from a3c.lib.episodes import Episode

    ids = {Episode(0, np.zeros(1)).episode_id for _ in range(100)}
    assert len(ids) == 100


class Lengths(a3c.Callback):
    def __init__(self):
        self.lengths = []

    def on_episode_result(self, trainer, episode):
        self.lengths.append(episode.length)


def test_env_task_fn_as_rllibs_sets_its_return_on_every_env_after_each_iteration(tmp_path):
    calls = []

    def env_task_fn(result, task_settable_env, env_ctx):
        calls.append((result["training_iteration"], task_settable_env.get_task(), dict(env_ctx)))
        return min(9, task_settable_env.get_task() + 2)

    lengths = Lengths()
    with Trainer(env="tests.toy_envs:TaskCounting-v0", backend="serial", logdir=str(tmp_path), stop_reward=1e9,
                 env_config={}, env_task_fn=env_task_fn, callbacks=[lengths]) as trainer:
        for _ in range(4):
            trainer.train(frames=600)
    assert calls == [(1, 5, {}), (2, 7, {}), (3, 9, {}), (4, 9, {})]
    assert lengths.lengths[:5] == [5] * 5 and lengths.lengths[-5:] == [9] * 5


class ShapedReward(a3c.Callback):
    """Adds 1000 to every row's reward in the worker, before the rows are sent."""

    def on_postprocess_trajectory(self, *, worker, episode, agent_id, policy_id, policies, postprocessed_batch,
                                  original_batches, **kwargs):
        assert postprocessed_batch.count == len(postprocessed_batch["rewards"]) > 0
        postprocessed_batch["rewards"] = postprocessed_batch["rewards"] + 1000.0


class SampleEndMarks(a3c.Callback):
    """Runs after ``ShapedReward``'s postprocessing, on the same rows, in the worker."""

    def on_sample_end(self, *, worker, samples, **kwargs):
        assert min(samples["rewards"]) >= 1000.0  # the postprocessing came first
        samples["rewards"] = np.full(samples.count, -7.0)


class LearnerSees(a3c.Callback):
    """RLlib's on_learn_on_batch: the rows each optimizer step trained on."""

    def __init__(self):
        self.counts, self.rewards, self.actions, self.observations = [], [], [], []

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs):
        self.counts.append(train_batch.count)
        self.rewards.extend(train_batch["rewards"].tolist())
        self.actions.extend(train_batch["actions"].tolist())
        self.observations.extend(train_batch["obs"])


@pytest.mark.parametrize("algo, backend", [("a3c", "serial"), ("a3c", "mp"), ("ppo", "serial"), ("dqn", "serial")])
def test_a_reward_shaped_in_the_workers_is_the_one_the_learners_steps_train_on(tmp_path, algo, backend):
    seen = LearnerSees()
    with Trainer(env=INFO_COUNTING, algo=algo, backend=backend, logdir=str(tmp_path), stop_reward=1e9,
                 callbacks=[ShapedReward, SampleEndMarks, seen],
                 learning_starts=200 if algo == "dqn" else None) as trainer:
        result = trainer.train(frames=1000)
        config = trainer.config
    assert seen.counts and set(seen.rewards) == {-7.0}  # shaped, then marked: every row every step trained on
    assert set(seen.actions) <= {0, 1} and result["episode_reward_mean"] == 15.0  # returns stay the env's own
    rows = (config.envs_per_process * config.processes * config.rollout_length // config.minibatches
            if algo == "ppo" else config.batch_size)  # a minibatch of a rollout, or a batch
    assert set(seen.counts) == {rows}, (seen.counts[:5], rows)


class TeamHooks(a3c.Callback):
    """The episode hooks on the two-step game: one episode per env over both agents."""

    def on_episode_start(self, *, episode, **kwargs):
        episode.user_data["start"] = episode.last_observation_for("agent_0")
        episode.user_data["seen"] = set()

    def on_episode_step(self, *, episode, **kwargs):
        episode.user_data["seen"] |= set(episode.last_observation)  # the agents that acted
        assert episode.last_info_for("agent_1")["reward"] == episode.last_reward / 2  # each gets half

    def on_episode_end(self, *, episode, env_index, **kwargs):
        episode.custom_metrics["length"] = episode.length
        episode.custom_metrics["team"] = episode.total_reward
        episode.custom_metrics["agent_0"] = episode.agent_rewards["agent_0"]
        episode.custom_metrics["start_state"] = float(np.argmax(episode.user_data["start"]))
        episode.custom_metrics["start_width"] = float(len(episode.user_data["start"]))
        episode.custom_metrics["agents"] = float(len(episode.user_data["seen"]))


class AgentRows(a3c.Callback):
    """RLlib postprocesses each agent's rows apart: agent_1's rewards are marked there; the
    policy each agent maps to is ``policies``'."""

    def __init__(self, policies):
        self.policies = policies

    def on_postprocess_trajectory(self, *, agent_id, policy_id, postprocessed_batch, **kwargs):
        assert postprocessed_batch.count > 0 and policy_id == self.policies[agent_id]  # in the worker: ends the run
        if agent_id == "agent_1":
            postprocessed_batch["rewards"] = np.full(postprocessed_batch.count, -5.0)


@pytest.mark.parametrize("policies, names", [("per-agent", {"agent_0": "agent_0", "agent_1": "agent_1"}),
                                             ("shared", {"agent_0": "shared", "agent_1": "shared"})])
def test_each_agents_rows_are_postprocessed_apart_with_its_policy(tmp_path, policies, names):
    seen = LearnerSees()
    with Trainer(env="TwoStepGame", algo="ppo", policies=policies, backend="serial", logdir=str(tmp_path),
                 stop_reward=1e9, callbacks=[AgentRows(names), seen]) as trainer:
        while not seen.counts:  # a rollout's steps
            trainer.train(frames=500)
    agents = [np.argmax(row[-2:]) for row in seen.observations]  # each row ends with its agent's index
    rewards = {agent: {reward for reward, owner in zip(seen.rewards, agents) if owner == agent} for agent in (0, 1)}
    assert rewards[1] == {-5.0} and -5.0 not in rewards[0] and rewards[0]


@pytest.mark.parametrize("algo", ["ppo", "mappo", "qmix"])  # own rows, rows led by every agent's, joint rows
def test_the_episode_hooks_run_on_a_multi_agent_env_one_episode_per_env(tmp_path, algo):
    with Trainer(env="TwoStepGame", algo=algo, backend="serial", logdir=str(tmp_path), stop_reward=1e9,
                 callbacks=[TeamHooks()]) as trainer:
        result = trainer.train(frames=400)
    metrics = result["custom_metrics"]
    assert (metrics["length_min"], metrics["length_max"]) == (2.0, 2.0)  # every episode: two steps
    assert metrics["agents_min"] == 2.0 and metrics["start_state_max"] == 0.0  # both act; state 1 first
    assert metrics["start_width_max"] == 3.0  # the agent's own one-hot, not its row (index, global state)
    assert metrics["team_mean"] == pytest.approx(2 * metrics["agent_0_mean"])  # each agent gets half
    assert metrics["team_mean"] == pytest.approx(result["episode_reward_mean"])
