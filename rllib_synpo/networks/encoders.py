"""State encoders psi(s): stacked uint8 frames (or THOR's frame features) -> a feature vector.
Plain torch, no Ray."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import torch
from torch import nn

from rllib_synpo.networks.thor_encoder import ThorStateEncoder
from rllib_synpo.utils.checks import BOOLEAN, POSITIVE_INT, Rule, check_settings

PIXEL_SCALE = 255.0
RGB_CHANNELS = 3


class CompactEncoder(nn.Module):
    """The CPU default: three 3x3 convolutions (the last two stride 2) and a linear layer.

    For a 16 x 16 input: 16x16xW -> 8x8x2W -> 4x4x2W -> ``feature_dim``. With ``batch_norm`` the
    input is standardized per channel (BatchNorm without affine, as the paper's ResNet does) and
    each convolution is followed by BatchNorm (its bias dropped, BatchNorm's shift replaces it).
    """

    def __init__(
        self,
        obs_shape: tuple[int, int, int],
        feature_dim: int = 128,
        width: int = 32,
        batch_norm: bool = False,
    ) -> None:
        super().__init__()
        channels, height, width_px = obs_shape
        layers: list[nn.Module] = [nn.BatchNorm2d(channels, affine=False)] if batch_norm else []
        inputs = channels
        for outputs, stride in ((width, 1), (2 * width, 2), (2 * width, 2)):
            layers.append(nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=not batch_norm))
            layers += [nn.BatchNorm2d(outputs), nn.ReLU()] if batch_norm else [nn.ReLU()]
            inputs = outputs
        self.convs = nn.Sequential(*layers, nn.Flatten())
        self.convs.eval()  # sizing pass: leaves BatchNorm's running statistics untouched
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, channels, height, width_px)).shape[1]
        self.convs.train()
        self.project = nn.Sequential(nn.Linear(flat, feature_dim), nn.ReLU())
        self.feature_dim = feature_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # Channels-last memory: oneDNN's convolutions (above all their backward) run faster on it
        # for these small images; the values are the same.
        pixels = (obs.float() / PIXEL_SCALE).contiguous(memory_format=torch.channels_last)
        return self.project(self.convs(pixels))


class DenseEncoder(nn.Module):
    """Two fully connected layers on the flattened frames: every pixel keeps its own weights,
    so positions stay exact (routing in a maze needs the agent's and the target's precise
    cells, which strided convolutions blur)."""

    def __init__(self, obs_shape: tuple[int, int, int], feature_dim: int = 128, width: int = 1024) -> None:
        super().__init__()
        inputs = int(torch.Size(obs_shape).numel())
        self.layers = nn.Sequential(
            nn.Flatten(), nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, feature_dim), nn.ReLU()
        )
        self.feature_dim = feature_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.layers(obs.float() / PIXEL_SCALE)


class _BasicBlock(nn.Module):
    """ResNet-18's basic block."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(outputs),
            nn.ReLU(),
            nn.Conv2d(outputs, outputs, 3, padding=1, bias=False),
            nn.BatchNorm2d(outputs),
        )
        self.shortcut = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class PaperResNetEncoder(nn.Module):
    """The paper's gridworld "customized ResNet": input BatchNorm without affine, a 3x3 stem
    convolution grouped per frame, ResNet-18 basic blocks of widths 32/64/128/256 with strides
    1/2/2/2, flatten (2x2x256 for 16x16 input) and a linear layer to ``feature_dim``."""

    WIDTHS = (32, 64, 128, 256)
    STRIDES = (1, 2, 2, 2)
    BLOCKS_PER_STAGE = 2

    def __init__(self, obs_shape: tuple[int, int, int], feature_dim: int = 128) -> None:
        super().__init__()
        channels, height, width_px = obs_shape
        frames = channels // RGB_CHANNELS
        stem = self.WIDTHS[0]
        if stem % frames:
            raise ValueError(f"the stem width {stem} must divide into {frames} frame groups")
        layers: list[nn.Module] = [
            nn.BatchNorm2d(channels, affine=False),
            nn.Conv2d(channels, stem, 3, padding=1, groups=frames, bias=False),
            nn.BatchNorm2d(stem),
            nn.ReLU(),
        ]
        inputs = stem
        for width, stride in zip(self.WIDTHS, self.STRIDES):
            for block in range(self.BLOCKS_PER_STAGE):
                layers.append(_BasicBlock(inputs, width, stride if block == 0 else 1))
                inputs = width
        layers.append(nn.Flatten())
        self.body = nn.Sequential(*layers)
        flat = self._flat_size(channels, height, width_px)
        self.project = nn.Linear(flat, feature_dim)
        self.feature_dim = feature_dim

    def _flat_size(self, channels: int, height: int, width: int) -> int:
        was_training = self.body.training
        self.body.eval()
        with torch.no_grad():
            size = self.body(torch.zeros(1, channels, height, width)).shape[1]
        self.body.train(was_training)
        return size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.project(self.body(obs.float() / PIXEL_SCALE))


# "thor" reads THOR's (features, held) observation entries (its ``INPUT_KEYS``); the others the
# gridworld's stacked image "obs".
ENCODERS = {
    "compact": CompactEncoder,
    "dense": DenseEncoder,
    "paper_resnet": PaperResNetEncoder,
    "thor": ThorStateEncoder,
}


# What each ``encoder_kwargs`` entry must be, by name, for every encoder that takes it.
ENCODER_OPTION_RULES: dict[str, Rule] = {
    "width": POSITIVE_INT,
    "batch_norm": BOOLEAN,
    "channels": POSITIVE_INT,
    "held_dim": POSITIVE_INT,
    "hidden_dim": POSITIVE_INT,
    "num_held": POSITIVE_INT,
}


def check_encoder_kwargs(name: str, kwargs: object) -> None:
    """A ValueError unless ``name`` is an encoder and ``kwargs`` a mapping of its options
    (`ENCODER_OPTION_RULES`), each a valid value."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; expected one of {sorted(ENCODERS)}")
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"encoder_kwargs {kwargs!r}: expected a mapping of encoder {name!r}'s options")
    options = set(inspect.signature(ENCODERS[name]).parameters) - {"obs_shape", "feature_dim"}
    unknown = sorted(set(kwargs) - options)
    if unknown:
        raise ValueError(
            f"unknown encoder_kwargs {unknown} for encoder {name!r}; it takes {sorted(options) or 'none'}"
        )
    for key, value in kwargs.items():
        setting = f"encoder_kwargs {key}"
        check_settings({setting: value}, {ENCODER_OPTION_RULES[key]: (setting,)})


def make_encoder(name: str, obs_shape: tuple[int, int, int], feature_dim: int, **kwargs) -> nn.Module:
    check_encoder_kwargs(name, kwargs)
    return ENCODERS[name](obs_shape, feature_dim=feature_dim, **kwargs)
