"""The paper's THOR state network psi(s) (SynPo supplement). Plain torch, no Ray.

The last ``frame_stack`` frames' CNN features (4 x 2048 for ResNet-101) are read as a sequence
over time: two 1-D convolutions (kernel 3, stride 2, 1024 channels) shrink it to one 1024-d
vector, the held-object embedding (32) is appended (1056), and two linear layers give the state
feature (1056 -> 2048 -> 256). Every size but the paper's widths comes from the observation:
a 1280-d EfficientNet-Lite0 featurizer or a tiny test featurizer work the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

TIME_KERNEL = 3
TIME_STRIDE = 2
TIME_PADDING = 1  # 4 frames -> 2 -> 1 with two convolutions
NUM_TIME_CONVS = 2
PAPER_CONV_CHANNELS = 1024
PAPER_HELD_DIM = 32
PAPER_HIDDEN_DIM = 2048
PAPER_FEATURE_DIM = 256


class ThorStateEncoder(nn.Module):
    """``{"features": (N, frames, D) float, "held": (N,) int} -> (N, feature_dim)``.

    ``obs_shape`` is the shape of ``features`` (frames, D); ``num_held`` the number of values of
    ``held`` (THOR's observation space gives both). ``channels``, ``held_dim`` and
    ``hidden_dim`` default to the paper's 1024, 32 and 2048.
    """

    INPUT_KEYS = ("features", "held")  # the observation entries this encoder reads

    def __init__(
        self,
        obs_shape: tuple[int, int],
        feature_dim: int = PAPER_FEATURE_DIM,
        *,
        num_held: int,
        channels: int = PAPER_CONV_CHANNELS,
        held_dim: int = PAPER_HELD_DIM,
        hidden_dim: int = PAPER_HIDDEN_DIM,
    ) -> None:
        super().__init__()
        if len(obs_shape) != 2:
            raise ValueError(f"THOR features must be (frames, feature size), got shape {tuple(obs_shape)}")
        frames, feature_size = (int(size) for size in obs_shape)
        layers: list[nn.Module] = []
        inputs = feature_size
        for _ in range(NUM_TIME_CONVS):
            layers += [
                nn.Conv1d(inputs, channels, TIME_KERNEL, stride=TIME_STRIDE, padding=TIME_PADDING),
                nn.ReLU(),
            ]
            inputs = channels
        self.convs = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, feature_size, frames)).shape[1]  # 1024 for 4 frames
        self.held_embedding = nn.Embedding(num_held, held_dim)
        self.head = nn.Sequential(
            nn.Linear(flat + held_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, feature_dim)
        )
        self.feature_dim = feature_dim

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        # Conv1d reads (N, channels, length): the feature vector is the channel axis, time the length.
        over_time = obs["features"].float().transpose(1, 2)
        state = torch.cat([self.convs(over_time), self.held_embedding(obs["held"].long())], dim=-1)
        return self.head(state)
