"""Mixed precision of the training forward pass, without Ray."""

import copy

import pytest
import torch

from rllib_synpo import precision as precision_module
from rllib_synpo.checks import bad_setting
from rllib_synpo.direct import DirectConfig, DirectImitation, synpo_losses
from rllib_synpo.precision import PRECISION, resolve_precision, training_autocast

SEEN = [(0, 0), (0, 1), (1, 1)]
TINY = {"feature_dim": 16, "embedding_dim": 8, "network_kwargs": {"basis_dim": 8, "hidden_dim": 16}, "encoder_kwargs": {"width": 4, "batch_norm": True}}


def _trainer(precision: str) -> DirectImitation:
    config = DirectConfig(num_collectors=8, replay_capacity=512, warmup_states=64, batch_size=32, relabel_seen_tasks=True, precision=precision, **TINY)
    return DirectImitation(config, SEEN, seed=0)


def test_float32_is_no_autocast_and_bfloat16_computes_matrix_products_in_bfloat16():
    layer = torch.nn.Linear(4, 4)
    with training_autocast("float32", "cpu"):
        assert layer(torch.ones(2, 4)).dtype == torch.float32
    with training_autocast("bfloat16", "cpu"):
        assert layer(torch.ones(2, 4)).dtype == torch.bfloat16


@pytest.mark.parametrize("native, expected", [(True, "bfloat16"), (False, "float32")])
def test_auto_is_bfloat16_only_where_the_device_computes_it_natively(monkeypatch, native, expected):
    monkeypatch.setattr(precision_module, "native_bfloat16", lambda device: native)
    assert resolve_precision("auto", "cpu") == expected
    assert resolve_precision("float32", "cpu") == "float32" and resolve_precision("bfloat16", "cpu") == "bfloat16"


def test_an_unknown_precision_is_named():
    assert bad_setting({"precision": "bfloat16"}, {PRECISION: ("precision",)}) is None
    assert bad_setting({"precision": "float16"}, {PRECISION: ("precision",)}) == "precision must be one of ['float32', 'bfloat16', 'auto'], got 'float16'"


def test_bfloat16_updates_keep_float32_weights_and_finite_losses():
    trainer = _trainer("bfloat16")
    before = copy.deepcopy(trainer.net.state_dict())
    terms = [trainer.step() for _ in range(3)]
    assert all(torch.isfinite(torch.tensor(list(t.values()))).all() for t in terms)
    after = trainer.net.state_dict()
    assert all(value.dtype == before[name].dtype for name, value in after.items())
    assert any(not torch.equal(value, before[name]) for name, value in after.items())


def test_autocast_around_backward_and_adam_equals_autocast_around_the_forward_alone():
    """What `SynPoTorchLearner` relies on: RLlib's update is one method, so its autocast also
    spans the backward and the optimizer step."""
    trainer = _trainer("bfloat16")
    trainer.step()  # fills the replay
    batch = trainer._tensors(trainer.replay.sample(trainer.rng, 32))
    results = []
    for whole_update in (False, True):
        net = copy.deepcopy(trainer.net)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
        for _ in range(2):
            with training_autocast("bfloat16", "cpu"):
                loss = synpo_losses(net, batch, trainer.config)["total_loss"]
                if whole_update:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
            if not whole_update:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        results.append(net.state_dict())
    assert all(torch.equal(results[0][name], results[1][name]) for name in results[0])


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_same_seed_same_updates(precision):
    first, second = _trainer(precision), _trainer(precision)
    for _ in range(2):
        first.step(), second.step()
    assert all(torch.equal(value, second.net.state_dict()[name]) for name, value in first.net.state_dict().items())
