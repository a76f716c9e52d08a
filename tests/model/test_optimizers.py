"""Fused Adam's availability and the one-pass finite-norm check (no Ray)."""

import pytest
import torch

from rllib_synpo.utils.optimizers import finite_norm, fused_adam_options


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_finite_norm_spots_one_bad_element_among_many_tensors(bad):
    gradients = [torch.zeros(3, 4), None, torch.full((1000,), 1e15)]
    assert finite_norm(gradients)
    gradients[2][517] = bad
    assert not finite_norm(gradients)


def test_finite_norm_is_false_where_finite_gradients_overflow_it():
    # The caller then checks element by element (the learner hands over to RLlib's check).
    assert not finite_norm([torch.full((4,), 1e30)])


def test_finite_norm_of_no_gradients_is_true():
    assert finite_norm([]) and finite_norm([None])


def test_fused_adam_on_cpu_steps_as_the_per_tensor_adam():
    torch.manual_seed(0)
    nets = [torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)]
    nets[1].load_state_dict(nets[0].state_dict())
    options = fused_adam_options(nets[0].parameters())
    assert options == {"fused": True}
    optimizers = [
        torch.optim.Adam(nets[0].parameters(), weight_decay=1e-4, **options),
        torch.optim.Adam(nets[1].parameters(), weight_decay=1e-4),
    ]
    x = torch.randn(8, 5)
    for _ in range(3):
        for net, optimizer in zip(nets, optimizers):
            optimizer.zero_grad()
            net(x).square().sum().backward()
            optimizer.step()
    for fused, plain in zip(nets[0].parameters(), nets[1].parameters()):
        torch.testing.assert_close(fused, plain)


def test_no_fused_adam_for_a_device_without_its_kernels():
    assert fused_adam_options([torch.nn.Parameter(torch.zeros(2, device="meta"))]) == {}
