"""A user's file of models, as ``benchmarks/custom_model.py`` trains them: importing it
registers ``two-tanh``, and ``custom_model="benchmarks.user_models:TwoTanh"`` names the same class."""
import torch
from torch import nn

from a3c import register_model


class TwoTanh(nn.Module):
    """Two tanh layers of ``config["width"]`` units (64 by default) over a flat observation:
    SB3's default MLP features, in place of each algorithm's own first layers."""

    def __init__(self, observation_space, config):
        super().__init__()
        self.features_dim = config.get("width", 64)
        self.layers = nn.Sequential(nn.Linear(observation_space.shape[0], self.features_dim), nn.Tanh(),
                                    nn.Linear(self.features_dim, self.features_dim), nn.Tanh())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.layers(observations)


register_model("two-tanh", TwoTanh)
