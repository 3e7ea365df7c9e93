"""Replay: the sum-tree's sums and search against brute force, sampling frequencies,
importance weights by hand, priority updates, the ring's wrap-around, and Atari frames
stored once giving back the env's stacked observations."""
import numpy as np
import pytest

from a3c.lib.envs import describe_env, make_vector_env
from a3c.lib.experience import NStepAccumulator, TransitionBatch
from a3c.lib.replay import FrameStore, ReplayBuffer, SumTree, replay_bytes


def test_sum_tree_keeps_exact_sums_and_finds_prefix_intervals():
    tree = SumTree(5)  # not a power of two: 8 leaves, 3 never used
    tree.update(np.arange(5), np.array([1.0, 0.0, 2.0, 3.0, 4.0]))
    assert tree.total == 10.0
    # slot i owns [cumsum before i, cumsum through i): 0:[0,1) 1:empty 2:[1,3) 3:[3,6) 4:[6,10)
    values = np.array([0.0, 0.999, 1.0, 2.5, 3.0, 5.99, 6.0, 9.999])
    assert tree.find(values).tolist() == [0, 0, 2, 2, 3, 3, 4, 4]
    tree.update(np.array([3, 3]), np.array([7.0, 0.5]))  # the last value for a slot wins
    assert tree.get(np.array([3])).tolist() == [0.5] and tree.total == 7.5


def test_sum_tree_never_returns_an_empty_slot_even_at_the_top_edge():
    tree = SumTree(4)
    tree.update(np.array([0, 1]), np.array([0.1, 0.2]))  # slots 2 and 3 empty
    edge = np.nextafter(tree.total, 0.0)
    assert tree.find(np.array([edge, tree.total])).tolist() == [1, 1]


def test_sum_tree_sampling_frequencies_match_the_priorities():
    rng = np.random.default_rng(0)
    priorities = rng.random(37) * (rng.random(37) > 0.2)
    tree = SumTree(37)
    tree.update(np.arange(37), priorities)
    drawn = tree.find(rng.random(200_000) * tree.total)
    frequencies = np.bincount(drawn, minlength=37) / len(drawn)
    expected = priorities / priorities.sum()
    assert np.all(frequencies[expected == 0] == 0)
    assert np.abs(frequencies - expected).max() < 0.005  # about 5 standard errors at most


def transitions(first: int, count: int) -> TransitionBatch:
    ids = np.arange(first, first + count)
    return TransitionBatch(states=ids[:, None].astype(np.float32), actions=ids % 2,
                           rewards=ids.astype(np.float32), dones=ids % 3 == 0, steps=np.full(count, 3),
                           last_states=(ids[:, None] + 100).astype(np.float32))


def test_the_ring_wraps_around_keeping_the_newest_rows():
    buffer = ReplayBuffer(5, (1,), "float32", prioritized=False)
    buffer.add(transitions(0, 3))
    assert len(buffer) == 3
    slots = buffer.add(transitions(3, 4))  # 3, 4 fill the ring; 5, 6 overwrite 0, 1
    assert slots.tolist() == [3, 4, 0, 1] and len(buffer) == 5
    rows = buffer.rows(np.arange(5))
    assert rows.states[:, 0].tolist() == [5, 6, 2, 3, 4]
    assert rows.last_states[:, 0].tolist() == [105, 106, 102, 103, 104]
    assert rows.dones.tolist() == [False, True, False, True, False]
    buffer.add(transitions(10, 12))  # more than the ring holds: the newest five
    assert sorted(buffer.rows(np.arange(5)).states[:, 0].tolist()) == [17, 18, 19, 20, 21]
    assert buffer.state_dict()["rewards"].tolist() == [17, 18, 19, 20, 21]  # oldest first


def test_uniform_sampling_gives_weights_of_one_and_only_stored_rows():
    buffer = ReplayBuffer(10, (1,), "float32", prioritized=False)
    buffer.add(transitions(0, 4))
    batch, slots, weights = buffer.sample(64, beta=0.4, rng=np.random.default_rng(1))
    assert set(slots.tolist()) == {0, 1, 2, 3} and np.all(weights == 1.0)
    assert np.array_equal(batch.rewards, slots.astype(np.float32))
    assert np.array_equal(batch.last_states[:, 0], slots + 100.0)


def test_new_rows_enter_at_the_running_maximum_and_weights_follow_by_hand():
    buffer = ReplayBuffer(4, (1,), "float32", alpha=0.5)
    buffer.add(transitions(0, 4))
    assert np.allclose(buffer.priorities.get(np.arange(4)), 1.0)  # max priority 1 at the start
    buffer.update_priorities(np.array([0, 1, 2, 3]), np.array([3.0, -1.0, 0.0, 8.0]))
    eps = buffer.priority_eps
    expected = (np.array([3.0, 1.0, 0.0, 8.0]) + eps) ** 0.5  # |TD error| + eps, to the alpha
    assert np.allclose(buffer.priorities.get(np.arange(4)), expected)
    assert buffer.max_priority == pytest.approx(8.0 + eps)
    buffer.add(transitions(4, 1))  # overwrites slot 0 at the running maximum
    assert buffer.priorities.get(np.array([0]))[0] == pytest.approx((8.0 + eps) ** 0.5)

    rng = np.random.default_rng(3)
    _, slots, weights = buffer.sample(4, beta=0.4, rng=rng)
    probabilities = buffer.priorities.get(slots) / buffer.priorities.total
    by_hand = (4 * probabilities) ** -0.4
    assert np.allclose(weights, by_hand / by_hand.max())
    assert weights.max() == pytest.approx(1.0)


def test_importance_weights_follow_beta_by_hand_for_unequal_priorities():
    """Priorities 1 and 3 (alpha 1): P = 1/4 and 3/4 over N = 2 rows. Four stratified draws
    take slot 0 from the first quarter of the total and slot 1 from the rest, so the weights
    are (N P)^-beta over the largest: 1 for slot 0 and 3^-beta for slot 1."""
    buffer = ReplayBuffer(2, (1,), "float32", alpha=1.0)
    buffer.add(transitions(0, 2))
    buffer.update_priorities(np.array([0, 1]), np.array([1.0, 3.0]) - buffer.priority_eps)
    for beta in (0.4, 1.0):
        _, slots, weights = buffer.sample(4, beta=beta, rng=np.random.default_rng(0))
        assert slots.tolist() == [0, 1, 1, 1]
        assert np.allclose(weights, [1.0, 3.0 ** -beta, 3.0 ** -beta, 3.0 ** -beta])


def test_a_prioritized_buffer_sampled_uniformly_for_now_ignores_its_priorities():
    buffer = ReplayBuffer(2, (1,), "float32", alpha=1.0)
    buffer.add(transitions(0, 2))
    buffer.update_priorities(np.array([0, 1]), np.array([1.0, 3.0]) - buffer.priority_eps)
    rng = np.random.default_rng(0)
    draws = [buffer.sample(4, beta=1.0, rng=rng, by_priority=False) for _ in range(2_000)]
    assert all((weights == 1.0).all() for _, _, weights in draws)
    share = np.mean(np.concatenate([slots for _, slots, _ in draws]) == 1)
    assert abs(share - 0.5) < 0.02  # by priority it would be 3/4


def test_prioritized_sampling_follows_priority_to_the_alpha():
    buffer = ReplayBuffer(3, (1,), "float32", alpha=0.5)
    buffer.add(transitions(0, 3))
    buffer.update_priorities(np.array([0, 1, 2]), np.array([1.0, 4.0, 16.0]) - buffer.priority_eps)
    rng = np.random.default_rng(4)
    drawn = np.concatenate([buffer.sample(10, beta=1.0, rng=rng)[1] for _ in range(5_000)])
    frequencies = np.bincount(drawn, minlength=3) / len(drawn)
    assert np.allclose(frequencies, [1 / 7, 2 / 7, 4 / 7], atol=0.01)  # sqrt of 1, 4, 16 over 7


def test_prioritized_draws_take_one_from_each_equal_part_of_the_total_priority():
    buffer = ReplayBuffer(4, (1,), "float32", alpha=1.0)
    buffer.add(transitions(0, 4))  # equal priorities: each slot is one quarter of the total
    for seed in range(50):  # unstratified draws would repeat a slot in 9 of 10 batches
        _, slots, _ = buffer.sample(4, beta=0.4, rng=np.random.default_rng(seed))
        assert sorted(slots.tolist()) == [0, 1, 2, 3]


def test_an_empty_buffer_saves_and_restores_empty():
    state = ReplayBuffer(8, (1,), "float32").state_dict()
    restored = ReplayBuffer(8, (1,), "float32")
    restored.load_state_dict(state)
    assert len(restored) == 0 and restored.priorities.total == 0.0
    restored.add(transitions(0, 2))
    assert len(restored) == 2


def test_replay_refuses_rows_without_last_states_and_sampling_when_empty():
    buffer = ReplayBuffer(3, (1,), "float32")
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(1, beta=0.4, rng=np.random.default_rng(0))
    rows = transitions(0, 2)
    rows.last_states = None
    with pytest.raises(ValueError, match="last states"):
        buffer.add(rows)


def pong_transitions(steps: int, envs: int = 2, reward_steps: int = 3) -> list[TransitionBatch]:
    """Random play in Pong cut short every 40 frames (so truncations and fresh zero-padded
    stacks occur), as the actors turn it into n-step transitions with last states."""
    import gymnasium as gym

    spec = gym.spec("PongNoFrameskip-v4")
    limit = spec.kwargs.get("max_num_frames_per_episode")
    spec.kwargs["max_num_frames_per_episode"] = 40
    try:
        vector = make_vector_env("PongNoFrameskip-v4", envs, noop_max=0)
    finally:
        spec.kwargs["max_num_frames_per_episode"] = limit
    accumulator = NStepAccumulator(envs, reward_steps, 0.99, vector.metadata["autoreset_mode"])
    rng = np.random.default_rng(0)
    batches = []
    observations, _ = vector.reset(seed=0)
    try:
        for _ in range(steps):
            actions = rng.integers(0, 6, size=envs)
            next_observations, rewards, terminated, truncated, infos = vector.step(actions)
            batch, _ = accumulator.step(observations, actions, rewards, terminated, truncated,
                                        next_observations, infos)
            if batch is not None:
                batches.append(batch)
            observations = next_observations
    finally:
        vector.close()
    return batches


def test_atari_frames_stored_once_give_back_the_envs_stacked_observations():
    batches = pong_transitions(60)
    info = describe_env("PongNoFrameskip-v4")
    buffer = ReplayBuffer(1000, info.observation_shape, info.observation_dtype, frame_stack=info.frame_stack)
    slots = np.concatenate([buffer.add(batch) for batch in batches])
    sent = TransitionBatch.concatenate(batches)
    stored = buffer.rows(slots)
    assert len(sent) > 100 and sent.dones.sum() == 0 and sent.steps.min() < 3  # truncations happened
    assert np.array_equal(stored.states, sent.states) and np.array_equal(stored.last_states, sent.last_states)
    assert np.array_equal(stored.actions, sent.actions) and np.array_equal(stored.steps, sent.steps)
    distinct = np.unique(np.concatenate([sent.states, sent.last_states]).reshape(-1, 84 * 84), axis=0)
    assert buffer.observations.frames_in_use == len(distinct) < 1.2 * len(sent)  # 8 a transition if kept whole


def test_frames_are_freed_with_the_last_transition_that_uses_them_and_room_is_made():
    batches = pong_transitions(60)
    info = describe_env("PongNoFrameskip-v4")
    buffer = ReplayBuffer(20, info.observation_shape, info.observation_dtype, frame_stack=4)
    buffer.observations = FrameStore(20, info.observation_shape, info.observation_dtype, frame_capacity=16)
    for batch in batches:  # wraps the ring many times over; 16 frames hold fewer than 20 rows
        slots = buffer.add(batch)
        stored = buffer.rows(slots)
        assert np.array_equal(stored.states, batch.states) and np.array_equal(stored.last_states, batch.last_states)
    store = buffer.observations
    assert 0 < len(buffer) < 20 and store.frames_in_use <= 16
    live = (buffer._oldest + np.arange(len(buffer))) % 20
    users = np.bincount(np.concatenate([store.state_frames[live], store.last_frames[live]]).ravel(),
                        minlength=16)
    assert np.array_equal(users, store.users)  # each frame counted once per use, freed ones at 0
    newest = TransitionBatch.concatenate(batches)[-len(buffer):]
    assert np.array_equal(buffer.rows(live).states, newest.states)
    rng = np.random.default_rng(5)
    assert set(buffer.sample(200, beta=0.4, rng=rng)[1]) <= set(live)  # dropped slots have priority 0
    buffer.prioritized = False
    assert set(buffer.sample(200, beta=0.4, rng=rng)[1]) == set(live)  # uniform over the live ones


def test_a_frame_store_checkpoint_keeps_only_the_used_frames_and_restores_the_rows():
    batches = pong_transitions(30)
    info = describe_env("PongNoFrameskip-v4")
    buffer = ReplayBuffer(50, info.observation_shape, info.observation_dtype, frame_stack=4)
    for batch in batches:
        buffer.add(batch)
    buffer.update_priorities(np.arange(5), np.arange(5.0))
    state = buffer.state_dict()
    assert len(state["frames"]) == buffer.observations.frames_in_use
    smaller = ReplayBuffer(30, info.observation_shape, info.observation_dtype, frame_stack=4)
    smaller.load_state_dict(state)
    kept = (buffer._oldest + np.arange(len(buffer)))[-30:] % 50  # the newest 30, oldest first
    assert np.array_equal(smaller.rows(np.arange(30)).states, buffer.rows(kept).states)
    assert np.array_equal(smaller.rows(np.arange(30)).last_states, buffer.rows(kept).last_states)
    assert np.array_equal(smaller.priorities.get(np.arange(30)), buffer.priorities.get(kept))
    again = smaller.rows(np.arange(30))
    smaller.add(again)  # frames it already holds are found again, not stored twice
    assert smaller.observations.frames_in_use == len(np.unique(
        np.concatenate([again.states, again.last_states]).reshape(-1, 84 * 84), axis=0))


def test_replay_memory_is_planned_at_about_one_frame_a_transition_for_atari():
    atari = replay_bytes(10**6, (4, 84, 84), "uint8", frame_stack=4)
    whole = replay_bytes(10**6, (4, 84, 84), "uint8")
    assert 7.0e9 < atari < 7.8e9 and whole > 56e9


def test_frames_with_the_same_hash_are_told_apart_by_their_bytes(monkeypatch):
    import a3c.lib.replay

    monkeypatch.setattr(a3c.lib.replay, "hash", lambda data: 7, raising=False)  # every frame collides
    batches = pong_transitions(20)
    info = describe_env("PongNoFrameskip-v4")
    buffer = ReplayBuffer(200, info.observation_shape, info.observation_dtype, frame_stack=4)
    slots = np.concatenate([buffer.add(batch) for batch in batches])
    sent = TransitionBatch.concatenate(batches)
    stored = buffer.rows(slots)
    assert np.array_equal(stored.states, sent.states) and np.array_equal(stored.last_states, sent.last_states)
    distinct = np.unique(np.concatenate([sent.states, sent.last_states]).reshape(-1, 84 * 84), axis=0)
    assert len(distinct) > 2
    # only the first frame under the key is found again; equal frames stored apart are fine,
    # unequal frames shared would not be
    assert buffer.observations.frames_in_use >= len(distinct)
