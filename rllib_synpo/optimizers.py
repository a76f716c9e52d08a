"""Optimizer helpers shared by the RLlib learners and the Ray-free trainer: fused Adam where
torch has its kernels, and one pass that says whether a set of gradients is finite."""

from __future__ import annotations

from collections.abc import Iterable

import torch

# Device types with torch's fused Adam kernels (one kernel for all parameters instead of a dozen
# elementwise ops per parameter).
FUSED_ADAM_DEVICE_TYPES = ("cpu", "cuda")


def fused_adam_options(params: Iterable[torch.nn.Parameter]) -> dict[str, bool]:
    """``{"fused": True}`` where every parameter lives on a device with fused Adam, else ``{}``."""
    return {"fused": True} if all(p.device.type in FUSED_ADAM_DEVICE_TYPES for p in params) else {}


def all_finite(gradients: Iterable[torch.Tensor | None]) -> bool:
    """Whether no gradient holds a nan or inf, in one reduction: each tensor's largest absolute
    value (nan propagates through it, a finite value cannot overflow it)."""
    tensors = [g for g in gradients if g is not None]
    return not tensors or bool(torch.nn.utils.get_total_norm(tensors, float("inf")).isfinite())
