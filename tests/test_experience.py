"""n-step first-last transitions against returns worked out by hand (gamma = 0.5)."""
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from a3c.lib.envs import sync_vector_env
from a3c.lib.experience import EpisodeResult, NStepAccumulator, TransitionBatch
from tests.toy_envs import CountingEnv

GAMMA = 0.5


def run_steps(envs, accumulator, steps, value_of=None):
    """Step with action 0 and collect every transition and episode produced.

    With ``value_of`` (observation -> value), the accumulator is given the values of the
    next and final observations, as the worker gives it its forward pass's values.
    """
    observations, _ = envs.reset(seed=0)
    batches, episodes = [], []
    for _ in range(steps):
        actions = np.zeros(envs.num_envs, dtype=np.int64)
        next_observations, rewards, terminated, truncated, infos = envs.step(actions)
        values = {}
        if value_of is not None:
            values["next_values"] = np.array([value_of(o) for o in next_observations])
        if value_of is not None and not accumulator.next_step_reset:
            final = [infos["final_obs"][i] if truncated[i] else next_observations[i]
                     for i in range(envs.num_envs)]
            values["final_values"] = np.array([value_of(o) for o in final])
        batch, finished = accumulator.step(observations, actions, rewards, terminated, truncated,
                                           next_observations, infos, **values)
        if batch is not None:
            batches.append(batch)
        episodes.extend(finished)
        observations = next_observations
    return TransitionBatch.concatenate(batches), episodes


def single(episode_length, truncate=False):
    return sync_vector_env([lambda: CountingEnv(episode_length, truncate)])


def single_next_step(episode_length, truncate=False):
    return SyncVectorEnv([lambda: CountingEnv(episode_length, truncate)],
                         autoreset_mode=AutoresetMode.NEXT_STEP)


def rows(batch):
    """(first obs, reward, last obs or None, steps) per transition, for easy comparison."""
    return [
        (float(batch.states[i][0]), pytest.approx(float(batch.rewards[i])),
         None if batch.dones[i] else float(batch.last_states[i][0]), int(batch.steps[i]))
        for i in range(len(batch))
    ]


def test_episode_longer_than_n():
    # rewards 1..5, n = 3: 1+.5*2+.25*3 = 2.75; 2+1.5+1 = 4.5; then the tail at termination:
    # 3+2+1.25 = 6.25, 4+2.5 = 6.5, 5.
    batch, episodes = run_steps(single(5), NStepAccumulator(1, 3, GAMMA), 5)
    assert rows(batch) == [(0, 2.75, 3, 3), (1, 4.5, 4, 3), (2, 6.25, None, 3),
                           (3, 6.5, None, 2), (4, 5.0, None, 1)]
    assert episodes == [EpisodeResult(reward=15.0, length=5)]


def test_episode_ends_before_n():
    # length 2 with n = 4: both transitions are cut by termination: 1+.5*2 = 2, and 2.
    batch, episodes = run_steps(single(2), NStepAccumulator(1, 4, GAMMA), 2)
    assert rows(batch) == [(0, 2.0, None, 2), (1, 2.0, None, 1)]
    assert episodes == [EpisodeResult(3.0, 2)]


def test_episode_ends_exactly_at_n():
    # length 3 with n = 3: the first transition has n rewards but its episode is over.
    batch, _ = run_steps(single(3), NStepAccumulator(1, 3, GAMMA), 3)
    assert rows(batch) == [(0, 2.75, None, 3), (1, 3.5, None, 2), (2, 3.0, None, 1)]


def test_truncation_bootstraps_from_final_observation():
    # Same as the first test but truncated: the tail keeps the real final observation (5)
    # and its own step count, so the learner can bootstrap with gamma**steps.
    batch, episodes = run_steps(single(5, truncate=True), NStepAccumulator(1, 3, GAMMA), 5)
    assert rows(batch) == [(0, 2.75, 3, 3), (1, 4.5, 4, 3), (2, 6.25, 5, 3),
                           (3, 6.5, 5, 2), (4, 5.0, 5, 1)]
    assert not batch.dones.any()
    assert episodes == [EpisodeResult(15.0, 5)]


def test_no_transition_crosses_autoreset():
    # Two episodes back to back: observations encode the episode (100 * index + t), and every
    # transition's first and last state belong to the same episode.
    batch, episodes = run_steps(single(3), NStepAccumulator(1, 2, GAMMA), 7)
    for first, _, last, _ in rows(batch):
        if last is not None:
            assert first // 100 == last // 100
    second_episode = [row for row in rows(batch) if row[0] >= 100]
    assert second_episode[0] == (100, 2.0, 102, 2)  # rewards restart at 1 after the reset
    assert episodes == [EpisodeResult(6.0, 3), EpisodeResult(6.0, 3)]


def test_several_envs_ending_on_different_steps():
    envs = SyncVectorEnv([lambda: CountingEnv(2), lambda: CountingEnv(4, offset=10_000)],
                         autoreset_mode=AutoresetMode.SAME_STEP)
    batch, episodes = run_steps(envs, NStepAccumulator(2, 3, GAMMA), 4)
    assert len(batch) == 8  # one transition per env step
    short_env = [row for row in rows(batch) if row[0] < 10_000]
    long_env = [row for row in rows(batch) if row[0] >= 10_000]
    # Env 0 (length 2) finished twice: 1+.5*2 = 2, then 2; the same again after the reset.
    assert short_env == [(0, 2.0, None, 2), (1, 2.0, None, 1), (100, 2.0, None, 2), (101, 2.0, None, 1)]
    # Env 1 (length 4) once: 1+1+.75 = 2.75 bootstrapped from t=3, then 2+1.5+1 = 4.5,
    # 3+2 = 5 and 4 at termination.
    assert long_env == [(10_000, 2.75, 10_003, 3), (10_001, 4.5, None, 3),
                        (10_002, 5.0, None, 2), (10_003, 4.0, None, 1)]
    assert episodes == [EpisodeResult(3.0, 2), EpisodeResult(3.0, 2), EpisodeResult(10.0, 4)]
    assert [episode.env_index for episode in episodes] == [0, 0, 1]  # which env played each


@pytest.mark.parametrize("truncate", [False, True])
def test_sent_values_stand_for_the_last_states(truncate):
    # The same episodes with values V(obs) = 1000 + obs: each transition carries the value
    # of exactly the last state the plain mode records (the real final one on truncation).
    plain, _ = run_steps(single(5, truncate), NStepAccumulator(1, 3, GAMMA), 12)
    valued, _ = run_steps(single(5, truncate), NStepAccumulator(1, 3, GAMMA), 12,
                          value_of=lambda observation: 1000.0 + float(observation[0]))
    assert valued.last_states is None and plain.last_values is None
    expected = np.where(plain.dones, 0.0, 1000.0 + plain.last_states[:, 0])
    assert valued.last_values.tolist() == expected.tolist()
    for column in ("states", "actions", "rewards", "dones", "steps"):
        assert np.array_equal(getattr(valued, column), getattr(plain, column))


@pytest.mark.parametrize("truncate", [False, True])
@pytest.mark.parametrize("with_values", [False, True])
def test_next_step_autoreset_skips_the_reset_step(truncate, with_values):
    """NEXT_STEP envs spend one step on each reset (action ignored, reward 0): three
    episodes of 4 take 14 steps instead of 12 and must give exactly the same rows."""
    value_of = (lambda observation: 1000.0 + float(observation[0])) if with_values else None
    same, same_episodes = run_steps(single(4, truncate), NStepAccumulator(1, 3, GAMMA), 12, value_of)
    accumulator = NStepAccumulator(1, 3, GAMMA, AutoresetMode.NEXT_STEP)
    nxt, next_episodes = run_steps(single_next_step(4, truncate), accumulator, 14, value_of)
    assert next_episodes == same_episodes == [EpisodeResult(10.0, 4)] * 3
    assert len(nxt) == len(same) == 12
    for column in ("states", "actions", "rewards", "dones", "steps", "last_states", "last_values"):
        same_column, next_column = getattr(same, column), getattr(nxt, column)
        assert (same_column is None) == (next_column is None)
        if same_column is not None:
            assert np.array_equal(same_column, next_column), column
    assert nxt.dones.any() != truncate


def test_unsupported_autoreset_mode_is_refused():
    with pytest.raises(ValueError, match="not supported"):
        NStepAccumulator(1, 3, GAMMA, AutoresetMode.DISABLED)


def test_clipped_rewards_train_on_signs_and_episodes_report_the_score():
    # rewards 1..5 all clip to 1, n = 3: 1+.5+.25 = 1.75 twice, then the tail 1.75, 1.5, 1;
    # the episode still scores 1+2+3+4+5 = 15
    batch, episodes = run_steps(single(5), NStepAccumulator(1, 3, GAMMA, clip_rewards=True), 5)
    assert [row[1] for row in rows(batch)] == [1.75, 1.75, 1.75, 1.5, 1.0]
    assert episodes == [EpisodeResult(15.0, 5)]


@pytest.mark.parametrize("truncate", [False, True])
def test_lambda_returns_worked_out_by_hand(truncate):
    # rewards 1..5, n = 3, lambda 0.5, V(obs) = obs, so V(s_t) = t and the next episode's
    # first state is worth 100 (never read: a termination's next value is 0). Backwards,
    # G_k = r_k + .5 * (.5 * V(s_k+1) + .5 * G_k+1), the window's last G_k+1 its bootstrap;
    # the row holds G less .5**steps times the bootstrap. Row 0: G_2 = 3 + .5*3 = 4.5,
    # G_1 = 2 + .5*(1 + 2.25) = 3.625, G_0 = 1 + .5*(.5 + 1.8125) = 2.15625, less .125*3.
    # Row 1: G_3 = 6, G_2 = 5.25, G_1 = 3.8125, less .125*4. Terminated, the last rows have
    # no bootstrap: G_4 = 5, G_3 = 4 + .5*(2 + 2.5) = 6.25, G_2 = 3 + .5*(1.5 + 3.125).
    # Truncated, V(s5) = 5 is the bootstrap: G_4 = 7.5, G_3 = 6.875, G_2 = 5.46875.
    accumulator = NStepAccumulator(1, 3, GAMMA, lam=0.5)
    batch, _ = run_steps(single(5, truncate), accumulator, 5, value_of=lambda obs: float(obs[0]))
    if truncate:
        tail = [5.46875 - .125 * 5, 6.875 - .25 * 5, 7.5 - .5 * 5]
    else:
        tail = [5.3125, 6.25, 5.0]
    assert batch.rewards.tolist() == pytest.approx([2.15625 - .375, 3.8125 - .5, *tail])
    assert batch.steps.tolist() == [3, 3, 3, 2, 1]
    assert batch.dones.tolist() == [False, False, not truncate, not truncate, not truncate]


def test_lambda_one_is_the_n_step_return():
    value_of = lambda observation: 1000.0 + float(observation[0])
    n_step, _ = run_steps(single(5), NStepAccumulator(1, 3, GAMMA), 12, value_of)
    lambda_one, _ = run_steps(single(5), NStepAccumulator(1, 3, GAMMA, lam=1.0), 12, value_of)
    lambda_near_one, _ = run_steps(single(5), NStepAccumulator(1, 3, GAMMA, lam=0.999999), 12, value_of)
    assert np.array_equal(lambda_one.rewards, n_step.rewards)
    assert lambda_near_one.rewards.tolist() == pytest.approx(n_step.rewards.tolist(), abs=1e-3)


def test_lambda_returns_need_values_and_a_lambda_in_range():
    with pytest.raises(ValueError, match="not in"):
        NStepAccumulator(1, 3, GAMMA, lam=1.5)
    with pytest.raises(ValueError, match="need the values"):
        run_steps(single(5), NStepAccumulator(1, 3, GAMMA, lam=0.5), 1)


def test_a_lost_life_ends_the_rows_without_bootstrap_while_the_episode_goes_on():
    """Rewards 1..5 (n = 3), a life lost at the second step: the rows of steps 1-2 end there
    (1 + .5 * 2 = 2, then 2; no last state), the rows after start afresh (3 + 2 + 1.25, 4 +
    2.5, 5), and the episode is one game of return 15 over 5 steps."""
    envs = single(5)
    accumulator = NStepAccumulator(1, 3, GAMMA)
    observations, _ = envs.reset(seed=0)
    batches, episodes = [], []
    for step in range(5):
        actions = np.zeros(1, dtype=np.int64)
        next_observations, rewards, terminated, truncated, infos = envs.step(actions)
        batch, finished = accumulator.step(observations, actions, rewards, terminated, truncated, next_observations,
                                           infos, log_probs=np.zeros(1), lives_lost=np.array([step == 1]))
        batches += [batch] if batch is not None else []
        episodes += finished
        observations = next_observations
    batch = TransitionBatch.concatenate(batches)
    assert rows(batch) == [(0.0, 2.0, None, 2), (1.0, 2.0, None, 1), (2.0, 6.25, None, 3), (3.0, 6.5, None, 2),
                           (4.0, 5.0, None, 1)]
    assert batch.ends.tolist() == [True, True, True, True, True]
    assert batch.starts.tolist() == [True, False, False, False, False]  # one game: the state goes on
    assert [(episode.reward, episode.length) for episode in episodes] == [(15.0, 5)]
