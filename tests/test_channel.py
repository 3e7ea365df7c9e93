"""Shared-memory slots: rows arrive intact, slots are reused round-robin, the bound holds,
and a message must match the columns its algorithm declared."""
import time

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from a3c.algos.payloads import TransitionPayload, transition_columns
from a3c.lib.columns import Column, PayloadError
from a3c.lib.envs import EnvInfo
from a3c.lib.experience import TransitionBatch
from a3c.transport.channel import ChildChannel, allocate_slots
from a3c.transport.messages import SlotRows

ATARI_INFO = EnvInfo("PongNoFrameskip-v4", (4, 84, 84), "uint8", n_actions=6, atari=True, frames_per_step=4,
                     reward_threshold=None)


def frames_batch(first: int, rows: int) -> TransitionBatch:
    """Atari-shaped uint8 rows whose every pixel is the row's id, so a mix-up shows."""
    ids = np.arange(first, first + rows)
    return TransitionBatch(
        states=np.broadcast_to((ids % 256).astype(np.uint8)[:, None, None, None], (rows, 4, 84, 84)).copy(),
        actions=ids % 6, rewards=ids.astype(np.float32), dones=np.zeros(rows, bool),
        steps=np.full(rows, 4), last_values=ids.astype(np.float32) / 2, policy_versions=ids + 100,
    )


def make_channel(slots=2, rows=8, extra=()):
    context = mp.get_context("spawn")
    payload = TransitionPayload(transition_columns(ATARI_INFO), rows).with_columns(extra)
    return ChildChannel(0, 0, context.Queue(maxsize=10), context.Event(), payload, allocate_slots(payload, slots),
                        slots, context.BoundedSemaphore(slots), torch.zeros((), dtype=torch.float64),
                        context.Queue())


def test_a_child_polls_what_the_learner_sent_once_and_in_order():
    channel = make_channel()
    assert channel.poll_tasks() == []
    channel.tasks.put({"level": 1})
    channel.tasks.put("a call")
    channel.tasks.put({"level": 2})
    received, deadline = [], time.monotonic() + 30
    while len(received) < 3:  # the queue's feeder thread delivers in the background
        assert time.monotonic() < deadline, received
        received += channel.poll_tasks()
    assert received == [{"level": 1}, "a call", {"level": 2}]  # a call between env tasks is kept
    assert channel.poll_tasks() == []


def test_rows_come_back_intact_with_their_policy_versions():
    channel = make_channel()
    sent = frames_batch(3, 5)
    assert channel.put_item(sent)
    message = channel.messages.get(timeout=5)
    assert isinstance(message, SlotRows) and "states" not in message.columns
    received = channel.take(message).batch
    assert np.array_equal(received.states, sent.states)
    assert np.array_equal(received.last_values, sent.last_values)
    assert received.policy_versions.tolist() == [103, 104, 105, 106, 107]


def test_slots_are_reused_round_robin_and_a_full_channel_waits_until_stopped():
    channel = make_channel(slots=2)
    assert channel.put_item(frames_batch(0, 4))
    assert channel.put_item(frames_batch(10, 4))
    assert float(channel.wait_seconds) == 0.0
    channel.stop_event.set()
    assert not channel.put_item(frames_batch(20, 4))  # both slots in flight: no room
    channel.stop_event.clear()
    assert float(channel.wait_seconds) > 0.0  # the wait for a free slot was counted
    first, second = channel.messages.get(timeout=5), channel.messages.get(timeout=5)
    assert (first.slot, second.slot) == (0, 1)
    assert channel.take(first).batch.states[0, 0, 0, 0] == 0
    assert channel.put_item(frames_batch(20, 4))  # slot 0 is free again
    third = channel.messages.get(timeout=5)
    assert third.slot == 0
    assert channel.take(second).batch.states[0, 0, 0, 0] == 10
    assert channel.take(third).batch.states[0, 0, 0, 0] == 20


def test_a_taken_batch_keeps_its_rows_after_its_slot_is_written_again():
    """``take`` copies out of the slot it frees: a learner still holding the batch (a replay
    buffer, a rollout) must not see the next message's rows appear in it."""
    channel = make_channel(slots=1)
    assert channel.put_item(frames_batch(0, 4))
    held = channel.take(channel.messages.get(timeout=5)).batch
    assert channel.put_item(frames_batch(50, 4))  # the one slot, filled again
    later = channel.take(channel.messages.get(timeout=5)).batch
    assert held.states[:, 0, 0, 0].tolist() == [0, 1, 2, 3]
    assert later.states[:, 0, 0, 0].tolist() == [50, 51, 52, 53]


def test_a_batch_larger_than_a_slot_is_refused():
    channel = make_channel(rows=2)
    with pytest.raises(PayloadError, match="3 rows; the algorithm declared at most 2"):
        channel.put_item(frames_batch(0, 3))


def test_a_column_of_4096_bytes_a_message_travels_in_its_own_slot_and_a_smaller_one_in_the_record():
    """8 rows a message: 2 x 64 float32s a row make 4,096 bytes, a slot's; 127 float32s, 4,064 bytes,
    and an int32 ride in the record."""
    extra = [Column("hidden", "float32", (2, 64)), Column("tag", "int32"), Column("under", "float32", (127,))]
    channel = make_channel(extra=extra)
    assert set(channel.slots) == {"states", "hidden"} and channel.slots["hidden"].shape == (2, 8, 2, 64)
    sent = frames_batch(0, 3)
    sent.extras = {"hidden": np.arange(384, dtype=np.float32).reshape(3, 2, 64), "tag": np.array([7, 8, 9], np.int32),
                   "under": np.ones((3, 127), np.float32)}
    assert channel.put_item(sent)
    message = channel.messages.get(timeout=5)
    assert "hidden" not in message.columns and message.columns["tag"].tolist() == [7, 8, 9]
    assert message.columns["under"].shape == (3, 127)
    received = channel.take(message).batch
    assert np.array_equal(received.extras["hidden"], sent.extras["hidden"])
    assert received.extras["tag"].dtype == np.int32


@pytest.mark.parametrize(("change", "complaint"), [
    (lambda batch: batch.extras.pop("tag"), r"lacks declared columns \['tag'\]"),
    (lambda batch: batch.extras.update(other=np.zeros(3)), r"undeclared columns \['other'\]"),
    (lambda batch: batch.extras.update(tag=np.zeros(3, np.int64)), "'tag' was declared as rows of int32"),
    (lambda batch: batch.extras.update(tag=np.zeros((3, 2), np.int32)), r"int32 \(\) and a worker sent int32 \(2,\)"),
])
def test_a_message_unlike_its_declaration_is_refused_naming_the_column(change, complaint):
    channel = make_channel(extra=[Column("tag", "int32")])
    sent = frames_batch(0, 3)
    sent.extras = {"tag": np.array([7, 8, 9], np.int32)}
    change(sent)
    with pytest.raises(PayloadError, match=complaint):
        channel.put_item(sent)
