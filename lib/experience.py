"""N-step first-last transitions from a vector env with SAME_STEP autoreset.

Each env step starts one transition: (first state, action, discounted sum of up to n
rewards, last state, done, steps). A transition is emitted once n rewards are summed or
its episode ends, so no transition ever spans an autoreset. On termination the last state
is absent (done); on truncation the episode is cut, not over, so the transition keeps the
last real observation to bootstrap from, with ``steps`` < n telling the learner which
power of gamma to apply.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class TransitionBatch:
    """A block of n-step transitions as numpy arrays, one row per transition.

    ``last_states`` rows where ``dones`` is set are zeros and never read.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    last_states: np.ndarray
    dones: np.ndarray
    steps: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    def __getitem__(self, rows: slice) -> TransitionBatch:
        return TransitionBatch(
            self.states[rows], self.actions[rows], self.rewards[rows],
            self.last_states[rows], self.dones[rows], self.steps[rows],
        )

    @staticmethod
    def concatenate(batches: Sequence[TransitionBatch]) -> TransitionBatch:
        if len(batches) == 1:
            return batches[0]
        return TransitionBatch(*(
            np.concatenate([getattr(batch, name) for batch in batches])
            for name in ("states", "actions", "rewards", "last_states", "dones", "steps")
        ))


@dataclass(frozen=True)
class EpisodeResult:
    """The undiscounted return and length (in env steps) of one finished episode."""

    reward: float
    length: int


class NStepAccumulator:
    """Turns lockstep vector-env steps into n-step transitions and finished episodes."""

    def __init__(self, num_envs: int, reward_steps: int, gamma: float):
        self.reward_steps = reward_steps
        self.gamma = gamma
        self._pending: list[deque] = [deque() for _ in range(num_envs)]
        self._episode_rewards = np.zeros(num_envs, dtype=np.float64)
        self._episode_lengths = np.zeros(num_envs, dtype=np.int64)

    def step(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        next_observations: np.ndarray,
        infos: Mapping[str, Any],
    ) -> tuple[TransitionBatch | None, list[EpisodeResult]]:
        """Record one vector step: ``observations`` were acted on, the rest came back.

        With SAME_STEP autoreset, ``next_observations[i]`` is already the next episode's
        first observation when env i ended; its real final observation is in
        ``infos["final_obs"][i]``.
        """
        emitted: list[tuple] = []
        episodes: list[EpisodeResult] = []
        for env_index, pending in enumerate(self._pending):
            reward = float(rewards[env_index])
            pending.append((observations[env_index], int(actions[env_index]), reward))
            self._episode_rewards[env_index] += reward
            self._episode_lengths[env_index] += 1
            if terminated[env_index] or truncated[env_index]:
                last_state = None if terminated[env_index] else infos["final_obs"][env_index]
                while pending:
                    emitted.append(self._pop_first(pending, last_state))
                episodes.append(EpisodeResult(
                    float(self._episode_rewards[env_index]), int(self._episode_lengths[env_index])
                ))
                self._episode_rewards[env_index] = 0.0
                self._episode_lengths[env_index] = 0
            elif len(pending) == self.reward_steps:
                emitted.append(self._pop_first(pending, next_observations[env_index]))
        return _stack(emitted), episodes

    def _pop_first(self, pending: deque, last_state: np.ndarray | None) -> tuple:
        discounted = 0.0
        for power, (_, _, reward) in enumerate(pending):
            discounted += reward * self.gamma ** power
        steps = len(pending)
        state, action, _ = pending.popleft()
        return state, action, discounted, last_state, steps


def _stack(emitted: list[tuple]) -> TransitionBatch | None:
    if not emitted:
        return None
    states = np.stack([row[0] for row in emitted])
    dones = np.array([row[3] is None for row in emitted], dtype=bool)
    last_states = np.zeros_like(states)
    for index, row in enumerate(emitted):
        if row[3] is not None:
            last_states[index] = row[3]
    return TransitionBatch(
        states=states,
        actions=np.array([row[1] for row in emitted], dtype=np.int64),
        rewards=np.array([row[2] for row in emitted], dtype=np.float32),
        last_states=last_states,
        dones=dones,
        steps=np.array([row[4] for row in emitted], dtype=np.int64),
    )
