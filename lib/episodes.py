"""Callbacks at every step, in the workers: each env's episode in progress as an ``Episode``
(RLlib's: ``user_data``, ``custom_metrics``, ``hist_data``, the last observation, length and
return) and ``EpisodeCallbacks``, which calls the user's ``on_episode_start``,
``on_episode_step`` and ``on_episode_end`` with keyword arguments (``episode``, ``env``,
``env_index``, ``worker_index``). What ``on_episode_end`` leaves in ``custom_metrics`` and
``hist_data`` travels to the learner with the finished episode. An exception in a callback
becomes ``CallbackError``, which ends the run rather than restarting the worker.
"""
from __future__ import annotations

import random
import traceback
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from a3c.lib.hook_call import call_hook


class CallbackError(RuntimeError):
    """A user's callback raised in a worker; the message holds its traceback."""


class WorkerContext:
    """What the hooks' ``worker`` keyword gives (RLlib passes its rollout worker): the
    worker's index."""

    def __init__(self, worker_index: int):
        self.worker_index = worker_index


class Episode:
    """One env's episode in progress, as the child-side callbacks see it."""

    def __init__(self, env_index: int, observation: Any):
        self.episode_id = random.getrandbits(63)
        """Unique over the run, as RLlib's (a random number)."""
        self.env_index = env_index
        self.user_data: dict[str, Any] = {}
        self.custom_metrics: dict[str, float] = {}
        self.hist_data: dict[str, list[float]] = {}
        self.length = 0
        self.total_reward = 0.0
        self.last_observation = observation
        self.last_action: Any = None
        self.last_reward: float | None = None
        self.last_info: dict[str, Any] = {}
        self.agent_rewards: dict[str, float] = {}
        """A multi-agent env's: each agent's return so far (``total_reward`` is the team's)."""

    def last_observation_for(self, agent_id: Any = None) -> Any:
        """RLlib's spelling of ``last_observation``; on a multi-agent env, ``agent_id``'s own
        (the episode's ``last_observation`` is then a dict by agent, of those that acted)."""
        return _for(self.last_observation, agent_id)

    def last_raw_obs_for(self, agent_id: Any = None) -> Any:
        """The env's own last observation: the same as ``last_observation_for``, since the
        hooks see observations before any preprocessing."""
        return self.last_observation_for(agent_id)

    def last_action_for(self, agent_id: Any = None) -> Any:
        return _for(self.last_action, agent_id)

    def last_info_for(self, agent_id: Any = None) -> dict[str, Any]:
        """The ``info`` of the env's last step (an agent's, on a multi-agent env: its reward)."""
        return _for(self.last_info, agent_id)


def _for(value: Any, agent_id: Any) -> Any:
    """``value[agent_id]`` where ``agent_id`` is given and ``value`` is by agent, else ``value``."""
    return value[agent_id] if agent_id is not None and isinstance(value, dict) and agent_id in value else value


class SampleBatchView:
    """A worker's batch of rows as RLlib's SampleBatch reads: ``batch["rewards"]``,
    ``["actions"]``, ``["obs"]``, ``["new_obs"]``, ``["dones"]`` and ``count``; assigning a
    column (``batch["rewards"] = shaped``) changes the rows before they are sent."""

    COLUMNS: ClassVar[dict[str, str]] = {"obs": "states", "actions": "actions", "rewards": "rewards",
                                         "dones": "dones", "terminateds": "dones", "new_obs": "last_states"}

    def __init__(self, batch: Any, rows: np.ndarray | None = None):
        self._batch = batch
        self._rows = slice(None) if rows is None else rows
        """The rows it shows (one agent's, say); an assignment writes them in the batch."""

    @property
    def count(self) -> int:
        return len(self._batch.rewards[self._rows])

    def __getitem__(self, name: str) -> Any:
        return getattr(self._batch, self.COLUMNS[name])[self._rows]

    def __setitem__(self, name: str, values: Any) -> None:
        column = getattr(self._batch, self.COLUMNS[name])
        shape = column[self._rows].shape
        column[self._rows] = np.asarray(values, dtype=column.dtype).reshape(shape)

    def keys(self) -> list[str]:
        return [name for name, field in self.COLUMNS.items() if getattr(self._batch, field) is not None]


class EpisodeCallbacks:
    """Runs the child-side hooks over ``num_envs`` envs; ``env`` is the worker's vector env."""

    def __init__(self, callbacks: Sequence[Any], env: Any, worker_index: int):
        self.callbacks = list(callbacks)
        self.env = env
        self.worker_index = worker_index
        self.worker = WorkerContext(worker_index)
        self.episodes: dict[int, Episode] = {}

    def _call(self, hook: str, episode: Episode) -> None:
        for callback in self.callbacks:
            try:
                call_hook(getattr(callback, hook), {
                    "episode": episode, "env": self.env, "base_env": self.env, "env_index": episode.env_index,
                    "worker_index": self.worker_index, "worker": self.worker, "policies": None})
            except Exception as exc:
                raise CallbackError(f"{type(callback).__name__}.{hook} raised in worker {self.worker_index}:\n"
                                    f"{traceback.format_exc()}") from exc

    def start(self, env_index: int, observation: Any) -> None:
        self.episodes[env_index] = episode = Episode(env_index, observation)
        self._call("on_episode_start", episode)

    def step(self, env_index: int, observation: Any, action: Any, reward: float, info: dict[str, Any]) -> None:
        episode = self.episodes[env_index]
        episode.length += 1
        episode.total_reward += reward
        episode.last_observation, episode.last_action, episode.last_reward = observation, action, reward
        episode.last_info = info
        self._call("on_episode_step", episode)

    def postprocess(self, batch: Any, parts: Sequence[tuple[np.ndarray, Any, str]] | None = None) -> None:
        """``on_postprocess_trajectory``, then ``on_sample_end``, on a batch of rows before it
        is sent, as RLlib's rollout workers call them (``postprocessed_batch`` and ``samples``:
        a ``SampleBatchView`` whose columns may be assigned). ``parts``: the batch's rows by
        agent, (rows, agent id, policy id), each postprocessed apart, as RLlib does."""
        calls = [("on_postprocess_trajectory", {
            "worker": self.worker, "episode": None, "agent_id": agent_id, "policy_id": policy_id, "policies": None,
            "postprocessed_batch": SampleBatchView(batch, rows), "original_batches": {}})
            for rows, agent_id, policy_id in (parts or [(None, 0, "default_policy")])]
        for hook, arguments in (*calls, ("on_sample_end", {"worker": self.worker, "samples": SampleBatchView(batch)})):
            for callback in self.callbacks:
                try:
                    call_hook(getattr(callback, hook), arguments)
                except Exception as exc:
                    raise CallbackError(f"{type(callback).__name__}.{hook} raised in worker "
                                        f"{self.worker_index}:\n{traceback.format_exc()}") from exc

    def end(self, env_index: int) -> Episode:
        """Call ``on_episode_end``; the finished episode, whose metrics the learner gets."""
        episode = self.episodes.pop(env_index)
        self._call("on_episode_end", episode)
        return episode


class TeamEpisodeCallbacks:
    """The child-side hooks on a multi-agent env (``a3c.lib.multiagent.AgentSlots``, a slot per
    agent of each env): one episode per env over all its agents, as RLlib's multi-agent
    episode. Its last observation, action and info are dicts by agent (of those that acted at
    the step; ``last_observation_for(agent_id)``), its reward the team's, ``agent_rewards``
    each agent's return so far; ``env_index`` is the env's. ``on_postprocess_trajectory`` runs
    on each agent's rows apart, with its ``agent_id`` and ``policy_id``."""

    def __init__(self, callbacks: Sequence[Any], env: Any, worker_index: int, observations: np.ndarray,
                 policy_of: Callable[[int], str] | None = None):
        self.hooks = EpisodeCallbacks(callbacks, env, worker_index)
        self.policy_of = policy_of or (lambda agent: "default_policy")
        """Agent ``i``'s policy's name (the acting net's mapping, ``--policies``)."""
        self.names = env.joint_envs[0].spaces.agents
        self.size = env.joint_envs[0].spaces.observation_size
        for index in range(len(env.joint_envs)):
            self.hooks.start(index, self._by_agent(observations, index, np.ones(len(self.names), bool)))

    def _by_agent(self, rows: np.ndarray, index: int, acted: np.ndarray) -> dict[str, np.ndarray]:
        """Each agent's own observation out of its slot's row (past any global state, before
        its one-hot index), for the agents that ``acted``."""
        agents = len(self.names)
        own = rows[index * agents:(index + 1) * agents, -(self.size + agents):-agents]
        return {name: own[slot] for slot, name in enumerate(self.names) if acted[slot]}

    def step(self, actions: np.ndarray, rewards: np.ndarray, next_observations: np.ndarray,
             infos: dict) -> dict[int, Episode]:
        """The hooks for this step of every env; the episodes that ended, by env."""
        agents, ended = len(self.names), {}
        for index, over in enumerate(infos["team_over"]):
            rows = slice(index * agents, (index + 1) * agents)
            acted = infos["active"][rows]
            episode = self.hooks.episodes[index]
            agent_rewards = {name: float(reward) for name, reward, took in zip(self.names, rewards[rows], acted) if took}
            for name, reward in agent_rewards.items():
                episode.agent_rewards[name] = episode.agent_rewards.get(name, 0.0) + reward
            self.hooks.step(index, self._by_agent(infos["final_obs"], index, acted),
                            {name: actions[rows][slot] for slot, name in enumerate(self.names) if acted[slot]},
                            sum(agent_rewards.values()), {name: {"reward": reward} for name, reward in agent_rewards.items()})
            if over:
                ended[index] = self.hooks.end(index)
                self.hooks.start(index, self._by_agent(next_observations, index, np.ones(agents, bool)))
        return ended

    def postprocess(self, batch: Any) -> None:
        """The batch's rows by agent (each row ends with its agent's one-hot index), each
        postprocessed apart, then the whole batch's ``on_sample_end``."""
        owners = np.argmax(batch.states[:, -len(self.names):], axis=1)
        self.hooks.postprocess(batch, [(np.flatnonzero(owners == slot), name, self.policy_of(slot))
                                       for slot, name in enumerate(self.names) if (owners == slot).any()])
