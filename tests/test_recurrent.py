"""Memory (``--lstm``, and attention's where it is the same code): the state each env keeps
while acting, the sequences the learner reruns from the stored states, the buffer that makes
whole sequences, and the memory task that a recurrent policy solves and a feed-forward one cannot."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from a3c import Trainer
from a3c.config import ConfigError, make_config
from a3c.env_runner import VectorActor
from a3c.lib.envs import EnvRecipe, describe_env
from a3c.lib.experience import TransitionBatch
from a3c.lib.memory_task import ENV_ID
from a3c.lib.models import build_net
from a3c.lib.recurrent import SequenceBuffer, sequences, unroll, with_streams
from a3c.play import play

MEMORIES = ["lstm", "attention"]
SMALL_ATTENTION = {"use_attention": True, "attention_dim": 8, "attention_head_dim": 4, "attention_num_heads": 2,
                   "attention_memory_inference": 3, "attention_position_wise_mlp_dim": 8}


def small_net(env_id: str = ENV_ID, memory: str = "lstm") -> torch.nn.Module:
    torch.manual_seed(0)
    if memory == "attention":
        return build_net(describe_env(env_id), model=SMALL_ATTENTION)
    return build_net(describe_env(env_id), lstm=True, lstm_cell_size=8)


@pytest.mark.parametrize("memory", MEMORIES)
def test_unroll_reruns_each_sequence_from_its_stored_state_and_zeroes_it_at_an_episode_start(memory):
    """Stream 0 steps rows 0, 2, 4, 6, 7 (row 2 starts an episode); stream 1 rows 1, 3, 5.
    With sequences of 2, stream 0 runs [0, 2], [4, 6], [7] and stream 1 [1, 3], [5]: the
    state is zeroed before row 2 inside its run, and row 7 starts from its own stored state
    (a cut, not an episode's start)."""
    net = small_net(memory=memory)
    observations = torch.rand(8, 3)
    stored = torch.randn(8, *net.state_shape)
    stored[2] = 0.0
    starts = np.array([False, False, True, False, False, False, False, False])
    streams = np.array([0, 1, 0, 1, 0, 1, 0, 0])
    order, lengths = sequences(streams, 2)
    assert order.tolist() == [0, 2, 4, 6, 7, 1, 3, 5] and lengths.tolist() == [2, 2, 1, 2, 1]
    head, values = unroll(net, observations[order], stored[order], starts[order], lengths)
    expected_heads, expected_values = {}, {}
    with torch.no_grad():
        for run in ([0, 2], [4, 6], [7], [1, 3], [5]):
            state = stored[run[0]][None]
            for row in run:
                if starts[row]:
                    state = torch.zeros_like(state)
                row_head, row_value, state = net(observations[row][None], state)
                expected_heads[row], expected_values[row] = row_head[0], row_value[0]
    torch.testing.assert_close(head, torch.stack([expected_heads[row] for row in order.tolist()]))
    torch.testing.assert_close(values, torch.stack([expected_values[row] for row in order.tolist()]))
    head.sum().backward()  # the gradient reaches the memory through every step of a run
    step_to_step = net.cell.weight_hh if memory == "lstm" else net.units[0].key_value.weight
    assert step_to_step.grad.abs().sum() > 0


def check_stored_states(env_id: str, steps: int, env_config: dict | None = None, memory: str = "lstm") -> int:
    """Steps an actor with a recurrent net and checks every row's stored state: zero where
    the row starts an episode, else the state the previous row of its env led to. Returns how
    many episode starts after the first it saw."""
    net = small_net(env_id, memory)
    actor = VectorActor(EnvRecipe(env_id, env_config=env_config), num_envs=2, reward_steps=1, gamma=0.9, net=net,
                        policy_version=lambda: 0, seed=3, send_log_probs=True)
    rows = []
    try:
        for _ in range(steps):
            if (batch := actor.step().batch) is not None:
                rows.append(batch)
    finally:
        actor.close()
    batch = TransitionBatch.concatenate(rows)
    stored = torch.as_tensor(batch.extras["recurrent_states"])
    later_starts = 0
    for env in (0, 1):
        mine = np.flatnonzero(batch.env_ids == env)
        assert batch.starts[mine[0]]
        for previous, row in itertools.pairwise(mine):
            if batch.starts[row]:
                assert batch.ends[previous] and torch.count_nonzero(stored[row]) == 0
                later_starts += 1
                continue
            with torch.no_grad():
                _, _, led_to = net(torch.as_tensor(batch.states[previous])[None], stored[previous][None])
            torch.testing.assert_close(stored[row], led_to[0])
            assert torch.count_nonzero(stored[row]) > 0
    return later_starts


@pytest.mark.parametrize(("env_id", "env_config", "memory"), [
    (ENV_ID, {"delay": 2}, "lstm"),  # SAME_STEP autoreset: the next observation starts the episode
    ("CartPole-v1", None, "lstm"),  # NEXT_STEP: a reset step, with no row, comes between
    (ENV_ID, {"delay": 2}, "attention")])
def test_the_actor_keeps_each_envs_state_and_zeroes_it_where_an_episode_starts(env_id, env_config, memory):
    assert check_stored_states(env_id, 60, env_config, memory) >= 2


def rows(stream: int, steps: list[int], ends: list[bool]) -> TransitionBatch:
    count = len(steps)
    batch = TransitionBatch(states=np.array(steps, np.float32)[:, None], actions=np.zeros(count, np.int64),
                            rewards=np.zeros(count, np.float32), dones=np.array(ends), steps=np.ones(count, np.int64),
                            env_ids=np.zeros(count, np.int64), ends=np.array(ends), starts=np.zeros(count, bool))
    return with_streams(batch, stream)


def test_the_sequence_buffer_hands_out_whole_sequences_of_seq_len_or_to_an_episodes_end():
    buffer = SequenceBuffer(batch_size=5, seq_len=3)
    buffer.add(rows(0, [0, 1], [False, False]))
    buffer.add(rows(1, [10, 11], [False, True]))  # stream 1's episode ends: a sequence of 2
    assert buffer.pop_batch() is None  # 2 rows in whole sequences, 2 still open
    buffer.add(rows(0, [2, 3], [False, False]))  # stream 0's first 3 make a sequence
    buffer.add(rows(1, [12], [False]))
    taken = buffer.pop_batch()
    assert taken.states[:, 0].tolist() == [10, 11, 0, 1, 2] and buffer.pop_batch() is None
    assert len(buffer) == 2  # row 3 of stream 0 and row 12 of stream 1 wait for their sequences


def test_lstm_is_refused_in_one_line_where_it_cannot_run():
    for algo in ("a3c", "mappo"):
        with pytest.raises(ConfigError, match="--lstm is for single-agent envs"):
            Trainer(env="TwoStepGame", algo=algo, lstm=True)
    with pytest.raises(ConfigError, match="lstm"):
        make_config(env="CartPole-v1", algo="dqn", lstm=True)


def test_ppo_with_lstm_solves_the_memory_task_and_plays_and_acts_with_its_state(tmp_path):
    """Only a policy that remembers the cue scores above 0 on average (a3c.lib.memory_task)."""
    # serial: the subject is the algorithm (the A3C test below runs the LSTM on processes)
    with Trainer(env=ENV_ID, algo="ppo", lstm=True, logdir=str(tmp_path), max_seconds=120, seed=1,
                 backend="serial") as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result
        cue, blank = np.array([0, 1, 0], np.float32), np.zeros(3, np.float32)
        answer = np.array([0, 0, 1], np.float32)
        _, state = trainer.compute_action(cue, greedy=True)
        assert state.shape == (2, 256) and np.count_nonzero(state)
        for _ in range(7):
            _, state = trainer.compute_action(blank, greedy=True, state=state)
        assert trainer.compute_action(answer, greedy=True, state=state)[0] == 1  # names cue 1, 8 steps on
    played = play(str(Path(result["run_dir"]) / "best.pt"), episodes=20, greedy=True)
    assert np.mean([episode.reward for episode in played]) >= 0.8


@pytest.mark.parametrize("mode, memory", [("data", "lstm"), ("grads", "lstm"), ("grads", "attention")])
def test_a3c_with_memory_trains_in_both_modes(tmp_path, mode, memory):
    shape = {"lstm": True, "lstm_cell_size": 16} if memory == "lstm" else {"model": SMALL_ATTENTION}
    with Trainer(env=ENV_ID, mode=mode, logdir=str(tmp_path), seq_len=5, stop_reward=2.0, **shape) as trainer:
        step_to_step = trainer.net.cell.weight_hh if memory == "lstm" else trainer.net.units[0].key_value.weight
        before = step_to_step.detach().clone()
        result = trainer.train(frames=1_000)
        assert result["frames"] >= 1_000 and not torch.equal(step_to_step, before)


def test_a3c_with_lstm_on_vector_envs_scales_its_rewards_unless_told_not_to():
    """The cell serves the policy and the value: rewards scaled to the return's deviation keep
    the value's gradient from drowning the policy's (docs/spaces.md, "Memory")."""
    assert make_config(env="CartPole-v1", lstm=True).scale_rewards
    assert make_config(env="CartPole-v1", lstm=True, mode="grads").scale_rewards
    assert not make_config(env="CartPole-v1", lstm=True, scale_rewards=False).scale_rewards
    assert not make_config(env="CartPole-v1").scale_rewards
    assert not make_config(env="PongNoFrameskip-v4", lstm=True).scale_rewards  # clipped rewards already
    assert not make_config(env="CartPole-v1", algo="ppo", lstm=True).scale_rewards
    assert make_config(env="CartPole-v1", model={"use_attention": True}).scale_rewards  # a memory as well


@pytest.mark.slow
def test_a3c_with_lstm_solves_cartpole_at_its_defaults(tmp_path):
    with Trainer(env="CartPole-v1", lstm=True, logdir=str(tmp_path), backend="serial", seed=0,
                 max_frames=400_000) as trainer:
        while not (result := trainer.train(seconds=10))["done"]:
            pass
        assert result["reason"] == "solved", result
