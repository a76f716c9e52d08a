"""Optimizer helpers of the RLlib learners (Ray-free): fused Adam where
torch has its kernels, and one pass that says whether a set of gradients may hold a nan/inf."""

from __future__ import annotations

from collections.abc import Iterable

import torch

# Device types with torch's fused Adam kernels (one kernel for all parameters instead of a dozen
# elementwise ops per parameter).
FUSED_ADAM_DEVICE_TYPES = ("cpu", "cuda")


def fused_adam_options(params: Iterable[torch.nn.Parameter]) -> dict[str, bool]:
    """``{"fused": True}`` where every parameter lives on a device with fused Adam, else ``{}``."""
    return {"fused": True} if all(p.device.type in FUSED_ADAM_DEVICE_TYPES for p in params) else {}


def finite_norm(gradients: Iterable[torch.Tensor | None]) -> bool:
    """Whether the gradients' 2-norm is finite, in one reduction: always False when an element
    is nan or inf (they propagate), and also for finite gradients so large that the norm
    overflows, so False means "look element by element". (On CPU the 2-norm is much cheaper
    than the inf-norm, which would never overflow: results/learning_efficiency.md.)"""
    tensors = [g for g in gradients if g is not None]
    return not tensors or bool(torch.nn.utils.get_total_norm(tensors, 2.0).isfinite())
