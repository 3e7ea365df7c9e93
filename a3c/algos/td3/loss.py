"""TD3's loss as small pure functions. The critics learn as SAC's do (``a3c.algos.sac.loss``:
``twin_critic_loss`` towards ``soft_targets`` at temperature 0, from the target actor's
smoothed actions); the actor has a loss of its own."""
from __future__ import annotations

import torch


def deterministic_actor_loss(q_values: torch.Tensor) -> torch.Tensor:
    """-mean Q_1(s, actor(s)): the deterministic policy gradient through the first critic
    alone (Fujimoto et al.), ``q_values`` (N, critics) of the actor's own actions."""
    return -q_values[:, 0].mean()
