"""Shared-memory slots: rows arrive intact, slots are reused round-robin, the bound holds."""
import time

import numpy as np
import torch
import torch.multiprocessing as mp

from a3c.transport.channel import ChildChannel, SlotLayout
from a3c.transport.messages import SlotTransitions
from lib.experience import TransitionBatch


def frames_batch(first: int, rows: int) -> TransitionBatch:
    """Atari-shaped uint8 rows whose every pixel is the row's id, so a mix-up shows."""
    ids = np.arange(first, first + rows)
    return TransitionBatch(
        states=np.broadcast_to((ids % 256).astype(np.uint8)[:, None, None, None], (rows, 4, 84, 84)).copy(),
        actions=ids % 6, rewards=ids.astype(np.float32), dones=np.zeros(rows, bool),
        steps=np.full(rows, 4), last_values=ids.astype(np.float32) / 2, policy_versions=ids + 100,
    )


def make_channel(slots=2, rows=8):
    context = mp.get_context("spawn")
    layout = SlotLayout((4, 84, 84), "uint8", rows=rows, slots=slots)
    return ChildChannel(0, 0, context.Queue(maxsize=10), context.Event(), layout.allocate(),
                        context.BoundedSemaphore(slots), torch.zeros((), dtype=torch.float64),
                        context.Queue())


def test_a_child_polls_the_newest_env_task_once():
    channel = make_channel()
    assert channel.poll_task() is None
    channel.tasks.put({"level": 1})
    channel.tasks.put({"level": 2})
    received, deadline = [], time.monotonic() + 30
    while received[-1:] != [{"level": 2}]:  # the queue's feeder thread delivers in the background
        assert time.monotonic() < deadline, received
        task = channel.poll_task()
        if task is not None:
            received.append(task)
    # the newest task wins: the older one is skipped whenever both had arrived
    assert received in ([{"level": 2}], [{"level": 1}, {"level": 2}])
    assert channel.poll_task() is None


def test_rows_come_back_intact_with_their_policy_versions():
    channel = make_channel()
    sent = frames_batch(3, 5)
    assert channel.put_transitions(sent)
    message = channel.messages.get(timeout=5)
    assert isinstance(message, SlotTransitions) and "states" not in message.columns
    received = channel.take(message).batch
    assert np.array_equal(received.states, sent.states)
    assert np.array_equal(received.last_values, sent.last_values)
    assert received.policy_versions.tolist() == [103, 104, 105, 106, 107]


def test_slots_are_reused_round_robin_and_a_full_channel_waits_until_stopped():
    channel = make_channel(slots=2)
    assert channel.put_transitions(frames_batch(0, 4))
    assert channel.put_transitions(frames_batch(10, 4))
    assert float(channel.wait_seconds) == 0.0
    channel.stop_event.set()
    assert not channel.put_transitions(frames_batch(20, 4))  # both slots in flight: no room
    channel.stop_event.clear()
    assert float(channel.wait_seconds) > 0.0  # the wait for a free slot was counted
    first, second = channel.messages.get(timeout=5), channel.messages.get(timeout=5)
    assert (first.slot, second.slot) == (0, 1)
    assert channel.take(first).batch.states[0, 0, 0, 0] == 0
    assert channel.put_transitions(frames_batch(20, 4))  # slot 0 is free again
    third = channel.messages.get(timeout=5)
    assert third.slot == 0
    assert channel.take(second).batch.states[0, 0, 0, 0] == 10
    assert channel.take(third).batch.states[0, 0, 0, 0] == 20


def test_a_batch_larger_than_a_slot_is_refused():
    channel = make_channel(rows=2)
    try:
        channel.put_transitions(frames_batch(0, 3))
    except ValueError as error:
        assert "do not fit" in str(error)
    else:
        raise AssertionError("an oversized batch was accepted")
