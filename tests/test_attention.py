"""Attention as memory (``use_attention``, a3c.lib.attention): the GTrXL's gate by hand, a
unit attending only to the steps of its episode, the memory's shift and write, the settings
refused in one line, and the cue further back than the LSTM's sequences reach, remembered.
The state's reset at an episode's start and the learner's rerun from stored memory are
tests/test_recurrent.py's, run on both memories."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from a3c import Trainer
from a3c.config import ConfigError, make_config
from a3c.lib.attention import GRUGate, TransformerUnit
from a3c.lib.envs import describe_env
from a3c.lib.memory_task import ENV_ID
from a3c.lib.models import build_net
from tests.test_recurrent import SMALL_ATTENTION


def test_the_gate_by_hand():
    gate = GRUGate(1, bias=2.0)
    with torch.no_grad():
        gate.from_y.weight.copy_(torch.ones(3, 1))  # W_r = W_z = W_g = 1
        gate.from_x.weight.zero_()
        gate.reset_x.weight.zero_()
    x, y = 0.5, 1.0
    z = 1 / (1 + math.exp(-(y - 2.0)))
    expected = (1 - z) * x + z * math.tanh(y)  # 0.5703
    assert gate(torch.tensor([[x]]), torch.tensor([[y]])).item() == pytest.approx(expected, abs=1e-6)
    with torch.no_grad():
        gate.from_y.weight.zero_()  # y unread: the stream passes at 1 - sigmoid(-2) = 0.881
    assert gate(torch.tensor([[x]]), torch.tensor([[y]])).item() == pytest.approx(x / (1 + math.exp(-2.0)))


def test_a_unit_attends_evenly_to_its_episodes_steps_and_never_to_the_rest():
    torch.manual_seed(0)
    unit = TransformerUnit(dim=4, heads=2, head_dim=3, memory=3, mlp_dim=5, gate_bias=2.0)
    with torch.no_grad():
        unit.query.weight.zero_()  # every score 0: even weights over the steps it may see
    x, memory = torch.randn(1, 4), torch.randn(1, 3, 4)
    valid = torch.tensor([[False, True, True]])  # the oldest step is of the episode before
    window = unit.attention_norm(torch.cat([memory, x[:, None]], dim=1) + unit.positions)
    values = unit.key_value(window).reshape(1, 4, 2, 2, 3)[:, :, 1].reshape(1, 4, 6)
    attended = torch.relu(unit.attended(values[:, 1:].mean(dim=1)))  # the mean of the 3 steps seen
    stream = unit.attention_gate(x, attended)
    expected = unit.mlp_gate(stream, torch.relu(unit.mlp(unit.mlp_norm(stream))))
    torch.testing.assert_close(unit(x, memory, valid), expected)
    other = memory.clone()
    other[:, 0] = 100.0  # what the unit may not see changes nothing
    torch.testing.assert_close(unit(x, other, valid), expected)
    assert not torch.allclose(unit(x, other, torch.ones_like(valid)), expected)


def test_a_step_shifts_the_memory_and_writes_its_features_each_units_input_and_its_flag():
    torch.manual_seed(0)
    net = build_net(describe_env(ENV_ID), model={**SMALL_ATTENTION, "attention_num_transformer_units": 2})
    assert net.state_shape == (3, 128 + 8 + 1)  # the body's 128 features, the second unit's 8 inputs, the flag
    state = torch.randn(2, *net.state_shape)
    state[..., -1] = 1.0
    features = net.features(torch.rand(2, 3))
    outputs, after = net.advance(features, state)
    torch.testing.assert_close(after[:, :-1], state[:, 1:])  # the oldest step is forgotten
    valid = state[:, :, -1] > 0.5
    first = net.units[0](net.embed(features), net.embed(state[:, :, :128]), valid)  # projected again
    torch.testing.assert_close(after[:, -1, :128], features)
    torch.testing.assert_close(after[:, -1, 128:136], first)
    torch.testing.assert_close(outputs, net.units[1](first, state[:, :, 128:136], valid))
    assert after[:, -1, -1].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("settings, says", [
    ({"algo": "dqn", "model": {"use_attention": True}}, "--model use_attention: --algo dqn's nets cannot honour it"),
    ({"model": {"attention_dim": 32}}, "--model attention_dim is for use_attention, and it is not on"),
    ({"model": {"use_attention": True, "use_lstm": True}}, "--model use_attention and use_lstm are given both"),
    ({"model": {"use_attention": True, "attention_memory_training": 20}},
     "--model attention_memory_training: the learner reruns from the memory the workers stored"),
    ({"model": {"attention_use_n_prev_rewards": 2}}, "--model attention_use_n_prev_rewards: not built yet"),
])
def test_attention_settings_that_cannot_apply(settings, says):
    with pytest.raises(ConfigError, match=says):
        make_config(name="m", **{"env": "CartPole-v1", **settings})


def test_attention_is_refused_on_several_agents_in_one_line():
    with pytest.raises(ConfigError, match="--model use_attention is for single-agent envs"):
        Trainer(env="TwoStepGame", algo="ppo", model={"use_attention": True})


@pytest.mark.timeout(240)
def test_ppo_with_attention_names_a_cue_further_back_than_its_sequences_reach(tmp_path):
    """The cue 12 steps before the answer, sequences of 4: no gradient reaches from the answer
    to the cue, yet the memory holds the cue's step, and the unit learns to read it there
    (the LSTM against it on the same task: benchmarks/attention.py, docs/spaces.md)."""
    with Trainer(env=ENV_ID, env_config={"delay": 12}, algo="ppo", seq_len=4, backend="serial", seed=1,
                 model={"use_attention": True, "attention_memory_inference": 16}, logdir=str(tmp_path),
                 max_seconds=150) as trainer:
        while not (result := trainer.train())["done"]:
            pass
        assert result["reason"] == "solved", result
        cue, blank, answer = np.eye(3, dtype=np.float32)[1], np.zeros(3, np.float32), np.eye(3, dtype=np.float32)[2]
        _, state = trainer.compute_action(cue, greedy=True)
        assert state.shape == (16, 129)  # 16 steps of the body's 128 features and a flag
        for _ in range(11):
            _, state = trainer.compute_action(blank, greedy=True, state=state)
        assert trainer.compute_action(answer, greedy=True, state=state)[0] == 1  # names cue 1, 12 steps on
