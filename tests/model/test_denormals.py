"""Importing rllib_synpo leaves the float mode alone; evaluation (like the algorithms' setup and
the learners' build) switches its process to flush-to-zero unless told not to (checked in fresh
interpreters)."""

import os
import subprocess
import sys

import pytest

# Denormal inputs to an elementwise product on two torch threads: how many products stay non-zero.
NONZERO_PRODUCTS = (
    "import torch; torch.set_num_threads(2); {before}"
    "x = torch.full((1 << 20,), 1e-39); print(int((x * 1.0).count_nonzero()))"
)
# One greedy episode of a policy that always moves up (numpy only: torch starts no thread).
EVALUATE = (
    "import numpy as np; from rllib_synpo.evaluation import evaluate; "
    "evaluate(lambda obs: np.zeros(len(obs['env_id']), np.int64), [(0, 0)], 1); "
)


def _run(code: str, **env: str) -> int:
    environ = {k: v for k, v in os.environ.items() if k != "RLLIB_SYNPO_FLUSH_DENORMALS"} | env
    return int(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ
        ).stdout
    )


def _nonzero_products(before: str, **env: str) -> int:
    return _run(NONZERO_PRODUCTS.format(before=before), **env)


@pytest.fixture(scope="module")
def cpu_flushes():
    # Asked in a fresh interpreter: setting it here would change this process's mode.
    if _run("import torch; print(int(torch.set_flush_denormal(True)))") == 0:
        pytest.skip("this CPU has no flush-to-zero mode")


def test_denormals_survive_without_the_package(cpu_flushes):
    assert _nonzero_products("") == 1 << 20


def test_importing_the_package_changes_nothing(cpu_flushes):
    imports = "import rllib_synpo, rllib_synpo.evaluation, rllib_synpo.algorithms.synpo, rllib_synpo.cli; "
    assert _nonzero_products(imports) == 1 << 20


def test_evaluation_flushes_denormals(cpu_flushes):
    assert _nonzero_products(EVALUATE) == 0


def test_the_variable_at_zero_leaves_the_mode_alone(cpu_flushes):
    assert _nonzero_products(EVALUATE, RLLIB_SYNPO_FLUSH_DENORMALS="0") == 1 << 20
    assert _nonzero_products(EVALUATE, RLLIB_SYNPO_FLUSH_DENORMALS="1") == 0


def test_another_value_of_the_variable_is_refused():
    process = subprocess.run(
        [sys.executable, "-c", EVALUATE],
        capture_output=True,
        text=True,
        env={**os.environ, "RLLIB_SYNPO_FLUSH_DENORMALS": "off"},
    )
    assert process.returncode != 0
    assert (
        "RLLIB_SYNPO_FLUSH_DENORMALS='off': expected 1 (flush denormals to zero, the default) or 0"
        in process.stderr
    )
