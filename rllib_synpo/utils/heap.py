"""Returning the free memory of the C heap to the operating system.

An evaluation steps thousands of episodes at once, and its large temporary arrays, once freed,
raise glibc's threshold for serving allocations from their own memory maps (up to 32 MB). The
training's arrays and tensors below it then come from the heap, between long-lived
allocations, and the heap's free space grows with every evaluation: in the tuned example's training with an
evaluation every 100 iterations, the process's resident memory reached 2.10 GB by iteration 800
without `release_free_heap` after each evaluation, 1.39 GB with it
(`benchmarks/training_memory.py`; results/learning_efficiency.md, "Memory of a long run").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import platform


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim


def release_free_heap() -> bool:
    """Gives the heap's free pages back to the operating system (glibc's ``malloc_trim(0)``,
    8-33 ms for a training run's heap); whether the C library offers it (elsewhere a no-op)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def resident_memory_mb() -> float:
    """This process's resident memory (RSS) in MiB, from Linux's /proc."""
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024
