"""Acting: step a vector env with a net and turn the steps into n-step transitions.

Kept apart from how its output travels (``a3c.transport.worker`` sends it through the worker's
channel), so that another host of actors (a Ray actor, an off-policy actor filling a replay
buffer) steps envs with the same code.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from a3c.lib.distributions import policy_distribution
from a3c.lib.envs import EnvRecipe
from a3c.lib.episodes import Episode, EpisodeCallbacks, TeamEpisodeCallbacks
from a3c.lib.experience import EpisodeResult, NStepAccumulator, TransitionBatch
from a3c.lib.models import evaluate
from a3c.lib.multiagent import joint_transitions
from a3c.lib.normalize import RewardScaler
from a3c.lib.policies import policy_names
from a3c.lib.recurrent import is_recurrent
from a3c.lib.recurrent import step as recurrent_step


@dataclass
class ActorStep:
    """What one vector step produced: transitions (each row labelled with the policy version
    that chose its action) and finished episodes."""

    batch: TransitionBatch | None
    episodes: list[EpisodeResult] = field(default_factory=list)


def env_info(infos: dict, env_index: int) -> dict[str, Any]:
    """One env's ``info`` out of a vector env's (gymnasium's dict of arrays, each key's
    ``_key`` mask saying which envs gave it)."""
    return {key: value[env_index] for key, value in infos.items()
            if not key.startswith("_") and key not in ("final_obs", "final_info")
            and bool(infos.get(f"_{key}", [True] * (env_index + 1))[env_index])}


class VectorActor:
    """Acts in ``num_envs`` lockstep envs with ``net``, one forward pass per vector step.

    That pass serves twice: its logits choose the next actions and its values are
    V(last state) for the transitions that end on these observations, so the learner needs
    no second forward pass and last states never travel between processes. ``bf16`` runs it
    under bfloat16 autocast (``evaluate``); ``clip_rewards`` trains on the rewards' signs.
    Actions are sampled from the net's ``distribution``; a Box action space's are clipped to
    its bounds for the envs, while the rows keep the actions as drawn.
    An off-policy learner gives ``choose_actions`` (epsilon-greedy on Q-values instead of
    sampling the policy) and ``send_last_states``: it bootstraps from the last states with
    its own networks at training time, so the actor's values are not sent. A rollout
    learner gives ``send_log_probs``: each row then carries its action's log-probability
    under the logits that chose it, and the columns that put rows back into sequences. A
    learner with a critic over every agent (MADDPG) gives ``joint_rows``: a multi-agent env's
    rows then leave as one per env step with every agent's (``a3c.lib.multiagent.joint_transitions``).
    ``return_lambda`` below 1 sends lambda-returns over each n-step window (``NStepAccumulator``).
    ``env`` says how to make the envs (an id alone: its default settings); ``worker_index``
    reaches each env's creator (``a3c.lib.envs.make_env``).
    ``callbacks`` run their worker-side hooks at each env's episode start, step and end
    (``a3c.lib.episodes``); their custom metrics go with the finished episodes.
    ``scale_rewards`` trains on rewards over the running deviation of the discounted return
    (``a3c.lib.normalize.RewardScaler``); finished episodes still report the env's own. The
    first ``random_steps`` vector steps act uniformly at random (``--random-frames``), and
    with ``uniform_until_learning`` every step before the learner's first (policy version 0:
    TD3's warm-up, which a resumed run or a restarted worker past it skips).
    ``global_state``: a multi-agent env's rows lead with every agent's observation, for a
    central critic. ``life_loss`` (Atari): a step that loses a life ends its rows as a
    termination would (``NStepAccumulator``), while the episode, and its score, is the game.

    A recurrent net (``a3c.lib.recurrent``) keeps a state per env, zeroed where an episode starts;
    each row carries the state its action was chosen from (``recurrent_states``).

    ``policy_version()`` says which optimizer step ``net``'s weights are at; it is read just
    before each forward pass, so a row's label is the version of the logits that chose its
    action (at least that new, since the learner may step while the pass reads the weights).
    """

    def __init__(self, env: EnvRecipe | str, num_envs: int, reward_steps: int, gamma: float, net: nn.Module,
                 policy_version: Callable[[], int], seed: int, bf16: bool = False,
                 clip_rewards: bool = False,
                 choose_actions: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 send_last_states: bool = False, send_log_probs: bool = False, joint_rows: bool = False,
                 return_lambda: float = 1.0, worker_index: int = 0,
                 scale_rewards: bool = False, random_steps: int = 0, uniform_until_learning: bool = False,
                 callbacks: Sequence[Any] = (), global_state: bool = False, life_loss: bool = False):
        self.net = net
        self.joint_rows = joint_rows
        self.send_log_probs = send_log_probs
        self.distribution = policy_distribution(net)
        self.random_steps = random_steps
        self.uniform_until_learning = uniform_until_learning
        self.choose_actions = choose_actions or self.distribution.sample
        self.send_last_states = send_last_states
        self.policy_version = policy_version
        self.bf16 = bf16
        self.device = next(net.parameters()).device
        recipe = EnvRecipe(env) if isinstance(env, str) else env
        self.envs = recipe.make_vector(num_envs, worker_index, global_state)
        self.reward_scaler = RewardScaler(self.envs.num_envs, gamma) if scale_rewards else None
        self.accumulator = NStepAccumulator(self.envs.num_envs, reward_steps, gamma,
                                            self.envs.metadata["autoreset_mode"], clip_rewards,
                                            lam=return_lambda)
        self._observations, infos = self.envs.reset(seed=seed)
        self._lives = infos["lives"].copy() if life_loss else None
        self.episode_callbacks: EpisodeCallbacks | TeamEpisodeCallbacks | None = None
        if callbacks and hasattr(self.envs, "agents"):  # an episode an env, over all its agents
            self.episode_callbacks = TeamEpisodeCallbacks(callbacks, self.envs, worker_index, self._observations,
                                                          policy_names(net))
        elif callbacks:  # single-agent envs: an episode an env
            self.episode_callbacks = EpisodeCallbacks(callbacks, self.envs, worker_index)
            self._callback_resetting = np.zeros(self.envs.num_envs, dtype=bool)
            for env_index, observation in enumerate(self._observations):
                self.episode_callbacks.start(env_index, observation)
        self.recurrent = is_recurrent(net)
        self._state = net.initial_state(self.envs.num_envs, self.device) if self.recurrent else None
        self._ended = np.zeros(self.envs.num_envs, dtype=bool)
        self._logits_policy_version = policy_version()
        self._logits, _, self._next_state = self._evaluate(self._observations, self._state)

    def _evaluate(self, observations: np.ndarray,
                  state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(policy head, values, next recurrent state or None) of ``observations``."""
        observations = torch.as_tensor(observations).to(self.device)
        if not self.recurrent:
            return (*evaluate(self.net, observations, self.bf16), None)
        return recurrent_step(self.net, observations, state, self.bf16)

    def _state_for_next(self, ended: np.ndarray) -> torch.Tensor | None:
        """The recurrent state each env meets its next observation with: the one its last step
        led to, zeroed where that observation starts an episode (with SAME_STEP autoreset, right
        after the end; with NEXT_STEP, after the reset step that follows it)."""
        if not self.recurrent:
            return None
        starting = self._ended if self.accumulator.next_step_reset else ended
        self._ended = ended
        state = self._next_state.clone()
        state[torch.as_tensor(starting, device=self.device)] = 0.0
        return state

    def step(self) -> ActorStep:
        """Act on the last observations with the logits already computed for them, step the
        envs, and evaluate what came back."""
        log_probs = None
        learning = not self.uniform_until_learning or self._logits_policy_version > 0
        if self.random_steps > 0 or not learning:  # the behaviour policy is the uniform one
            self.random_steps = max(0, self.random_steps - 1)
            chosen, uniform_log_probs = self.distribution.uniform(self._logits)
            log_probs = uniform_log_probs.cpu().numpy() if self.send_log_probs else None
        else:
            chosen = self.choose_actions(self._logits)
            if self.send_log_probs:
                log_probs = self.distribution.log_prob(self._logits.float(), chosen).cpu().numpy()
        actions = chosen.cpu().numpy()
        policy_version = self._logits_policy_version
        next_observations, rewards, terminated, truncated, infos = self.envs.step(
            self.distribution.env_actions(actions))
        self._logits_policy_version = self.policy_version()
        over = terminated | truncated
        acted_from, next_state = self._state, self._state_for_next(over)
        final_values = None  # read before the next evaluation replaces the state they need
        if not self.send_last_states and not self.accumulator.next_step_reset:
            final_values = self._final_values(truncated, infos)
        self._logits, next_values, self._next_state = self._evaluate(next_observations, next_state)
        self._state = next_state
        if self.send_last_states:  # an off-policy learner bootstraps from them with its own nets
            next_values, final_values = None, None
        else:
            next_values = next_values.cpu().numpy()
        trained_rewards = None if self.reward_scaler is None else self.reward_scaler(rewards, over)
        lives_lost = None
        if self._lives is not None:  # a new game's lives after an autoreset are not a loss
            lives_lost = (infos["lives"] < self._lives) & ~over
            self._lives = infos["lives"].copy()
        batch, episodes = self.accumulator.step(
            self._observations, actions, rewards, terminated, truncated, next_observations, infos,
            next_values=next_values, final_values=final_values, policy_version=policy_version,
            log_probs=log_probs, trained_rewards=trained_rewards,
            extras=None if acted_from is None else {"recurrent_states": acted_from.cpu().numpy()},
            lives_lost=lives_lost,
        )
        episodes = infos.get("team_episodes", episodes)  # a multi-agent env's, over all its agents
        if self.episode_callbacks is not None:
            if isinstance(self.episode_callbacks, TeamEpisodeCallbacks):
                ended = self.episode_callbacks.step(actions, rewards, next_observations, infos)
            else:
                ended = self._run_episode_callbacks(actions, rewards, terminated, truncated, next_observations, infos)
            episodes = [dataclasses.replace(episode, custom_metrics=ended[episode.env_index].custom_metrics,
                                            hist_data=ended[episode.env_index].hist_data) for episode in episodes]
            if batch is not None:
                self.episode_callbacks.postprocess(batch)
        if self.joint_rows and batch is not None:
            batch = joint_transitions(batch, self.envs.agents)
        self._observations = next_observations
        return ActorStep(batch, episodes)

    def _run_episode_callbacks(self, actions: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
                               truncated: np.ndarray, next_observations: np.ndarray,
                               infos: dict) -> dict[int, Episode]:
        """The child-side hooks for this step of every env; the episodes that ended, by env.
        With NEXT_STEP autoreset an env's step after its episode's end is the reset (the
        accumulator skips it too), so its new episode starts there."""
        ended: dict[int, Episode] = {}
        callbacks = self.episode_callbacks
        for env_index in range(len(rewards)):
            if self._callback_resetting[env_index]:
                self._callback_resetting[env_index] = False
                callbacks.start(env_index, next_observations[env_index])
                continue
            done = bool(terminated[env_index] or truncated[env_index])
            final = done and not self.accumulator.next_step_reset
            observation = infos["final_obs"][env_index] if final else next_observations[env_index]
            callbacks.step(env_index, observation, actions[env_index], float(rewards[env_index]),
                           env_info(infos.get("final_info", infos) if final else infos, env_index))
            if done:
                ended[env_index] = callbacks.end(env_index)
                if self.accumulator.next_step_reset:
                    self._callback_resetting[env_index] = True
                else:
                    callbacks.start(env_index, next_observations[env_index])
        return ended

    def _final_values(self, truncated: np.ndarray, infos: dict) -> np.ndarray | None:
        """V(final observation) of the truncated envs (zeros elsewhere), None if none was; a
        recurrent net's from the state that env's last step led to."""
        rows = np.flatnonzero(truncated)
        if not len(rows):
            return None
        state = None if self._next_state is None else self._next_state[torch.as_tensor(rows, device=self.device)]
        _, values, _ = self._evaluate(np.stack([infos["final_obs"][row] for row in rows]), state)
        final_values = np.zeros(len(truncated), dtype=np.float32)
        final_values[rows] = values.cpu().numpy()
        return final_values

    def set_task(self, task: object) -> None:
        """Hand every env ``task`` through its ``set_task``; an env applies it at its next
        reset, so each episode runs under one task (RLlib's task-settable envs do the same)."""
        self.envs.call("set_task", task)

    def close(self) -> None:
        self.envs.close()
