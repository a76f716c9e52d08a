"""Mixed precision of the training forward pass (Ray-free: the RLlib learner's, and any loop
over the same network).

"bfloat16" runs the forward pass under ``torch.autocast`` (convolutions and matrix products in
bfloat16, losses and reductions in float32; the weights, the optimizer and the backward's
accumulation stay float32). On a CPU with native bfloat16 (AVX512-BF16 or AMX) an update of the
tuned example's network takes about half the time; without it bfloat16 is emulated and slower
than float32, so "float32" is the default and "auto" picks bfloat16 only where it is native.
"""

from __future__ import annotations

import contextlib

import torch

from rllib_synpo.utils.checks import Rule, one_of

PRECISIONS = ("float32", "bfloat16", "auto")
PRECISION: Rule = one_of(PRECISIONS)  # the check of a config's ``precision``


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """``precision`` with "auto" made "bfloat16" where ``device`` computes it natively, else
    "float32"."""
    if precision == "auto":
        return "bfloat16" if native_bfloat16(device) else "float32"
    return precision


def training_autocast(precision: str, device: torch.device | str) -> contextlib.AbstractContextManager:
    """The context of training at ``precision`` on ``device``: one or more updates (forward
    passes, backwards and optimizer steps). Autocast's cache of the parameters' bfloat16 copies
    is off: with it, every update after the first in one context would run its forward pass on
    the copies the first one made, i.e. on stale weights."""
    if resolve_precision(precision, device) == "float32":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16, cache_enabled=False)


def native_bfloat16(device: torch.device | str = "cpu") -> bool:
    """Whether ``device`` computes bfloat16 natively (where "bfloat16" pays off)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
