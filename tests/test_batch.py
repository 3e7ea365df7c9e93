"""Learner batching (exact batch size, order kept) and unpack_batch's reference values."""
import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from a3c.algos.a3c.gradients import unpack_batch
from a3c.lib.batch import TransitionBuffer
from a3c.lib.experience import TransitionBatch


def make_batch(first_ids, dones=None, steps=None, rewards=None, obs_dtype=np.float32):
    """Transitions whose states are [id] and last states [10 * id]."""
    ids = np.asarray(first_ids, dtype=np.float32)
    count = len(ids)
    return TransitionBatch(
        states=ids.reshape(-1, 1).astype(obs_dtype),
        actions=np.arange(count, dtype=np.int64) % 2,
        rewards=np.ones(count, dtype=np.float32) if rewards is None else np.asarray(rewards, np.float32),
        last_states=(10 * ids).reshape(-1, 1).astype(obs_dtype),
        dones=np.zeros(count, bool) if dones is None else np.asarray(dones, bool),
        steps=np.full(count, 4, np.int64) if steps is None else np.asarray(steps, np.int64),
    )


class ValueIsObservation(nn.Module):
    """V(s) = s[0], so bootstrap values are known exactly."""

    def __init__(self):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(()))

    def forward(self, observations):
        values = observations[:, 0].float() + 0 * self.unused
        return torch.zeros(len(observations), 2), values


def test_buffer_yields_exact_batches_in_arrival_order():
    buffer = TransitionBuffer(batch_size=4)
    buffer.add(make_batch([0, 1, 2]))
    assert buffer.pop_batch() is None
    buffer.add(make_batch([3, 4, 5, 6, 7, 8]))
    first, second = buffer.pop_batch(), buffer.pop_batch()
    assert first.states[:, 0].tolist() == [0, 1, 2, 3]
    assert second.states[:, 0].tolist() == [4, 5, 6, 7]
    assert buffer.pop_batch() is None and len(buffer) == 1
    buffer.add(make_batch([9, 10, 11]))
    assert buffer.pop_batch().states[:, 0].tolist() == [8, 9, 10, 11]
    assert len(buffer) == 0


def test_buffer_ignores_empty_micro_batches():
    buffer = TransitionBuffer(batch_size=2)
    buffer.add(make_batch([]))
    assert len(buffer) == 0 and buffer.pop_batch() is None


def test_unpack_bootstraps_only_where_not_done_with_gamma_to_the_steps():
    gamma = 0.9
    batch = make_batch([1, 2, 3], dones=[False, True, False], steps=[4, 4, 2], rewards=[1.0, 2.0, 3.0])
    states, actions, reference = unpack_batch(batch, ValueIsObservation(), gamma)
    # row 0: 1 + 0.9**4 * V(10) = 1 + 6.561; row 1: done, 2; row 2: truncated after 2 steps,
    # 3 + 0.9**2 * V(30) = 3 + 24.3.
    assert reference.tolist() == pytest.approx([7.561, 2.0, 27.3], rel=1e-6)
    assert states.shape == (3, 1) and actions.tolist() == [0, 1, 0]
    assert reference.dtype == torch.float32 and actions.dtype == torch.int64


def test_unpack_all_done_needs_no_bootstrap():
    batch = make_batch([1, 2], dones=[True, True], rewards=[5.0, -1.0])
    _, _, reference = unpack_batch(batch, ValueIsObservation(), 0.99)
    assert reference.tolist() == [5.0, -1.0]


def test_unpack_keeps_uint8_states_for_the_net_to_scale():
    batch = make_batch([1, 2], obs_dtype=np.uint8)
    states, _, _ = unpack_batch(batch, ValueIsObservation(), 0.99)
    assert states.dtype == torch.uint8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_unpack_on_cuda_matches_cpu():
    batch = make_batch([1, 2, 3], dones=[False, True, False], steps=[4, 4, 1])
    cpu = unpack_batch(batch, ValueIsObservation(), 0.9)
    gpu = unpack_batch(batch, ValueIsObservation().cuda(), 0.9, device="cuda")
    assert all(tensor.device.type == "cuda" for tensor in gpu)
    for on_cpu, on_gpu in zip(cpu, gpu):
        assert torch.allclose(on_cpu.float(), on_gpu.cpu().float())


class MustNotBeCalled(nn.Module):
    def forward(self, observations):
        raise AssertionError("the learner evaluated last states although values were sent")


def test_unpack_uses_sent_values_instead_of_a_forward_pass():
    gamma = 0.9
    with_states = make_batch([1, 2, 3], dones=[False, True, False], steps=[4, 4, 2], rewards=[1.0, 2.0, 3.0])
    with_values = dataclasses.replace(with_states, last_states=None,
                                      last_values=np.array([10.0, 0.0, 30.0], np.float32))
    _, _, expected = unpack_batch(with_states, ValueIsObservation(), gamma)
    _, _, reference = unpack_batch(with_values, MustNotBeCalled(), gamma)
    assert reference.tolist() == pytest.approx(expected.tolist())
    assert reference.tolist() == pytest.approx([7.561, 2.0, 27.3], rel=1e-6)


def test_unpack_refuses_a_batch_with_no_bootstrap_source():
    batch = dataclasses.replace(make_batch([1]), last_states=None)
    with pytest.raises(ValueError, match="neither last_states nor last_values"):
        unpack_batch(batch, ValueIsObservation(), 0.9)


def test_concatenate_keeps_a_column_only_where_every_part_has_it():
    versioned = dataclasses.replace(make_batch([1, 2]), policy_versions=np.array([5, 6]))
    joined = TransitionBatch.concatenate([versioned, make_batch([3])])
    assert joined.states[:, 0].tolist() == [1, 2, 3] and joined.policy_versions is None
    both = TransitionBatch.concatenate([versioned, versioned])
    assert both.policy_versions.tolist() == [5, 6, 5, 6]


def test_unpack_leaves_the_batch_unchanged():
    batch = make_batch([1, 2], rewards=[1.0, 2.0])
    unpack_batch(batch, ValueIsObservation(), 0.9)
    assert batch.rewards.tolist() == [1.0, 2.0]
