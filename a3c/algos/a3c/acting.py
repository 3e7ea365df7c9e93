"""A3C's acting side where it differs from sending transitions as they come: grads mode, a
worker that trains its own copy of the net on its transitions and sends the gradients; and
``--hold-weights``, a worker that acts with weights it renews only every so many steps."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from a3c.algos.a3c.gradients import flat_gradients, loss_gradients
from a3c.algos.a3c.loss import LossSettings
from a3c.algos.a3c.settings import importance_weighted
from a3c.algos.base import Outbox
from a3c.algos.payloads import GradientItem
from a3c.lib.experience import TransitionBatch
from a3c.lib.recurrent import transition_buffer

if TYPE_CHECKING:
    from a3c.config import Config


def loss_settings(config: Config) -> LossSettings:
    """The actor-critic loss's settings, the same in a grads-mode worker and in the learner."""
    return LossSettings(config.gamma, config.entropy_beta, config.value_weight, config.bf16,
                        config.normalize_advantages,
                        rho_bar=config.rho_bar if importance_weighted(config) else None, seq_len=config.seq_len)


class PrivateCopy:
    """A worker that acts with its own copy of the shared net: the copy, the version it was
    taken at (the version its rows carry), and how to take it again."""

    def __init__(self, net: nn.Module, shared_version: Callable[[], int]):
        self.shared_net = net
        self.shared_version = shared_version
        self._version = shared_version()  # read first: the copy is at least this new
        self.acting_net = copy.deepcopy(net)

    def _pull_weights(self) -> None:
        self._version = self.shared_version()  # read first: the copy is at least this new
        self.acting_net.load_state_dict(self.shared_net.state_dict())

    def policy_version(self) -> int:
        return self._version


class GradientSender(PrivateCopy):
    """Grads mode: act with a private copy of the net, compute the loss gradient on each
    ``batch_size`` transitions, send it, then copy the shared weights again."""

    def __init__(self, config: Config, net: nn.Module, shared_version: Callable[[], int],
                 outbox: Outbox, device: torch.device):
        super().__init__(net, shared_version)
        self.loss_settings = loss_settings(config)
        self.outbox = outbox
        self.device = device
        self.buffer = transition_buffer(net, config.batch_size, config.seq_len)

    def send(self, batch: TransitionBatch) -> bool:
        self.buffer.add(batch)
        while (transitions := self.buffer.pop_batch()) is not None:
            loss = loss_gradients(self.acting_net, transitions, self.loss_settings, self.device)
            sent = self.outbox(GradientItem(flat_gradients(self.acting_net), self._version, len(transitions),
                                            loss))
            if not sent:
                return False
            self._pull_weights()
        return True


class HeldWeightsSender(PrivateCopy):
    """Data mode with ``--hold-weights K``: act with a private copy of the net, renewed from the
    shared one only once the learner is ``K`` optimizer steps past the copy. Rows then carry
    the copy's version and log-probabilities, so their lag (about ``(K - 1) / 2`` steps more
    on average) is measured and weighted as any other: lag set apart from the layout."""

    def __init__(self, net: nn.Module, shared_version: Callable[[], int], outbox: Outbox, hold_steps: int):
        super().__init__(net, shared_version)
        self.outbox = outbox
        self.hold_steps = hold_steps

    def policy_version(self) -> int:
        """The copy's version, renewed first when the shared weights are ``hold_steps`` ahead;
        the actor reads it just before each forward pass."""
        if self.shared_version() - self._version >= self.hold_steps:
            self._pull_weights()
        return self._version

    def send(self, batch: TransitionBatch) -> bool:
        return self.outbox(batch)
