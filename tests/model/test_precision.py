"""Mixed precision of the training forward pass, without Ray."""

import copy

import pytest
import torch

from rllib_synpo.losses import TOTAL_LOSS, LossWeights, imitation_losses
from rllib_synpo.networks import make_network
from rllib_synpo.utils import precision as precision_module
from rllib_synpo.utils.checks import bad_setting
from rllib_synpo.utils.precision import PRECISION, resolve_precision, training_autocast

TINY = {
    "feature_dim": 16,
    "embedding_dim": 8,
    "basis_dim": 8,
    "hidden_dim": 16,
    "encoder_kwargs": {"width": 4, "batch_norm": True},
}


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return make_network(
        "synpo", obs_shape=(12, 16, 16), num_actions=5, num_envs=2, num_tasks=3, encoder="compact", **TINY
    )


def _batch(seed: int, n: int = 32) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randint(0, 256, (n, 12, 16, 16), dtype=torch.uint8, generator=g),
        "env_id": torch.randint(0, 2, (n,), generator=g),
        "task_id": torch.randint(0, 3, (n,), generator=g),
        "expert_action": torch.randint(0, 5, (n,), generator=g),
        "reward": torch.randn(n, generator=g),
    }


def _loss(net: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    return imitation_losses(
        net,
        out,
        expert_actions=batch["expert_action"],
        executed_actions=batch["expert_action"],
        rewards=batch["reward"],
        env_id=batch["env_id"],
        task_id=batch["task_id"],
        weights=LossWeights(),
    )[TOTAL_LOSS]


def _train(net: torch.nn.Module, precision: str, steps: int = 3) -> list[float]:
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
    losses = []
    for step in range(steps):
        with training_autocast(precision, "cpu"):
            loss = _loss(net, _batch(step))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


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
    assert (
        resolve_precision("float32", "cpu") == "float32"
        and resolve_precision("bfloat16", "cpu") == "bfloat16"
    )


def test_an_unknown_precision_is_named():
    assert bad_setting({"precision": "bfloat16"}, {PRECISION: ("precision",)}) is None
    assert (
        bad_setting({"precision": "float16"}, {PRECISION: ("precision",)})
        == "precision must be one of ['float32', 'bfloat16', 'auto'], got 'float16'"
    )


def test_bfloat16_updates_keep_float32_weights_and_finite_losses():
    net = _net()
    before = copy.deepcopy(net.state_dict())
    losses = _train(net, "bfloat16")
    assert all(torch.isfinite(torch.tensor(losses)))
    after = net.state_dict()
    assert all(value.dtype == before[name].dtype for name, value in after.items())
    assert any(not torch.equal(value, before[name]) for name, value in after.items())


def test_autocast_around_backward_and_adam_equals_autocast_around_the_forward_alone():
    """What `SynPoTorchLearner` relies on: RLlib's update is one method, so its autocast also
    spans the backward and the optimizer step."""
    start = _net()
    results = []
    for whole_update in (False, True):
        net = copy.deepcopy(start)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
        for step in range(2):
            with training_autocast("bfloat16", "cpu"):
                loss = _loss(net, _batch(step))
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


def test_several_updates_in_one_autocast_context_equal_one_context_each():
    """`SynPoTorchLearner` autocasts RLlib's whole ``update``: all its minibatches' steps in one
    context. Each step's forward pass must see the weights the previous step left (autocast's
    weight cache would hand it the first step's bfloat16 copies)."""
    start = _net()
    results = []
    for one_context in (False, True):
        net = copy.deepcopy(start)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)

        def step(index, net=net, optimizer=optimizer):
            optimizer.zero_grad()
            _loss(net, _batch(index)).backward()
            optimizer.step()

        if one_context:
            with training_autocast("bfloat16", "cpu"):
                for index in range(3):
                    step(index)
        else:
            for index in range(3):
                with training_autocast("bfloat16", "cpu"):
                    step(index)
        results.append(net.state_dict())
    assert all(torch.equal(results[0][name], results[1][name]) for name in results[0])


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_same_seed_same_updates(precision):
    first, second = _net(), _net()
    _train(first, precision, steps=2), _train(second, precision, steps=2)
    assert all(torch.equal(value, second.state_dict()[name]) for name, value in first.state_dict().items())
