"""Policies mapped to agents: one net per policy behind one module, each row routed to the
net of its agent's policy by the one-hot agent index its observation ends with
(``a3c.lib.multiagent``). A policy's net therefore computes, and is trained on, its own agents'
rows only, while the workers, the slots, the optimizer and the checkpoints keep seeing one
module."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from a3c.lib.action_masks import ActionMasked

SHARED = "shared"
PER_AGENT = "per-agent"


class PolicyMappingError(ValueError):
    """A policy mapping that does not fit the env's agents; one line for the user."""


def parse_policy_mapping(policies: str, agents: Sequence[str]) -> tuple[str, ...]:
    """Each agent's policy name, in agent order, from ``--policies``: ``shared`` (one policy
    for all), ``per-agent`` (one each, named after the agent) or ``AGENT=POLICY,...`` naming
    every agent's policy."""
    if policies == SHARED:
        return tuple(SHARED for _ in agents)
    if policies == PER_AGENT:
        return tuple(agents)
    mapping = {}
    for part in policies.split(","):
        agent, equals, policy = part.partition("=")
        if not equals or not agent.strip() or not policy.strip():
            raise PolicyMappingError(f"--policies {policies!r}: expected shared, per-agent or "
                                     f"AGENT=POLICY,... (agents: {', '.join(agents)})")
        mapping[agent.strip()] = policy.strip()
    unknown = sorted(set(mapping) - set(agents))
    missing = [agent for agent in agents if agent not in mapping]
    if unknown or missing:
        raise PolicyMappingError(f"--policies {policies!r}: " + "; ".join(
            part for part in (f"no agent {', '.join(unknown)}" if unknown else "",
                              f"no policy for {', '.join(missing)}" if missing else "") if part)
            + f" (agents: {', '.join(agents)})")
    return tuple(mapping[agent] for agent in agents)


def mapping_setting(policy_mapping: Callable[[str], str], agents: Sequence[str]) -> str:
    """The ``--policies`` value of a Python mapping from agent id to policy name."""
    names = {agent: str(policy_mapping(agent)) for agent in agents}
    for agent, name in names.items():
        if not name.strip() or "," in name or "=" in name:
            raise PolicyMappingError(f"policy_mapping({agent!r}) gave {name!r}; a policy name needs a "
                                     f"character and neither ',' nor '='")
    return ",".join(f"{agent}={name}" for agent, name in names.items())


class PolicyMap(nn.Module):
    """Nets ``nets[name]`` (each mapping observations to a tuple of outputs with rows first,
    like ``a3c.lib.models``' (logits, values)); agent i's rows go to ``nets[agent_policies[i]]``.

    Takes observations (..., size + agents) whose last ``agents`` entries are the one-hot
    agent index, and returns each output with the same leading shape.
    """

    def __init__(self, nets: dict[str, nn.Module], agent_policies: Sequence[str]):
        super().__init__()
        self.policy_names = tuple(nets)
        self.nets = nn.ModuleDict(nets)
        self.agents = len(agent_policies)
        index = [self.policy_names.index(policy) for policy in agent_policies]
        self.register_buffer("agent_policy", torch.tensor(index, dtype=torch.int64), persistent=False)

    def policy_of(self, agent: int) -> str:
        """The name of agent ``agent``'s (its index's) policy."""
        return self.policy_names[int(self.agent_policy[agent])]

    def policy_rows(self, observations: torch.Tensor) -> torch.Tensor:
        """The policy index of each row of (N, size + agents) observations."""
        return self.agent_policy[observations[:, -self.agents:].argmax(dim=1)]

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leading = observations.shape[:-1]
        rows = observations.reshape(-1, observations.shape[-1])
        if len(self.nets) == 1:
            outputs = next(iter(self.nets.values()))(rows)
        else:
            policies = self.policy_rows(rows)
            parts = [(torch.nonzero(policies == index).squeeze(1), net)
                     for index, net in enumerate(self.nets.values())]
            results = [(chosen, net(rows[chosen])) for chosen, net in parts if len(chosen)]
            outputs = tuple(_scatter([(chosen, result[position]) for chosen, result in results], len(rows))
                            for position in range(len(results[0][1])))
        return tuple(output.reshape(*leading, *output.shape[1:]) for output in outputs)


def _scatter(parts: list[tuple[torch.Tensor, torch.Tensor]], rows: int) -> torch.Tensor:
    """One tensor of ``rows`` rows from parts (row indices, their values)."""
    first = parts[0][1]
    joined = first.new_empty((rows, *first.shape[1:]))
    for chosen, values in parts:
        joined[chosen] = values
    return joined


def policy_names(net: nn.Module) -> Callable[[int], str] | None:
    """Agent ``i``'s policy's name by ``net``'s mapping, where ``net`` (or the net a mask wraps,
    ``a3c.lib.action_masks``) is a ``PolicyMap``; None for a net of the agents together."""
    inner = net.net if isinstance(net, ActionMasked) else net
    return inner.policy_of if isinstance(inner, PolicyMap) else None
