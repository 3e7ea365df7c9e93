"""N-step first-last transitions from a vector env with SAME_STEP or NEXT_STEP autoreset.

Each env step starts one transition: (first state, action, discounted sum of up to n
rewards, last state, done, steps). A transition is emitted once n rewards are summed or
its episode ends, so no transition ever spans an autoreset. On termination the last state
is absent (done); on truncation the episode is cut, not over, so the transition keeps the
last real observation to bootstrap from, with ``steps`` < n telling the learner which
power of gamma to apply.

Given the values the acting process already computed for the observations it will act on
next, the accumulator records V(last state) instead of the last state: the learner then
needs no second forward pass, and the last states never travel between processes. With
those values it can also send lambda-returns over each window instead of n-step returns.
"""
from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode


@dataclass
class TransitionBatch:
    """A block of n-step transitions as numpy arrays, one row per transition.

    The bootstrap source is either ``last_states`` (the learner evaluates them) or
    ``last_values`` (V(last state) from the acting process); rows where ``dones`` is set
    hold zeros there and are never read. ``policy_versions`` is the optimizer step of the
    weights that chose each row's action, where the sender knows it.

    A rollout learner (PPO) also gets ``log_probs`` (of each row's action under the weights
    that chose it), ``env_ids`` (the env's index in its worker) and ``ends`` (the row's window
    reaches its episode's end, by termination or truncation): with them it puts each env's
    rows back into sequences; ``starts`` (the row is its episode's first step) tells a
    recurrent learner where the state was zeroed (``a3c.lib.recurrent``).
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    steps: np.ndarray
    last_states: np.ndarray | None = None
    last_values: np.ndarray | None = None
    policy_versions: np.ndarray | None = None
    log_probs: np.ndarray | None = None
    env_ids: np.ndarray | None = None
    ends: np.ndarray | None = None
    starts: np.ndarray | None = None
    extras: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    """Columns an algorithm declares beyond these (``a3c.lib.columns``), by name, a row each."""

    def __len__(self) -> int:
        return len(self.actions)

    def __getitem__(self, rows: slice | np.ndarray) -> TransitionBatch:
        """The rows ``rows`` picks (a slice, or indices in any order)."""
        return TransitionBatch.from_columns({name: column[rows] for name, column in self.columns().items()})

    def copy(self) -> TransitionBatch:
        """The same rows in arrays of its own (writable, whatever memory they came from)."""
        return TransitionBatch.from_columns({name: np.array(column) for name, column in self.columns().items()})

    def columns(self) -> dict[str, np.ndarray]:
        """Every column the batch has, by name, its ``extras`` among them."""
        named = {name: getattr(self, name) for name in NAMED_COLUMNS}
        return {name: column for name, column in named.items() if column is not None} | self.extras

    @staticmethod
    def from_columns(columns: Mapping[str, np.ndarray]) -> TransitionBatch:
        """The batch of ``columns()``: the named fields from their names, the rest as extras."""
        return TransitionBatch(**{name: column for name, column in columns.items() if name in NAMED_COLUMNS},
                               extras={name: column for name, column in columns.items() if name not in NAMED_COLUMNS})

    @staticmethod
    def concatenate(batches: Sequence[TransitionBatch]) -> TransitionBatch:
        """One batch of all rows; a column kept only where every part has it."""
        if len(batches) == 1:
            return batches[0]
        parts = [batch.columns() for batch in batches]
        shared = [name for name in parts[0] if all(name in part for part in parts)]
        return TransitionBatch.from_columns({name: np.concatenate([part[name] for part in parts]) for name in shared})


NAMED_COLUMNS = frozenset(field.name for field in dataclasses.fields(TransitionBatch)) - {"extras"}
"""The columns ``TransitionBatch`` names as fields; any other column is one of its extras."""


@dataclass(frozen=True)
class EpisodeResult:
    """The undiscounted return and length (in env steps) of one finished episode; in a
    multi-agent env the team's return (the sum over agents) and each agent's."""

    reward: float
    length: int
    agent_rewards: tuple[float, ...] = ()
    env_index: int = dataclasses.field(default=-1, compare=False)
    """Which of its worker's envs played it (-1 where not known); not part of the result."""
    custom_metrics: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """What the worker's ``on_episode_end`` callbacks recorded (``a3c.lib.episodes``)."""
    hist_data: Mapping[str, Sequence[float]] = dataclasses.field(default_factory=dict)


class NStepAccumulator:
    """Turns lockstep vector-env steps into n-step transitions and finished episodes.

    With NEXT_STEP autoreset (gymnasium's numpy-vectorised classic-control envs) an env
    that ended returns its real final observation, and spends its next step on the reset:
    that step's action is ignored and its reward is 0, so the accumulator skips it.

    A multi-agent vector env (``a3c.lib.multiagent.AgentSlots``) says in ``infos["active"]``
    which slots acted: an agent that finished before its env's episode ended is skipped.

    With ``clip_rewards`` the transitions carry the sign of each reward (-1, 0 or 1), as
    Atari agents are trained, while finished episodes still report the game's own score.

    With ``lam`` below 1 (which needs the values) each row's return is the lambda-return
    truncated at its window: ``G_k = r_k + gamma * ((1 - lam) * V(s_k+1) + lam * G_k+1)``, the
    window's last step taking its bootstrap value for ``G_k+1``. Its ``rewards`` column is
    that return less ``gamma ** steps`` times the bootstrap value, so a learner that adds
    the bootstrap back, as it does for n-step returns, trains on the lambda-return. At
    ``lam`` 1 this is the n-step return.
    """

    def __init__(self, num_envs: int, reward_steps: int, gamma: float,
                 autoreset_mode: AutoresetMode = AutoresetMode.SAME_STEP, clip_rewards: bool = False,
                 lam: float = 1.0):
        if autoreset_mode not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
            raise ValueError(f"autoreset mode {autoreset_mode} is not supported")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lambda {lam} is not in [0, 1]")
        self.reward_steps = reward_steps
        self.gamma = gamma
        self.lam = lam
        self.clip_rewards = clip_rewards
        self.next_step_reset = autoreset_mode == AutoresetMode.NEXT_STEP
        self._pending: list[deque] = [deque() for _ in range(num_envs)]
        self._episode_rewards = np.zeros(num_envs, dtype=np.float64)
        self._episode_lengths = np.zeros(num_envs, dtype=np.int64)
        self._resetting = np.zeros(num_envs, dtype=bool)

    def step(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        next_observations: np.ndarray,
        infos: Mapping[str, Any],
        next_values: np.ndarray | None = None,
        final_values: np.ndarray | None = None,
        policy_version: int | None = None,
        log_probs: np.ndarray | None = None,
        trained_rewards: np.ndarray | None = None,
        extras: Mapping[str, np.ndarray] | None = None,
        lives_lost: np.ndarray | None = None,
    ) -> tuple[TransitionBatch | None, list[EpisodeResult]]:
        """Record one vector step: ``observations`` were acted on, the rest came back.

        With SAME_STEP autoreset, ``next_observations[i]`` is already the next episode's
        first observation when env i ended; its real final observation is in
        ``infos["final_obs"][i]``. With ``next_values`` (V of ``next_observations``) and
        ``final_values`` (V of the final observations, read where env i was truncated) the
        batch carries ``last_values`` instead of ``last_states``. With NEXT_STEP autoreset
        the final observation is ``next_observations[i]`` and ``final_values`` is not needed.
        ``policy_version``, the optimizer step of the weights that chose ``actions``, labels
        each row those actions start (``policy_versions``), when given. ``log_probs`` of
        ``actions`` under those weights add the rollout columns (``log_probs``, ``env_ids``,
        ``ends``, ``starts``). ``trained_rewards``, where given, are what the rows sum instead of
        the rewards (scaled ones); the episodes' returns are the rewards'. ``extras``: columns
        of the caller's, an entry per env, each row taking its first step's (``extras``).
        ``lives_lost`` (Atari's ``--life-loss``): the envs whose step lost a life; their rows end
        there as at a termination, with no bootstrap, while the episode (the whole game, whose
        return the scores report) goes on.
        """
        with_values = next_values is not None
        if self.lam < 1.0 and not with_values:
            raise ValueError("lambda-returns need the values of the next observations")
        emitted: list[tuple] = []
        episodes: list[EpisodeResult] = []
        active = infos.get("active")
        cut = terminated if lives_lost is None else terminated | lives_lost  # no bootstrap past these
        for env_index, pending in enumerate(self._pending):
            if self._resetting[env_index] or (active is not None and not active[env_index]):
                continue
            reward = float(rewards[env_index])
            if trained_rewards is not None:
                trained_reward = float(trained_rewards[env_index])
            else:
                trained_reward = float(np.sign(reward)) if self.clip_rewards else reward
            log_prob = None if log_probs is None else float(log_probs[env_index])
            next_value = self._next_value(env_index, cut, truncated, next_values, final_values)
            extra = None if extras is None else {name: column[env_index] for name, column in extras.items()}
            pending.append((observations[env_index], actions[env_index], trained_reward,
                            policy_version, log_prob, next_value, self._episode_lengths[env_index] == 0, extra))
            self._episode_rewards[env_index] += reward
            self._episode_lengths[env_index] += 1
            if cut[env_index] or truncated[env_index]:
                if cut[env_index]:
                    bootstrap = None
                elif with_values:
                    bootstrap = next_value
                elif self.next_step_reset:
                    bootstrap = next_observations[env_index]
                else:
                    bootstrap = infos["final_obs"][env_index]
                while pending:
                    emitted.append(self._pop_first(pending, bootstrap, env_index, ends=True))
                if not (terminated[env_index] or truncated[env_index]):
                    continue  # a life lost: the game goes on
                episodes.append(EpisodeResult(
                    float(self._episode_rewards[env_index]), int(self._episode_lengths[env_index]),
                    env_index=env_index,
                ))
                self._episode_rewards[env_index] = 0.0
                self._episode_lengths[env_index] = 0
            elif len(pending) == self.reward_steps:
                bootstrap = next_value if with_values else next_observations[env_index]
                emitted.append(self._pop_first(pending, bootstrap, env_index, ends=False))
        if self.next_step_reset:
            self._resetting = np.logical_or(terminated, truncated)
        return _stack(emitted, with_values), episodes

    def _next_value(self, env_index: int, terminated: np.ndarray, truncated: np.ndarray,
                    next_values: np.ndarray | None, final_values: np.ndarray | None) -> float | None:
        """V of the state env ``env_index``'s step led to, None without values: 0 after a
        termination, V(real final observation) after a SAME_STEP truncation (whose next
        observation is already the next episode's), else V(next observation)."""
        if next_values is None:
            return None
        if terminated[env_index]:
            return 0.0
        if truncated[env_index] and not self.next_step_reset:
            return float(final_values[env_index])
        return float(next_values[env_index])

    def _pop_first(self, pending: deque, bootstrap: np.ndarray | float | None, env_index: int,
                   ends: bool) -> tuple:
        """The oldest pending transition; ``bootstrap`` is its last state or V(last state),
        None when its episode terminated."""
        steps = len(pending)
        if self.lam < 1.0:
            discounted = self._lambda_return(pending) - self.gamma ** steps * (bootstrap or 0.0)
        else:
            discounted = 0.0
            for power, entry in enumerate(pending):
                discounted += entry[2] * self.gamma ** power
        state, action, _, policy_version, log_prob, _, start, extra = pending.popleft()
        return state, action, discounted, bootstrap, steps, policy_version, log_prob, env_index, ends, start, extra

    def _lambda_return(self, pending: deque) -> float:
        """The lambda-return of the oldest pending step over the steps pending; each step
        holds V of the state it led to (0 after a termination), the last one's being the
        bootstrap value."""
        following = pending[-1][5]
        for _, _, reward, _, _, next_value, _, _ in reversed(pending):
            following = reward + self.gamma * ((1.0 - self.lam) * next_value + self.lam * following)
        return following


def _stack(emitted: list[tuple], with_values: bool) -> TransitionBatch | None:
    if not emitted:
        return None
    states = np.stack([row[0] for row in emitted])
    dones = np.array([row[3] is None for row in emitted], dtype=bool)
    last_states = last_values = None
    if with_values:
        last_values = np.array([0.0 if row[3] is None else row[3] for row in emitted], np.float32)
    else:
        last_states = np.zeros_like(states)
        for index, row in enumerate(emitted):
            if row[3] is not None:
                last_states[index] = row[3]
    return TransitionBatch(
        states=states,
        actions=np.array([row[1] for row in emitted]),
        rewards=np.array([row[2] for row in emitted], dtype=np.float32),
        dones=dones,
        steps=np.array([row[4] for row in emitted], dtype=np.int64),
        last_states=last_states,
        last_values=last_values,
        policy_versions=(None if emitted[0][5] is None
                         else np.array([row[5] for row in emitted], dtype=np.int64)),
        **({} if emitted[0][6] is None else {
            "log_probs": np.array([row[6] for row in emitted], dtype=np.float32),
            "env_ids": np.array([row[7] for row in emitted], dtype=np.int64),
            "ends": np.array([row[8] for row in emitted], dtype=bool),
            "starts": np.array([row[9] for row in emitted], dtype=bool)}),
        extras={} if emitted[0][10] is None else {
            name: np.stack([row[10][name] for row in emitted]) for name in emitted[0][10]},
    )
