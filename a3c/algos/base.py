"""The one interface every algorithm implements, in three parts that run in different places:

- **settings** (pure; the parser, ``make_config`` and ``--help`` ask): the algorithm's own
  options (``settings``, a dataclass of ``option`` fields joined into ``Config``), what it
  gives each env family (``family_defaults``) and which combinations it refuses (``check``);
  ``preflight`` asks the machine (memory, say) once, before any worker;
- **acting** (in every worker, a child process or a Ray actor): its net, how the workers
  choose actions, what they send as declared columns (``payload``, ``a3c.lib.columns``) and
  how (``acting_options``, ``make_sender``),
  and how ``play`` and ``compute_action`` pick an action;
- **learning** (in the learner only): ``make_learner`` gives the object that turns the
  workers' messages into optimizer steps and says what a checkpoint adds.

The settings part must import neither torch nor the other parts at module level: a Config
is built without torch, and a worker imports the acting side only. The acting and learning
methods therefore import their modules when called.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import torch
    from tensorboardX import SummaryWriter
    from torch import nn

    from a3c.config import Config
    from a3c.lib.columns import Payload
    from a3c.lib.envs import EnvInfo
    from a3c.lib.experience import TransitionBatch
    from a3c.lifecycle.reporter import Reporter


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """An algorithm without options of its own."""


Outbox = Callable[[Any], bool]
"""How a sender's item (what its algorithm's ``payload`` encodes) leaves the worker; False
when the worker was told to stop meanwhile. The transport gives it; the sender never sees
the transport."""


class Sender(Protocol):
    """What a worker acts with and how its transitions leave it."""

    acting_net: nn.Module

    def policy_version(self) -> int: ...

    def send(self, batch: TransitionBatch) -> bool:
        """Send (or use) ``batch`` through the outbox; False when the worker was told to stop meanwhile."""


class AlgorithmLearner(Protocol):
    """The learner side of an algorithm: owns the optimizer of the shared net."""

    net: nn.Module
    optimizer: torch.optim.Optimizer
    stats_type: type
    """The dataclass of one step's figures (``consume`` returns a list of them)."""

    @property
    def policy_version(self) -> int: ...

    def begin(self, writer: SummaryWriter, frame: int, restored: dict | None, reporter: Reporter) -> None:
        """The workers are starting: make what only training needs (a replay buffer, say),
        from ``restored`` where the checkpoint holds it; say what a person should know
        through ``reporter``."""

    def consume(self, message: Any, frame: int, episodes: int = 0) -> list[Any]:
        """One message of the workers, as the algorithm's payload decodes it: the steps it led
        to, each ``trained_on`` the rows it trained on where it had them.
        ``frame`` is the trainer's count of env frames with this message's counted, and
        ``episodes`` of the episodes ended so far (a resumed run's from its checkpoint), for
        schedules that follow them."""

    def log_interval(self, writer: SummaryWriter, frame: int) -> None:
        """Figures logged once a report interval."""

    def checkpoint_extras(self, with_replay: bool) -> dict[str, Any]:
        """What a checkpoint holds besides the net, the optimizer and the counters
        (``with_replay``: a replay buffer too, where the settings keep one)."""

    def load_extras(self, state: dict[str, Any]) -> None:
        """Take back what ``checkpoint_extras`` added."""


class Algorithm:
    """An algorithm behind ``--algo NAME``: subclass, fill in the parts, register it
    (``a3c.algos.register``). Instances must pickle (workers receive them)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    """One line for ``--help``."""
    settings: ClassVar[type] = NoSettings
    presets: ClassVar[Mapping[str, str]] = {}
    """Named presets besides "default" (``--preset NAME``), each with one line for ``--help``;
    ``family_defaults`` reads the name from ``values["preset"]``."""
    net_shape: ClassVar[Mapping[str, Any]] = {}
    """The settings that shape the net, each with the value that a checkpoint saved before
    the setting existed was trained with (``saved_net_shape``)."""
    head_is_q_values: ClassVar[bool] = False
    """The net's first output is a Q-value per action (its second the greedy one), not a
    distribution's parameters."""
    model_keys: ClassVar[frozenset[str]] = frozenset()
    """The model config's keys its nets honour (``a3c.model_config``); ``--model`` refuses the
    others in one line."""
    central_critic: ClassVar[bool] = False
    """On a multi-agent env each row leads with every agent's observation (``describe_env``'s
    ``global_state``), for a critic that reads them all."""
    action_spaces: ClassVar[frozenset[str]] = frozenset({"Discrete"})
    """The action spaces it trains on (``EnvInfo.action_space``): Discrete, Box, MultiDiscrete;
    preflight refuses the others in one line that names the algorithms taking them."""
    sends_last_states: ClassVar[bool] = False
    """Children send each transition's last state (an off-policy learner bootstraps from it
    with its own nets) instead of V(last state); the slots hold them after the states."""

    # settings
    def family_defaults(self, atari: bool, values: Mapping[str, Any]) -> dict[str, Any]:
        """A value for every family setting the algorithm uses, for Atari or vector envs;
        ``values`` are the settings given (``preset`` among them)."""
        raise NotImplementedError

    def check(self, config: Config, atari: bool) -> None:
        """ConfigError for a combination of settings the algorithm cannot run."""

    def defaults_help(self, name: str) -> str | None:
        """What the algorithm gives setting ``name`` for each family, for ``--help``."""
        atari = self.family_defaults(True, {}).get(name)
        vector = self.family_defaults(False, {}).get(name)
        if atari is None and vector is None:
            return None
        return f"{shown_value(atari)} for Atari, {shown_value(vector)} for vector observations"

    def describe(self, config: Config) -> str:
        """The run's start line names the algorithm this way."""
        return self.name

    def preflight(self, config: Config, env_info: EnvInfo) -> None:
        """ConfigError for what this machine cannot give the run; asked before any worker."""

    def saved_net_shape(self, saved: Mapping[str, Any]) -> dict[str, Any]:
        """The net-shaping settings of a checkpoint's ``config``, older ones included."""
        return {name: saved.get(name) or before for name, before in self.net_shape.items()}

    # acting
    def build_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        """The net from a run's settings (a Config's fields, or a checkpoint's ``config``):
        ``build_policy_net``'s, or on a multi-agent env one of those per policy behind a
        ``a3c.lib.policies.PolicyMap`` (``--policies``); masked (``masked``) where the env's
        observations carry an action mask."""
        if not env_info.agents:
            return self.masked(self.build_policy_net(env_info, settings), env_info)
        from a3c.lib.policies import PER_AGENT, PolicyMap, parse_policy_mapping

        agent_policies = parse_policy_mapping(settings.get("policies") or PER_AGENT, env_info.agents)
        nets = {name: self.build_policy_net(env_info, settings) for name in dict.fromkeys(agent_policies)}
        return self.masked(PolicyMap(nets, agent_policies), env_info)

    def masked(self, net: nn.Module, env_info: EnvInfo) -> nn.Module:
        """``net`` with its policy head masked by the action mask in each observation row
        (``a3c.lib.action_masks``), where the env's observations carry one; else ``net``."""
        if env_info.action_mask is None:
            return net
        from a3c.lib.action_masks import ActionMasked

        return ActionMasked(net, env_info.action_mask, q_values=self.head_is_q_values)

    def build_policy_net(self, env_info: EnvInfo, settings: Mapping[str, Any]) -> nn.Module:
        """One policy's net."""
        raise NotImplementedError

    def acting_options(self, config: Config, worker_id: int) -> dict[str, Any]:
        """Keywords of ``VectorActor``: how worker ``worker_id`` chooses actions and whether
        it sends last states; by default it samples the policy and sends V(last state)."""
        return {"send_last_states": self.sends_last_states}

    def make_sender(self, config: Config, net: nn.Module, policy_version: Callable[[], int],
                    outbox: Outbox) -> Sender | None:
        """How a worker's transitions leave it, where the algorithm makes something of them
        first (A3C's gradients, say); None, the default: as they are, a batch a vector step,
        by the transport's own sender."""
        return None

    def transitions_per_message(self, config: Config) -> int:
        """About how many transitions one worker message stands for: a vector step's."""
        return config.envs_per_process

    def transitions_ahead(self, config: Config) -> int:
        """How far the workers may act ahead of the learner: transitions sent and not yet
        learned from. Two learner batches by default, so that collecting and learning
        overlap; more raises the policy lag. The transport turns it into queues, slots or
        blocks."""
        return 2 * config.batch_size

    def payload(self, config: Config, env_info: EnvInfo, net: nn.Module) -> Payload:
        """The columns a worker's message holds and the most rows one holds: by default the
        transitions ``VectorActor`` makes with this algorithm's ``acting_options``, as many as
        one vector step can emit (each agent's, in a multi-agent env, or one row with all of
        them where rows are joint). An algorithm that sends more declares it here
        (``TransitionPayload.with_columns``)."""
        from a3c.algos.payloads import TransitionPayload, transition_columns

        options = self.acting_options(config, 0)
        joint = options.get("joint_rows", False)
        rows = config.envs_per_process * config.reward_steps * (1 if joint else max(1, len(env_info.agents)))
        return TransitionPayload(transition_columns(env_info, options.get("send_last_states", False),
                                                    options.get("send_log_probs", False), joint), rows)

    def play_actions(self, head: torch.Tensor, greedy: bool, distribution: Any) -> torch.Tensor:
        """The actions ``play`` and ``compute_action`` take given the net's policy head and the
        ``a3c.lib.distributions`` distribution it parametrises: its mode or a sample."""
        return distribution.greedy(head) if greedy else distribution.sample(head)

    # learning
    def make_learner(self, config: Config, net: nn.Module, version_counter: torch.Tensor,
                     env_info: EnvInfo) -> AlgorithmLearner:
        raise NotImplementedError


def trained_on(stats: Any, rows: TransitionBatch | Callable[[], TransitionBatch]) -> Any:
    """``stats`` (one step's figures) with the rows the step trained on, which
    ``on_learn_on_batch`` gets as ``train_batch`` (``train_batch_of``). An attribute beside the
    dataclass's fields, so the figures never hold it; a callable is called only when a
    callback asks (PPO cuts its minibatch's rows out then)."""
    object.__setattr__(stats, "_train_batch", rows)
    return stats


def train_batch_of(stats: Any) -> TransitionBatch | None:
    """The rows ``trained_on`` gave ``stats``; None where the step had none (A3C's grads
    mode: the rows stayed in the workers)."""
    rows = getattr(stats, "_train_batch", None)
    return rows() if callable(rows) else rows


def shown_value(value: Any) -> str:
    """A default as ``--help`` shows it."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def net_settings(config: Config) -> dict[str, Any]:
    """A Config as the settings mapping ``build_net`` takes (as a checkpoint saves them)."""
    return dataclasses.asdict(config)
