"""The worker pool and its bounded queue, with real spawned children on the counting env."""
import dataclasses
import os
import signal
import time

import numpy as np
import psutil
import pytest
import torch
import torch.multiprocessing as mp

import a3c.cli
from a3c.algos.payloads import Gradients, Transitions
from a3c.lib.columns import Column, Payload
from a3c.lib.envs import describe_env
from a3c.lib.experience import EpisodeResult
from a3c.lib.models import build_net
from a3c.transport.channel import slots_bytes
from a3c.transport.messages import EpisodeEnded
from a3c.transport.pool import WorkerDied
from tests.helpers import alive, pids, receive, toy_config, toy_pool

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def pool_factory():
    pools = []

    def make(*args, **kwargs):
        pool = toy_pool(*args, **kwargs)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()
        assert alive(pids(pool)) == []
    assert mp.active_children() == []


def test_messages_arrive_intact_and_in_order_per_child(pool_factory):
    pool = pool_factory(toy_config(processes=2, envs_per_process=1))
    pool.start()
    first_states = {0: [], 1: []}
    episodes = {0: 0, 1: 0}
    while min(episodes.values()) < 2:
        (message,) = receive(pool, 1)
        if isinstance(message, Transitions):
            first_states[message.worker_id].extend(message.batch.states[:, 0].tolist())
        else:
            assert isinstance(message, EpisodeEnded)
            assert message.episode == EpisodeResult(15.0, 5)
            episodes[message.worker_id] += 1
            # an episode's message comes after all five of its transitions
            assert len(first_states[message.worker_id]) >= 5 * episodes[message.worker_id]
    for worker_id, states in first_states.items():
        expected = [100 * episode + t for episode in range(len(states) // 5 + 1) for t in range(5)]
        assert states == expected[:len(states)], f"worker {worker_id} out of order or lossy"


def wait_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_queue_bound_holds_and_the_child_waits_on_a_full_queue(pool_factory):
    capacity = 3
    pool = pool_factory(toy_config(processes=1, queue_size=capacity))
    pool.start()
    receive(pool, 1)  # the child is up and producing
    wait_until(lambda: pool.queued() >= capacity)  # the learner reads nothing: the queue fills
    # a wait may have ended as the first read freed room, and on a loaded machine it is
    # counted a moment later: take the count once it has held still for a while
    waited_before = settled(pool.child_wait_seconds)
    for _ in range(20):  # and stays at the bound while the child keeps trying
        assert pool.queued() <= capacity
        time.sleep(0.05)
    assert pool.child_wait_seconds() == waited_before  # still blocked: a wait is counted when it ends
    pool.get(timeout=1.0)  # room for one more: the waiting child fills it again
    # that wait ends and is counted (how long it was depends on the machine's load, so no bound)
    wait_until(lambda: pool.child_wait_seconds() > waited_before)
    assert pool.queued() <= capacity
    assert psutil.Process(pids(pool)[0]).is_running()


def test_close_stops_children_blocked_on_a_full_queue(pool_factory):
    pool = pool_factory(toy_config(processes=2, queue_size=1))
    pool.start()
    receive(pool, 1)
    wait_until(lambda: pool.queued() >= 2)  # both children's queues full: both blocked
    pool.close(join_timeout=60.0)
    # they left on the stop event (exit 0), not by the kill that follows a join timeout
    assert [worker.exitcode for worker in pool.workers()] == [0, 0]
    assert alive(pids(pool)) == []


def test_killed_child_is_reported_and_restarted_fresh(pool_factory):
    pool = pool_factory(toy_config(processes=2))
    pool.start()
    receive(pool, 4)
    victim = pids(pool)[1]
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(WorkerDied) as died:
        receive(pool, 10**6)  # fails the test if no death is reported within its minute
    assert died.value.worker_id == 1 and died.value.exitcode == -signal.SIGKILL
    pool.restart(1)
    assert pids(pool)[1] != victim and psutil.Process(pids(pool)[1]).is_running()
    # Fresh envs start again at episode 0: the new child's first transition is state 0,
    # and nothing its predecessor left in a reused slot reaches the learner after it.
    from_new_child = []
    while len(from_new_child) < 6:
        (message,) = receive(pool, 1)
        if isinstance(message, Transitions) and message.worker_id == 1:
            from_new_child.extend(message.batch.states[:, 0].tolist())
    restart_at = from_new_child.index(0.0)
    assert from_new_child[restart_at:] == [0, 1, 2, 3, 4, 100][: len(from_new_child) - restart_at]


def test_child_exception_reaches_learner_with_traceback(pool_factory):
    pool = pool_factory(toy_config(env="tests.toy_envs:Crashing-v0", processes=1))
    pool.start()
    with pytest.raises(WorkerDied) as died:
        receive(pool, 100)
    assert died.value.worker_id == 0 and died.value.exitcode == 1
    assert "toy env failure on purpose" in died.value.child_traceback


def test_grads_mode_children_send_whole_gradients_of_their_own_batches(pool_factory):
    config = toy_config(processes=2, mode="grads", batch_size=6)
    pool = pool_factory(config)
    pool.start()
    size = sum(parameter.numel() for parameter in build_net(describe_env(config.env_id)).parameters())
    gradients = [m for m in receive(pool, 12) if isinstance(m, Gradients)]
    assert gradients, "no gradient arrived"
    for message in gradients:
        assert message.gradient.shape == (size,) and np.isfinite(message.gradient).all()
        assert message.transitions == 6 and message.policy_version == 0
        assert np.abs(message.gradient).sum() > 0


def test_children_act_on_the_learners_weights_not_a_copy(pool_factory):
    """In data mode the child's acting pass reads the shared net itself: a change the learner
    makes in place shows in the next bootstrap values the child sends. (With ``--cuda`` the
    same net lives on the GPU, so a per-child copy would also cost GPU memory.)"""
    config = toy_config(processes=1, queue_size=2)
    net = build_net(describe_env(config.env_id))
    pool = pool_factory(config, net)
    pool.start()
    before = next(m for m in receive(pool, 4) if isinstance(m, Transitions)).batch
    assert not np.any(before.last_values[~before.dones] == 7.0)
    with torch.no_grad():
        for parameter in net.value.parameters():
            parameter.zero_()
        net.value[-1].bias.fill_(7.0)
    for _ in range(200):
        (message,) = receive(pool, 1)
        if isinstance(message, Transitions):
            values = message.batch.last_values[~message.batch.dones]
            if len(values) and np.all(values == 7.0):
                return
    pytest.fail("the child never acted on the learner's new weights")


def _tensor_fields(record: object, path: str = "record") -> list[str]:
    """Paths of every torch tensor inside a (nested) dataclass record."""
    if isinstance(record, torch.Tensor):
        return [path]
    if dataclasses.is_dataclass(record):
        return [found for field in dataclasses.fields(record)
                for found in _tensor_fields(getattr(record, field.name), f"{path}.{field.name}")]
    return []


@pytest.mark.parametrize("mode", ["data", "grads"])
def test_records_from_children_hold_numpy_arrays_and_numbers_only(pool_factory, mode):
    """No torch tensor travels the queue, so with ``--cuda`` no CUDA tensor can: the
    children's values, gradients and loss terms all leave as numpy or plain floats."""
    pool = pool_factory(toy_config(processes=1, mode=mode, batch_size=6))
    pool.start()
    messages = receive(pool, 12)
    assert {type(message) for message in messages} >= {Gradients if mode == "grads" else Transitions}
    assert [found for message in messages for found in _tensor_fields(message)] == []
    assert _tensor_fields(EpisodeEnded(0, EpisodeResult(torch.tensor(1.0), 5))) == ["record.episode.reward"]


def settled(read, still_for: float = 0.3, timeout: float = 10.0) -> float:
    """``read()`` once two readings ``still_for`` seconds apart agree."""
    deadline = time.monotonic() + timeout
    value = read()
    while time.monotonic() < deadline:
        time.sleep(still_for)
        again = read()
        if again == value:
            return value
        value = again
    raise AssertionError(f"{read} kept changing for {timeout} s")


def test_slots_beyond_the_free_shared_memory_are_one_line_and_exit_2_before_any_child(tmp_path, capsys):
    # 2e9 rows in flight over 32 envs: 62.5M slots of 128 rows of two stacked CartPole
    # observations, 32 bytes a row (4,096 a message: large enough for a slot), 238.4 GiB
    with pytest.raises(SystemExit) as exited:
        a3c.cli.main(["-n", "big", "--env", "CartPole-v1", "--frame-stack", "2", "--batch-size", str(10**9),
                      "--logdir", str(tmp_path)])
    assert exited.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and "the children's shared-memory slots need 238.4 GiB" in stderr[0], stderr
    assert mp.active_children() == []


def test_the_slots_bytes_are_rows_times_the_large_columns_bytes():
    """Large: 4096 bytes or more in a full message. At 320 rows, frames and 4 floats a row
    (5,120 bytes) are; 3 floats (3,840) and one float64 (2,560) are not."""
    payload = Payload([Column("frames", "uint8", (4, 84, 84)), Column("small", "float64"),
                       Column("values", "float32", (4,)), Column("three", "float32", (3,))], max_rows=320)
    assert slots_bytes(payload, 8) == 8 * 320 * (4 * 84 * 84 + 4 * 4)


@pytest.mark.parametrize("extra_tensors, forked", [(0, True), (300, False)])
def test_children_fork_from_the_server_unless_their_tensors_overflow_its_message(pool_factory, extra_tensors, forked):
    # the fork server takes a child's shared tensors' file descriptors in one message of at most
    # ~250; a net of 300 more tensors is spawned, and its child runs as any other
    net = build_net(describe_env("tests.toy_envs:Counting-v0"))
    for index in range(extra_tensors):
        net.register_buffer(f"extra_{index}", torch.zeros(1))
    pool = pool_factory(toy_config(processes=1), net)
    pool.start()
    assert any(isinstance(message, Transitions) for message in receive(pool, 2))
    (worker,) = pool.workers()
    parent = psutil.Process(worker.pid).parent()
    assert (parent.pid != os.getpid()) == forked  # forked children are the server's, spawned ones ours
