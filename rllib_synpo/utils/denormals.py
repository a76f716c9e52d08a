"""Flush-to-zero for the process's float math: denormal floats (magnitudes below 1.18e-38) are
read and written as zero.

Weight decay drives the weights of hidden units that no longer learn (most of the coefficient
MLPs' units) towards zero, into the denormal range, where x86 CPUs compute every operation on
them many times more slowly: after an hour of training, 19% of the weights were denormal and a
float32 forward pass took 6x as long (results/learning_efficiency.md, "Denormal weights"). The
mode belongs to each thread, and a new thread inherits it from the one that starts it, so SynPo
sets it where its networks compute, before torch starts its OpenMP threads there: `SynPo.setup`
and `SynPoPPO.setup` (the trial's process, which hosts the local learner and env runner), the
learners' ``build`` (remote learners), the PPO env runners, adaptation and evaluation. Importing
the package changes nothing. Threads started earlier may keep their mode (a product with
denormal weights: 796 ms unflushed, 448 ms with the mode set after torch's threads had started,
8 ms set before). TensorFlow sets the same mode in its thread pools.
A process whose other code needs denormals sets ``RLLIB_SYNPO_FLUSH_DENORMALS=0`` (Ray's workers
started from it inherit the variable).
"""

from __future__ import annotations

import os

FLUSH_DENORMALS_VARIABLE = "RLLIB_SYNPO_FLUSH_DENORMALS"
FLUSH_DENORMALS_VALUES = {"1": True, "0": False}


class DenormalsSettingError(ValueError):
    """``RLLIB_SYNPO_FLUSH_DENORMALS`` set to neither 1 nor 0."""


def flush_denormals_wanted() -> bool:
    """Whether SynPo should flush denormals: ``RLLIB_SYNPO_FLUSH_DENORMALS`` unset or 1."""
    value = os.environ.get(FLUSH_DENORMALS_VARIABLE, "1").strip()
    if value not in FLUSH_DENORMALS_VALUES:
        raise DenormalsSettingError(
            f"{FLUSH_DENORMALS_VARIABLE}={value!r}: expected 1 (flush denormals to zero, the default) "
            "or 0 (leave the float mode alone)"
        )
    return FLUSH_DENORMALS_VALUES[value]


def flush_denormals() -> bool:
    """Sets flush-to-zero and denormals-are-zero for this thread and the threads it starts from
    now on; whether the CPU has the mode (x86 with SSE3; elsewhere nothing changes)."""
    import torch  # here: the command line checks the variable before it loads torch

    return torch.set_flush_denormal(True)


def flush_denormals_where_wanted() -> bool:
    """`flush_denormals` unless ``RLLIB_SYNPO_FLUSH_DENORMALS=0``; whether the mode is now set."""
    return flush_denormals_wanted() and flush_denormals()
