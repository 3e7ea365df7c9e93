"""The two payloads the algorithms here send, as ``a3c.lib.columns`` declarations, and the
messages the learner gets from them: transitions (a row each, every algorithm's data mode)
and a flat gradient (A3C's grads mode)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from a3c.lib.columns import Column, Payload
from a3c.lib.experience import TransitionBatch

if TYPE_CHECKING:
    from a3c.algos.a3c.gradients import LossStats
    from a3c.lib.envs import EnvInfo


@dataclass
class Transitions:
    """The n-step transitions one worker's vector steps produced, as the learner sees them."""

    worker_id: int
    batch: TransitionBatch

    @property
    def transitions(self) -> int:
        """Agent steps: a row each, or one per agent where a row holds every agent's (MADDPG,
        QMIX). Counted by rewards, one per agent step: an action may have many parts (a Box's
        dimensions, a MultiDiscrete's choices)."""
        return int(self.batch.rewards.size)


@dataclass
class Gradients:
    """One worker's gradient of the loss on its own batch, as the learner sees it (grads mode)."""

    worker_id: int
    gradient: np.ndarray
    """All parameter gradients, flat, in ``parameters()`` order."""
    policy_version: int
    """The optimizer step of the weights the gradient was computed with."""
    transitions: int
    loss: LossStats


def transition_columns(env_info: EnvInfo, last_states: bool = False, log_probs: bool = False,
                       joint_rows: bool = False) -> list[Column]:
    """The columns ``VectorActor`` fills: observations, actions of the env's space, rewards and
    the bookkeeping; last states or V(last state); the rollout columns with
    ``log_probs`` (with those that put rows back into sequences); every agent's observation, action and reward in one row with ``joint_rows``."""
    agents = (len(env_info.agents),) if joint_rows else ()
    observation = Column("states", env_info.observation_dtype, (*agents, *env_info.observation_shape))
    actions = Column("actions", env_info.action_dtype, (*agents, *env_info.action_shape))
    columns = [observation, actions, Column("rewards", "float32", agents),
               Column("dones", "bool"), Column("steps", "int64"), Column("policy_versions", "int64")]
    if last_states:
        columns.append(Column("last_states", observation.dtype, observation.shape))
    else:
        columns.append(Column("last_values", "float32"))
    if log_probs:
        columns += [Column("log_probs", "float32"), Column("env_ids", "int64"), Column("ends", "bool"),
                    Column("starts", "bool")]
    return columns


class TransitionPayload(Payload):
    """Transition batches: a row per transition, the batch's columns as they are."""

    def encode(self, item: TransitionBatch) -> tuple[dict[str, np.ndarray], None]:
        return item.columns(), None

    def decode(self, worker_id: int, columns: dict[str, np.ndarray], meta: Any) -> Transitions:
        return Transitions(worker_id, TransitionBatch.from_columns(columns))

    def with_columns(self, extra: Sequence[Column]) -> TransitionPayload:
        """The same payload with ``extra`` columns (an algorithm's own) after these."""
        return TransitionPayload([*self.columns, *extra], self.max_rows)


@dataclass
class GradientItem:
    """What a grads-mode sender hands over: the flat gradient and what it was computed from."""

    gradient: np.ndarray
    policy_version: int
    transitions: int
    loss: LossStats


class GradientPayload(Payload):
    """One flat gradient a message, its figures beside it; each reaches the learner alone, as
    soon as it is made (the weights it was computed on age with every step)."""

    may_wait = False

    def __init__(self, parameters: int):
        super().__init__([Column("gradient", "float32", (parameters,))], max_rows=1)

    def encode(self, item: GradientItem) -> tuple[dict[str, np.ndarray], tuple]:
        return {"gradient": item.gradient[None]}, (item.policy_version, item.transitions, item.loss)

    def decode(self, worker_id: int, columns: dict[str, np.ndarray], meta: tuple) -> Gradients:
        policy_version, transitions, loss = meta
        return Gradients(worker_id, columns["gradient"][0], policy_version, transitions, loss)
