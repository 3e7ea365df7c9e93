"""Several agents in one env: the two-step game, PettingZoo parallel envs, and the two views
the trainer takes of them.

- ``JointEnv`` is the whole env as one gymnasium env: each observation stacks every agent's
  observation (with the agent's one-hot index appended, so one net can tell them apart), an
  action is one per agent, the reward is the team's (the sum over agents). ``play``,
  ``evaluate`` and MADDPG's joint transitions use it.
- ``AgentSlots`` steps several ``JointEnv`` in lockstep as a vector env with one slot per
  (env, agent): the workers' actor, the n-step accumulator and the actor-critic learners
  then treat each agent as an env of their own, and a net that routes rows by the one-hot
  index (``a3c.lib.policies``) gives each policy its own agents' rows only.

An agent that finishes before the others keeps its slot idle (``infos["active"]``) until its
env ends; agents whose observation or action spaces differ are refused, in one line.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from a3c.lib.experience import EpisodeResult, TransitionBatch
from a3c.lib.observations import MASK_KEY, flattened, mask_columns

TWO_STEP_GAME = "TwoStepGame"


class MultiAgentEnvError(ValueError):
    """A multi-agent env the trainer cannot use; the message is one line."""


class TwoStepGame:
    """The two-step matrix game of the QMIX paper, as a PettingZoo parallel env.

    Both agents observe the state, one-hot of (1, 2A, 2B). In state 1 the first agent's action
    picks 2A (0) or 2B (1) and nothing is paid; in 2A every joint action pays 7; in 2B the
    joint actions pay 0 (both 0), 1 (they differ) or 8 (both 1), and the episode ends. Each
    agent receives half of the team's reward. ``with_state`` (QMIX's variant): each agent's
    observation is a Dict of its own observation ("obs") and the global state ("state"),
    here both the same one-hot, as RLlib's example has it.
    """

    metadata: ClassVar[dict[str, str]] = {"name": TWO_STEP_GAME}
    REWARD_THRESHOLD = 7.9
    """The team's mean that only the coordinated optimum (8) reaches."""
    possible_agents = ("agent_0", "agent_1")
    PAYOFF_2B: ClassVar[np.ndarray] = np.array([[0.0, 1.0], [1.0, 8.0]])

    def __init__(self, with_state: bool = False) -> None:
        self.agents: list[str] = []
        self._state = 0
        self.with_state = with_state
        one_hot = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
        space = gym.spaces.Dict({"obs": one_hot, "state": one_hot}) if with_state else one_hot
        self.observation_spaces = {agent: space for agent in self.possible_agents}
        self.action_spaces = {agent: gym.spaces.Discrete(2) for agent in self.possible_agents}

    @property
    def unwrapped(self) -> TwoStepGame:
        return self

    def observation_space(self, agent: str) -> gym.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        """The global state, one-hot of (1, 2A, 2B)."""
        state = np.zeros(3, dtype=np.float32)
        state[self._state] = 1.0
        return state

    def _observations(self) -> dict[str, Any]:
        state = self.state()
        if self.with_state:
            return {agent: {"obs": state.copy(), "state": state.copy()} for agent in self.possible_agents}
        return {agent: state.copy() for agent in self.possible_agents}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        self._state = 0
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        first, second = int(actions["agent_0"]), int(actions["agent_1"])
        if self._state == 0:
            self._state, team_reward, done = 1 + first, 0.0, False
        else:
            team_reward = 7.0 if self._state == 1 else float(self.PAYOFF_2B[first, second])
            done = True
        observations = self._observations()
        rewards = {agent: team_reward / 2 for agent in self.agents}
        terminations = {agent: done for agent in self.agents}
        truncations = {agent: False for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        pass




def reward_threshold(env_id: str) -> float | None:
    """The team's mean-100 that solves a multi-agent env, where one is known."""
    return TwoStepGame.REWARD_THRESHOLD if env_id == TWO_STEP_GAME else None


def make_parallel_env(env_id: str) -> Any:
    """A fresh PettingZoo parallel env (discrete actions where the env offers both)."""
    if env_id == TWO_STEP_GAME:
        return TwoStepGame()
    maker: Callable[..., Any] = importlib.import_module(env_id).parallel_env
    try:
        return maker(continuous_actions=False)
    except TypeError:  # an env without the choice
        return maker()


def env_agents(env_id: str) -> tuple[str, ...]:
    """The agent ids of a multi-agent env, in order."""
    parallel_env = make_parallel_env(env_id)
    try:
        return tuple(parallel_env.possible_agents)
    finally:
        parallel_env.close()


@dataclass(frozen=True)
class AgentSpaces:
    """The agents of an env and the one observation and action space they all share."""

    agents: tuple[str, ...]
    observation_size: int
    n_actions: int
    observation_space: gym.Space | None = None
    """The agents' Dict space where their observations are flattened (one with an
    ``action_mask``: RLlib's and PettingZoo's convention); None for a flat Box."""
    mask: tuple[int, int] | None = None
    """Where the ``action_mask`` lies in an agent's flattened observation: (offset, size)."""


def agent_spaces(env_id: str, parallel_env: Any) -> AgentSpaces:
    """What every agent observes and does; MultiAgentEnvError when they differ, or when the
    spaces are not flat Boxes and Discrete actions."""
    agents = tuple(parallel_env.possible_agents)
    observation_spaces = [parallel_env.observation_space(agent) for agent in agents]
    action_spaces = [parallel_env.action_space(agent) for agent in agents]
    if any(space != observation_spaces[0] for space in observation_spaces[1:]) or any(
            space != action_spaces[0] for space in action_spaces[1:]):
        raise MultiAgentEnvError(f"{env_id}'s agents differ in observation or action spaces; every agent "
                                 f"must observe and act alike here")
    observation_space, action_space = observation_spaces[0], action_spaces[0]
    if not isinstance(action_space, gym.spaces.Discrete):
        raise MultiAgentEnvError(f"{env_id} has {type(action_space).__name__} actions; only Discrete "
                                 f"actions are supported")
    if isinstance(observation_space, gym.spaces.Dict) and MASK_KEY in observation_space.spaces:
        mask = mask_columns(observation_space)
        if mask[1] != action_space.n:
            raise MultiAgentEnvError(f"{env_id}'s action_mask has {mask[1]} values; it needs one per action ({action_space.n})")
        return AgentSpaces(agents, gym.spaces.flatdim(observation_space), int(action_space.n), observation_space, mask)
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise MultiAgentEnvError(f"{env_id}'s agents observe {observation_space}; the nets need a flat "
                                 f"vector, or a Dict with an action_mask")
    return AgentSpaces(agents, int(observation_space.shape[0]), int(action_space.n))


def with_agent_index(observations: np.ndarray) -> np.ndarray:
    """(agents, size) observations with each agent's one-hot index appended:
    (agents, size + agents), float32."""
    count = len(observations)
    return np.concatenate([np.asarray(observations, np.float32), np.eye(count, dtype=np.float32)], axis=1)


def agent_rows(observations: Mapping[str, np.ndarray], agents: Sequence[str]) -> np.ndarray:
    """Some agents' own observations as the rows a multi-agent net takes (each with its
    agent's one-hot index), in the mapping's order; ValueError for an unknown agent."""
    unknown = [agent for agent in observations if agent not in agents]
    if unknown:
        raise ValueError(f"no agent {unknown[0]!r}; the env's agents are {', '.join(agents)}")
    index = np.eye(len(agents), dtype=np.float32)[[agents.index(agent) for agent in observations]]
    own = np.stack([np.asarray(observation, np.float32) for observation in observations.values()])
    return np.concatenate([own, index], axis=1)


class JointEnv(gym.Env):
    """A PettingZoo parallel env as one gymnasium env over all its agents.

    Observation: (agents, size + agents), each agent's own with its one-hot index; an agent
    that has finished observes zeros (and its index). Action: one per agent, in
    ``possible_agents`` order; a finished agent's is ignored. Reward: the team's, the sum of
    the agents'; ``info`` holds ``agent_rewards``, ``agent_done`` (finished at this step)
    and ``active`` (still acting before this step). The episode ends when every agent has.
    """

    def __init__(self, env_id: str):
        self.env_id = env_id
        self.parallel_env = make_parallel_env(env_id)
        self.spaces = agent_spaces(env_id, self.parallel_env)
        count = len(self.spaces.agents)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (count, self.spaces.observation_size + count),
                                                np.float32)
        self.action_space = gym.spaces.MultiDiscrete([self.spaces.n_actions] * count)
        self._active = np.zeros(count, dtype=bool)

    def _joint(self, observations: dict[str, np.ndarray], acted: np.ndarray) -> np.ndarray:
        """The agents that ``acted`` observe what the env gave them (a final observation,
        for one that has just finished); the others zeros."""
        joint = np.zeros((len(self.spaces.agents), self.spaces.observation_size), np.float32)
        for index, agent in enumerate(self.spaces.agents):
            if acted[index] and agent in observations:
                joint[index] = flattened(self.spaces.observation_space, observations[agent])
        return with_agent_index(joint)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        observations, _ = self.parallel_env.reset(seed=seed, options=options)
        self._active[:] = True
        return self._joint(observations, self._active), {}

    def step(self, action: Sequence[int]) -> tuple[np.ndarray, float, bool, bool, dict]:
        agents = self.spaces.agents
        active = self._active.copy()
        chosen = {agent: int(action[index]) for index, agent in enumerate(agents) if active[index]}
        observations, rewards, terminations, truncations, _ = self.parallel_env.step(chosen)
        agent_rewards = np.array([float(rewards.get(agent, 0.0)) for agent in agents], np.float32)
        terminated = np.array([bool(terminations.get(agent, False)) for agent in agents])
        truncated = np.array([bool(truncations.get(agent, False)) for agent in agents])
        done = active & (terminated | truncated)
        self._active &= ~done
        joint = self._joint(observations, active)
        over = not self._active.any() or not self.parallel_env.agents
        info = {"agent_rewards": agent_rewards, "agent_done": done, "active": active,
                "agent_truncated": active & truncated & ~terminated}
        cut = over and bool(info["agent_truncated"].any())
        return joint, float(agent_rewards.sum()), over and not cut, cut, info

    def close(self) -> None:
        self.parallel_env.close()


class AgentSlots(VectorEnv):
    """``num_joint`` ``JointEnv`` stepped in lockstep, one vector slot per (env, agent): slot
    ``env * agents + agent``. SAME_STEP autoreset, with the final observations in
    ``infos["final_obs"]``.

    A slot's reward is its agent's; it terminates (or is truncated) at the step its agent
    finishes. Until its env ends it is idle: ``infos["active"]`` is False there, its
    observation zeros, its action ignored. ``infos["team_episodes"]`` lists the episodes
    that ended at this step (``env_index``: their env's) and ``infos["team_over"]`` says which
    envs ended. With ``global_state`` each slot's observation starts with every
    agent's own observation of its env side by side (``with_global_state``), for a critic
    that sees them all.
    """

    def __init__(self, env_id: str, num_joint: int, global_state: bool = False):
        self.joint_envs = [JointEnv(env_id) for _ in range(num_joint)]
        self.global_state = global_state
        self.agents = len(self.joint_envs[0].spaces.agents)
        self.num_envs = num_joint * self.agents
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
        spaces = self.joint_envs[0].spaces
        width = observation_width(spaces, global_state)
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)
        self.single_action_space = gym.spaces.Discrete(self.joint_envs[0].spaces.n_actions)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._returns = np.zeros((num_joint, self.agents))
        self._lengths = np.zeros(num_joint, dtype=np.int64)

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict | None = None) -> tuple[np.ndarray, dict]:
        seeds = [None if seed is None else seed + index for index in range(len(self.joint_envs))]
        observations = [self._rows(env.reset(seed=env_seed)[0]) for env, env_seed in zip(self.joint_envs, seeds)]
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return np.concatenate(observations), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = np.asarray(actions).reshape(len(self.joint_envs), self.agents)
        observations, final_observations, rewards, terminated, truncated, active = [], [], [], [], [], []
        episodes, over_now = [], []
        for index, env in enumerate(self.joint_envs):
            joint, _, over, cut, info = env.step(actions[index])
            self._returns[index] += info["agent_rewards"]
            self._lengths[index] += 1
            final_observations.append(self._rows(joint))
            over_now.append(over or cut)
            if over or cut:
                episodes.append(EpisodeResult(float(self._returns[index].sum()), int(self._lengths[index]),
                                              tuple(float(value) for value in self._returns[index]), env_index=index))
                self._returns[index] = 0.0
                self._lengths[index] = 0
                joint, _ = env.reset()
            observations.append(self._rows(joint))
            rewards.append(info["agent_rewards"])
            terminated.append(info["agent_done"] & ~info["agent_truncated"])
            truncated.append(info["agent_truncated"])
            active.append(info["active"])
        infos = {"final_obs": np.concatenate(final_observations), "active": np.concatenate(active),
                 "team_episodes": episodes, "team_over": np.array(over_now)}
        return (np.concatenate(observations), np.concatenate(rewards), np.concatenate(terminated),
                np.concatenate(truncated), infos)

    def _rows(self, joint: np.ndarray) -> np.ndarray:
        return with_global_state(joint, self.agents) if self.global_state else joint

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.joint_envs:
            env.close()


def observation_width(spaces: AgentSpaces, global_state: bool) -> int:
    """A slot's observation: its agent's own and its one-hot index, after every agent's own
    observation where ``global_state``."""
    own = spaces.observation_size + len(spaces.agents)
    return own + len(spaces.agents) * spaces.observation_size if global_state else own


def with_global_state(joint: np.ndarray, agents: int) -> np.ndarray:
    """(agents, size + agents) rows, each with every agent's own observation (the first
    ``size`` of each row, side by side) put in front."""
    size = joint.shape[1] - agents
    everyone = np.broadcast_to(joint[:, :size].reshape(1, -1), (len(joint), agents * size))
    return np.concatenate([everyone, joint], axis=1)


def joint_transitions(batch: TransitionBatch, agents: int) -> TransitionBatch:
    """Per-agent one-step rows of every agent of each env (agent order, as ``AgentSlots``
    emits them when all act) as one row per env step: states and last states (N, agents,
    size), actions and rewards (N, agents), the rest per step. MultiAgentEnvError when an
    agent finished before its env's episode ended, which leaves a step without its row."""
    order = np.tile(np.arange(agents), max(1, len(batch) // agents))
    if len(batch) % agents or not np.array_equal(batch.states[:, -agents:].argmax(axis=1), order):
        raise MultiAgentEnvError("maddpg needs every agent to act until its env's episode ends; an agent "
                                 "finished early")
    steps = len(batch) // agents

    def joint(column: np.ndarray | None) -> np.ndarray | None:
        return None if column is None else column.reshape(steps, agents, *column.shape[1:])

    return TransitionBatch(
        states=joint(batch.states), actions=joint(batch.actions), rewards=joint(batch.rewards),
        dones=batch.dones[::agents].copy(), steps=batch.steps[::agents].copy(), last_states=joint(batch.last_states),
        policy_versions=None if batch.policy_versions is None else batch.policy_versions[::agents].copy())
