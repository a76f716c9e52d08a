"""ResNet-101 in plain torch, with torchvision's parameter names.

torchvision is not needed: its published ImageNet checkpoint (a plain state dict) loads into this
module as is, and a CPU-only torch cannot use PyPI's CUDA torchvision wheels anyway.
"""

from __future__ import annotations

import torch
from torch import nn

RESNET101_BLOCKS = (3, 4, 23, 3)  # bottleneck blocks per stage
STAGE_WIDTHS = (64, 128, 256, 512)
BOTTLENECK_EXPANSION = 4
STEM_WIDTH = 64
IMAGENET_CLASSES = 1000
FEATURE_DIM = STAGE_WIDTHS[-1] * BOTTLENECK_EXPANSION  # 2048, the penultimate layer


class Bottleneck(nn.Module):
    def __init__(self, in_channels: int, width: int, stride: int) -> None:
        super().__init__()
        out_channels = width * BOTTLENECK_EXPANSION
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        # torchvision's "ResNet v1.5": the stride sits on the 3x3 convolution.
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet101(nn.Module):
    """``forward`` returns the 2048-d global-average-pooled features (``fc`` is kept only so
    that ImageNet checkpoints load unchanged)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, STEM_WIDTH, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(STEM_WIDTH)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels = STEM_WIDTH
        for stage, (blocks, width) in enumerate(zip(RESNET101_BLOCKS, STAGE_WIDTHS)):
            first_stride = 1 if stage == 0 else 2
            layers = []
            for block in range(blocks):
                layers.append(Bottleneck(in_channels, width, first_stride if block == 0 else 1))
                in_channels = width * BOTTLENECK_EXPANSION
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(FEATURE_DIM, IMAGENET_CLASSES)

    def reset_parameters(self, generator: torch.Generator) -> None:
        """torchvision's initialization, drawn from ``generator`` (for untrained use in tests)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(
                    module.weight, mode="fan_out", nonlinearity="relu", generator=generator
                )
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.01, generator=generator)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)
