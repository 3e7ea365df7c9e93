"""Models of a user's own, as a user's file holds them: ``custom_model`` names one as
``tests.custom_models:NAME`` (a factory, or a module class taking the same two arguments),
or by the name this module registers."""
import torch
from torch import nn

from a3c import register_model


class TanhLayer(nn.Module):
    """One tanh layer of ``config["width"]`` units (32 by default) over a flat observation."""

    def __init__(self, observation_space, config):
        super().__init__()
        self.features_dim = config.get("width", 32)
        self.layer = nn.Linear(observation_space.shape[0], self.features_dim)

    def forward(self, observations):
        return torch.tanh(self.layer(observations))


register_model("tanh-layer", TanhLayer)


class CameraAndSpeed(nn.Module):
    """For SideImage-v0's Dict: a small conv body over the camera (channels last) beside the speed."""

    def __init__(self, observation_space, config):
        super().__init__()
        height, width, channels = observation_space["camera"].shape
        self.conv = nn.Sequential(nn.Conv2d(channels, 8, 8, stride=4), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            size = self.conv(torch.zeros(1, channels, height, width)).shape[1]
        self.features_dim = size + observation_space["speed"].shape[0]

    def forward(self, observations):
        image = self.conv(observations["camera"].permute(0, 3, 1, 2))
        return torch.cat([image, observations["speed"]], dim=1)


def broken(observation_space, config):
    raise RuntimeError("no layer called 'dense'")


def without_features_dim(observation_space, config):
    return nn.Linear(observation_space.shape[0], 8)


def wrong_width(observation_space, config):
    model = TanhLayer(observation_space, {"width": 8})
    model.features_dim = 9
    return model


def not_a_module(observation_space, config):
    return "a net"
