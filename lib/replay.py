"""Experience replay for off-policy learners: a ring of n-step transitions, sampled
uniformly or in proportion to priority ** alpha through a sum-tree (prioritized replay,
Schaul et al. 2016), with importance-sampling weights that correct for the bias.

The ring holds the same columns the actors send (``TransitionBatch``) with the last state
kept, since a Q-learning target is computed from it at training time by the learner's
current networks. New transitions enter at the highest priority seen so far, so each is
sampled soon at least once. Stacked Atari observations share all but one frame with their
neighbours, so ``FrameStore`` keeps each distinct frame once and a transition only its
frames' numbers.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from a3c.lib.experience import TransitionBatch


class SumTree:
    """Non-negative priorities of ``capacity`` slots in a binary tree of partial sums.

    Setting priorities and finding the slot at which the running sum of priorities passes
    a value both take O(log capacity); the total is the root.
    """

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._leaves = 1 << (capacity - 1).bit_length()
        self._tree = np.zeros(2 * self._leaves, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self._tree[1])

    def get(self, slots: np.ndarray) -> np.ndarray:
        return self._tree[self._leaves + np.asarray(slots)]

    def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Set each slot's priority (a slot named twice keeps its last one), then refresh
        the sums above them, one level at a time."""
        slots, priorities = np.asarray(slots, dtype=np.int64), np.asarray(priorities, dtype=np.float64)
        if np.any(priorities < 0) or not np.all(np.isfinite(priorities)):
            raise ValueError("priorities must be finite and non-negative")
        if len(slots) == 0:
            return
        last = len(slots) - 1 - np.unique(slots[::-1], return_index=True)[1]
        nodes = slots[last] + self._leaves
        self._tree[nodes] = priorities[last]
        while nodes[0] > 1:
            nodes = np.unique(nodes // 2)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]

    def find(self, values: np.ndarray) -> np.ndarray:
        """For each value in [0, total): the slot whose priority interval holds it, that is
        the first slot at which the running sum of priorities exceeds the value."""
        values = np.array(values, dtype=np.float64)
        nodes = np.ones(len(values), dtype=np.int64)
        while nodes[0] < self._leaves:
            left = self._tree[2 * nodes]
            # a value past the left sum goes right, unless rounding put it there and the
            # right side is empty: then the last non-empty slot on the left takes it
            right = (values >= left) & (self._tree[2 * nodes + 1] > 0)
            values = np.where(right, values - left, values)
            nodes = 2 * nodes + right
        return nodes - self._leaves


class WholeObservations:
    """Each slot's first and last observation kept whole: for small vector observations."""

    def __init__(self, capacity: int, observation_shape: tuple[int, ...], observation_dtype: str):
        self.states = np.zeros((capacity, *observation_shape), dtype=observation_dtype)
        self.last_states = np.zeros((capacity, *observation_shape), dtype=observation_dtype)

    def put(self, slots: np.ndarray, states: np.ndarray, last_states: np.ndarray,
            make_room: Callable[[], bool]) -> None:
        self.states[slots] = states
        self.last_states[slots] = last_states

    def get(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.states[slots], self.last_states[slots]

    def release(self, slots: np.ndarray) -> None:
        """Nothing to free: a slot's observations are overwritten in place."""

    def state_dict(self, slots: np.ndarray) -> dict[str, torch.Tensor]:
        return {"states": torch.from_numpy(self.states[slots]),
                "last_states": torch.from_numpy(self.last_states[slots])}

    def load_state_dict(self, state: dict, rows: slice) -> None:
        """Put the saved ``rows`` into slots 0, 1, ... of an empty store."""
        states, last_states = state["states"][rows].numpy(), state["last_states"][rows].numpy()
        self.states[:len(states)], self.last_states[:len(states)] = states, last_states


class FrameStore:
    """Observations that are stacks of frames along their first axis, each distinct frame
    kept once: a slot holds the numbers of its first and last observation's frames.

    A frame is found again by the hash of its bytes (confirmed by comparing them, so two
    frames are shared only when equal) and counted by the slots that use it; it is freed
    when the last of them is released. ``frame_capacity`` frames are allocated up front, so
    the memory is known at start; should they run out, ``make_room`` (the ring dropping its
    oldest transition) is called until a frame is free.
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...], observation_dtype: str,
                 frame_capacity: int):
        self.stack, *frame_shape = observation_shape
        self.frames = np.zeros((frame_capacity, *frame_shape), dtype=observation_dtype)
        self.users = np.zeros(frame_capacity, dtype=np.int64)
        self.keys = np.zeros(frame_capacity, dtype=np.int64)
        self.state_frames = np.zeros((capacity, self.stack), dtype=np.int64)
        self.last_frames = np.zeros((capacity, self.stack), dtype=np.int64)
        self._by_key: dict[int, int] = {}
        self._freed: list[int] = []
        self._never_used = 0  # frames from here on have never held anything

    @property
    def frames_in_use(self) -> int:
        return self._never_used - len(self._freed)

    def put(self, slots: np.ndarray, states: np.ndarray, last_states: np.ndarray,
            make_room: Callable[[], bool]) -> None:
        for column, observations in ((self.state_frames, states), (self.last_frames, last_states)):
            frames = np.ascontiguousarray(observations)
            for row, slot in enumerate(slots):
                column[slot] = [self._intern(frame, make_room) for frame in frames[row]]

    def _intern(self, frame: np.ndarray, make_room: Callable[[], bool]) -> int:
        """The number of a stored frame equal to ``frame`` (one more user), else of a new one."""
        key = hash(frame.tobytes())
        found = self._by_key.get(key)
        if found is not None and np.array_equal(self.frames[found], frame):
            self.users[found] += 1
            return found
        number = self._free_frame(make_room)
        self.frames[number], self.users[number], self.keys[number] = frame, 1, key
        if found is None:  # an unequal frame under the same hash is stored but not indexed
            self._by_key[key] = number
        return number

    def _free_frame(self, make_room: Callable[[], bool]) -> int:
        while not self._freed and self._never_used == len(self.frames):
            if not make_room():
                raise RuntimeError(f"{len(self.frames):,} frames cannot hold one transition's observations")
        if self._freed:
            return self._freed.pop()
        self._never_used += 1
        return self._never_used - 1

    def get(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.frames[self.state_frames[slots]], self.frames[self.last_frames[slots]]

    def release(self, slots: np.ndarray) -> None:
        numbers = np.concatenate([self.state_frames[slots].ravel(), self.last_frames[slots].ravel()])
        np.subtract.at(self.users, numbers, 1)
        for number in np.unique(numbers[self.users[numbers] == 0]).tolist():
            key = int(self.keys[number])
            if self._by_key.get(key) == number:
                del self._by_key[key]
            self._freed.append(number)

    def state_dict(self, slots: np.ndarray) -> dict[str, torch.Tensor]:
        """The frames the ``slots`` use, renumbered from 0, and each slot's numbers."""
        numbers = np.concatenate([self.state_frames[slots], self.last_frames[slots]], axis=1)
        used, renumbered = np.unique(numbers, return_inverse=True)
        renumbered = renumbered.reshape(numbers.shape)
        return {"frames": torch.from_numpy(self.frames[used]),
                "state_frames": torch.from_numpy(renumbered[:, :self.stack].copy()),
                "last_frames": torch.from_numpy(renumbered[:, self.stack:].copy())}

    def load_state_dict(self, state: dict, rows: slice) -> None:
        """Put the saved ``rows`` into slots 0, 1, ... of an empty store, with only their frames."""
        numbers = np.concatenate([state["state_frames"][rows].numpy(), state["last_frames"][rows].numpy()], axis=1)
        used, renumbered = np.unique(numbers, return_inverse=True)
        if len(used) > len(self.frames):
            raise ValueError(f"the saved transitions use {len(used):,} frames and this buffer holds "
                             f"{len(self.frames):,}")
        renumbered = renumbered.reshape(numbers.shape)
        count = len(renumbered)
        self.state_frames[:count], self.last_frames[:count] = renumbered[:, :self.stack], renumbered[:, self.stack:]
        self.frames[:len(used)] = state["frames"].numpy()[used]
        self.users[:len(used)] = np.bincount(renumbered.ravel(), minlength=len(used))
        self._never_used = len(used)
        for number in range(len(used)):
            self.keys[number] = hash(self.frames[number].tobytes())
            self._by_key.setdefault(int(self.keys[number]), number)


FRAME_INDEX_BYTES = 120
"""What one entry of a ``FrameStore``'s hash index costs in Python objects, about."""


def spare_frames(capacity: int) -> int:
    """Frames a ``FrameStore`` keeps beyond one per transition: the stacks' older frames at
    each env's oldest stored step and the last states past its newest, with room to spare."""
    return capacity // 50 + 4096


def replay_bytes(capacity: int, observation_shape: tuple[int, ...], observation_dtype: str,
                 frame_stack: int | None = None, action_bytes: int = 8) -> int:
    """Memory a ``ReplayBuffer`` of ``capacity`` takes: two whole observations a transition,
    or with ``frame_stack`` about one frame a transition, its frame numbers and the index."""
    observation = int(np.prod(observation_shape)) * np.dtype(observation_dtype).itemsize
    columns = action_bytes + 4 + 1 + 8 + 16  # action, reward, done, steps, sum-tree leaf and node
    if frame_stack is None:
        return capacity * (2 * observation + columns)
    frame = observation // frame_stack
    per_frame = frame + 8 + 8 + FRAME_INDEX_BYTES  # users, key
    return (capacity + spare_frames(capacity)) * per_frame + capacity * (2 * frame_stack * 8 + columns)


class ReplayBuffer:
    """A ring of up to ``capacity`` n-step transitions, the oldest dropped first.

    ``alpha`` = 0 (or ``prioritized=False``) samples uniformly; otherwise slot i is drawn
    with probability p_i ** alpha / sum_j p_j ** alpha, and ``sample`` returns the
    importance-sampling weights (N * P(i)) ** -beta divided by the batch's largest.
    ``frame_stack`` says the observations are stacks of that many frames on their first
    axis: each frame is then stored once (``FrameStore``). ``agents`` > 0 stores joint rows of
    a multi-agent env (MADDPG's): an action and a reward per agent. Actions are single ints
    unless ``action_shape`` and ``action_dtype`` say otherwise (a Box's float vectors).
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...], observation_dtype: str,
                 alpha: float = 0.6, prioritized: bool = True, priority_eps: float = 1e-6,
                 frame_stack: int | None = None, agents: int = 0, action_shape: tuple[int, ...] = (),
                 action_dtype: str = "int64"):
        self.capacity = capacity
        self.alpha = alpha if prioritized else 0.0
        self.prioritized = prioritized and alpha > 0
        self.priority_eps = priority_eps
        if frame_stack is None:
            self.observations = WholeObservations(capacity, observation_shape, observation_dtype)
        else:
            if observation_shape[0] != frame_stack:
                raise ValueError(f"observations {observation_shape} are not stacks of {frame_stack} frames")
            self.observations = FrameStore(capacity, observation_shape, observation_dtype,
                                           capacity + spare_frames(capacity))
        per_agent = (capacity, agents) if agents else (capacity,)
        self.actions = np.zeros((*per_agent, *action_shape), dtype=action_dtype)
        self.rewards = np.zeros(per_agent, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=bool)
        self.steps = np.zeros(capacity, dtype=np.int64)
        self.priorities = SumTree(capacity)
        self.max_priority = 1.0
        self.size = 0
        self._oldest = 0

    def __len__(self) -> int:
        return self.size

    def add(self, transitions: TransitionBatch) -> np.ndarray:
        """Store every row (last states required); their slots. Rows enter at the highest
        priority seen so far."""
        if transitions.last_states is None:
            raise ValueError("replay needs the transitions' last states")
        if len(transitions) > self.capacity:  # only the newest rows fit
            transitions = transitions[len(transitions) - self.capacity:]
        count = len(transitions)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        self._drop_oldest(self.size + count - self.capacity)
        slots = (self._oldest + self.size + np.arange(count)) % self.capacity
        self.observations.put(slots, transitions.states, transitions.last_states,
                              make_room=lambda: self._drop_oldest(1))
        self.actions[slots] = transitions.actions
        self.rewards[slots] = transitions.rewards
        self.dones[slots] = transitions.dones
        self.steps[slots] = transitions.steps
        self.priorities.update(slots, np.full(count, self.max_priority ** self.alpha))
        self.size += count
        return slots

    def _drop_oldest(self, count: int) -> bool:
        """Drop the ``count`` oldest transitions (as many as there are); False if none was."""
        count = min(count, self.size)
        if count <= 0:
            return False
        slots = (self._oldest + np.arange(count)) % self.capacity
        self.observations.release(slots)
        self.priorities.update(slots, np.zeros(count))
        self._oldest = int((self._oldest + count) % self.capacity)
        self.size -= count
        return True

    def _slots_oldest_first(self) -> np.ndarray:
        return (self._oldest + np.arange(self.size)) % self.capacity

    def sample(self, batch_size: int, beta: float, rng: np.random.Generator,
               by_priority: bool = True) -> tuple[TransitionBatch, np.ndarray, np.ndarray]:
        """``batch_size`` transitions, their slots and importance weights (all ones when
        uniform: not ``prioritized``, or not ``by_priority`` for now, while the priorities
        are still kept). Prioritized draws are stratified: one from each of ``batch_size``
        equal parts of the total priority."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if self.prioritized and by_priority:
            total = self.priorities.total
            bounds = np.arange(batch_size) * (total / batch_size)
            slots = self.priorities.find(bounds + rng.random(batch_size) * (total / batch_size))
            probabilities = self.priorities.get(slots) / total
            weights = (self.size * probabilities) ** -beta
            weights = (weights / weights.max()).astype(np.float32)
        else:
            slots = (self._oldest + rng.integers(0, self.size, size=batch_size)) % self.capacity
            weights = np.ones(batch_size, dtype=np.float32)
        return self.rows(slots), slots, weights

    def rows(self, slots: np.ndarray) -> TransitionBatch:
        """The transitions stored in ``slots``, observations rebuilt whole."""
        states, last_states = self.observations.get(slots)
        return TransitionBatch(states=states, actions=self.actions[slots], rewards=self.rewards[slots],
                               dones=self.dones[slots], steps=self.steps[slots], last_states=last_states)

    def state_dict(self) -> dict[str, torch.Tensor | float]:
        """The stored rows, oldest first, and their priorities, as tensors a checkpoint can hold."""
        slots = self._slots_oldest_first()
        columns = {name: torch.from_numpy(getattr(self, name)[slots])
                   for name in ("actions", "rewards", "dones", "steps")}
        return {**columns, **self.observations.state_dict(slots),
                "priorities": torch.from_numpy(self.priorities.get(slots)), "max_priority": self.max_priority}

    def load_state_dict(self, state: dict) -> None:
        """Put what ``state_dict`` saved into this empty buffer; past its capacity, the
        newest rows are kept."""
        if self.size:
            raise ValueError("a replay buffer is restored into an empty one")
        saved = len(state["actions"])
        rows = slice(max(0, saved - self.capacity), saved)
        for name in ("actions", "rewards", "dones", "steps"):
            column = state[name][rows].numpy()
            getattr(self, name)[:len(column)] = column
        self.observations.load_state_dict(state, rows)
        self.size = min(saved, self.capacity)
        self.priorities.update(np.arange(self.size), state["priorities"][rows].numpy())
        self.max_priority = float(state["max_priority"])

    def update_priorities(self, slots: np.ndarray, td_errors: np.ndarray) -> None:
        """Priority |TD error| + eps for each sampled slot; the running maximum follows."""
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64)) + self.priority_eps
        self.max_priority = max(self.max_priority, float(priorities.max()))
        if self.prioritized:
            self.priorities.update(slots, priorities ** self.alpha)
