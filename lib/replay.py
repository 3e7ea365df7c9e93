"""Experience replay for off-policy learners: a ring of n-step transitions, sampled
uniformly or in proportion to priority ** alpha through a sum-tree (prioritized replay,
Schaul et al. 2016), with importance-sampling weights that correct for the bias.

The ring holds the same columns the actors send (``TransitionBatch``) with the last state
kept, since a Q-learning target is computed from it at training time by the learner's
current networks. New transitions enter at the highest priority seen so far, so each is
sampled soon at least once.
"""
from __future__ import annotations

import numpy as np
import torch

from lib.experience import TransitionBatch


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


class ReplayBuffer:
    """A ring of ``capacity`` n-step transitions; the oldest is overwritten when full.

    ``alpha`` = 0 (or ``prioritized=False``) samples uniformly; otherwise slot i is drawn
    with probability p_i ** alpha / sum_j p_j ** alpha, and ``sample`` returns the
    importance-sampling weights (N * P(i)) ** -beta divided by the batch's largest.
    """

    def __init__(self, capacity: int, observation_shape: tuple[int, ...], observation_dtype: str,
                 alpha: float = 0.6, prioritized: bool = True, priority_eps: float = 1e-6):
        self.capacity = capacity
        self.alpha = alpha if prioritized else 0.0
        self.prioritized = prioritized and alpha > 0
        self.priority_eps = priority_eps
        self.states = np.zeros((capacity, *observation_shape), dtype=observation_dtype)
        self.last_states = np.zeros((capacity, *observation_shape), dtype=observation_dtype)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=bool)
        self.steps = np.zeros(capacity, dtype=np.int64)
        self.priorities = SumTree(capacity)
        self.max_priority = 1.0
        self.size = 0
        self._next = 0

    def __len__(self) -> int:
        return self.size

    def add(self, transitions: TransitionBatch) -> np.ndarray:
        """Store every row (last states required); their slots. Rows enter at the highest
        priority seen so far."""
        if transitions.last_states is None:
            raise ValueError("replay needs the transitions' last states")
        count = len(transitions)
        slots = (self._next + np.arange(count)) % self.capacity
        if count > self.capacity:  # only the newest rows fit
            transitions, slots = transitions[count - self.capacity:], slots[count - self.capacity:]
        self.states[slots] = transitions.states
        self.last_states[slots] = transitions.last_states
        self.actions[slots] = transitions.actions
        self.rewards[slots] = transitions.rewards
        self.dones[slots] = transitions.dones
        self.steps[slots] = transitions.steps
        self.priorities.update(slots, np.full(len(slots), self.max_priority ** self.alpha))
        self._next = int((self._next + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)
        return slots

    def sample(self, batch_size: int, beta: float,
               rng: np.random.Generator) -> tuple[TransitionBatch, np.ndarray, np.ndarray]:
        """``batch_size`` transitions, their slots and importance weights (all ones when
        uniform). Prioritized draws are stratified: one from each of ``batch_size`` equal
        parts of the total priority."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if self.prioritized:
            total = self.priorities.total
            bounds = np.arange(batch_size) * (total / batch_size)
            slots = self.priorities.find(bounds + rng.random(batch_size) * (total / batch_size))
            probabilities = self.priorities.get(slots) / total
            weights = (self.size * probabilities) ** -beta
            weights = (weights / weights.max()).astype(np.float32)
        else:
            slots = rng.integers(0, self.size, size=batch_size)
            weights = np.ones(batch_size, dtype=np.float32)
        batch = TransitionBatch(states=self.states[slots], actions=self.actions[slots],
                                rewards=self.rewards[slots], dones=self.dones[slots],
                                steps=self.steps[slots], last_states=self.last_states[slots])
        return batch, slots, weights

    def state_dict(self) -> dict[str, torch.Tensor | int | float]:
        """The stored rows and their priorities, as tensors a checkpoint can hold."""
        columns = {name: torch.from_numpy(getattr(self, name)[:self.size].copy())
                   for name in ("states", "last_states", "actions", "rewards", "dones", "steps")}
        return {**columns, "priorities": torch.from_numpy(self.priorities.get(np.arange(self.size))),
                "next": self._next, "max_priority": self.max_priority}

    def load_state_dict(self, state: dict) -> None:
        """Put back what ``state_dict`` saved; rows past this buffer's capacity are dropped."""
        size = min(len(state["actions"]), self.capacity)
        for name in ("states", "last_states", "actions", "rewards", "dones", "steps"):
            getattr(self, name)[:size] = state[name][:size].numpy()
        self.priorities.update(np.arange(size), state["priorities"][:size].numpy())
        self.size, self._next = size, int(state["next"]) % self.capacity
        self.max_priority = float(state["max_priority"])

    def update_priorities(self, slots: np.ndarray, td_errors: np.ndarray) -> None:
        """Priority |TD error| + eps for each sampled slot; the running maximum follows."""
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64)) + self.priority_eps
        self.max_priority = max(self.max_priority, float(priorities.max()))
        if self.prioritized:
            self.priorities.update(slots, priorities ** self.alpha)
