"""`release_free_heap`: the heap's free pages go back to the operating system."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rllib_synpo.utils import heap

CHUNK_BYTES = 100_000  # under glibc's initial mmap threshold (128 KiB): served from the heap
PIN_BYTES = 2_000  # small, long-lived allocations between the chunks keep the heap from shrinking
CHUNKS = 2_000  # ~200 MB

# Run in a fresh interpreter: in the test process the heap's state (holes left by earlier
# tests, a raised mmap threshold) decides where the chunks go.
FRAGMENT_AND_RELEASE = f"""
import json
import numpy as np
from rllib_synpo.utils.heap import release_free_heap, resident_memory_mb

chunks, pins = [], []
for _ in range({CHUNKS}):
    chunks.append(np.ones({CHUNK_BYTES}, np.uint8))  # ones: the pages are touched, so resident
    pins.append(np.ones({PIN_BYTES}, np.uint8))
del chunks  # free, but trapped between the pins: the heap keeps it
freed = resident_memory_mb()
released = release_free_heap()
print(json.dumps({{"freed": freed, "after": resident_memory_mb(), "released": released}}))
"""


@pytest.mark.skipif(heap._malloc_trim() is None, reason="malloc_trim is glibc's")
def test_release_free_heap_returns_fragmented_free_memory() -> None:
    out = subprocess.run(
        [sys.executable, "-c", FRAGMENT_AND_RELEASE], check=True, capture_output=True, text=True
    ).stdout
    result = json.loads(out)
    assert result["released"] is True
    assert result["freed"] - result["after"] > 0.5 * CHUNKS * CHUNK_BYTES / 2**20, result


def test_release_free_heap_is_a_no_op_without_glibc(monkeypatch) -> None:
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(heap.platform, "libc_ver", lambda: ("musl", "1.2"))
    try:
        assert heap.release_free_heap() is False
    finally:
        heap._malloc_trim.cache_clear()
