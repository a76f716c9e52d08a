"""The repository's lint: ``ruff check`` and ``ruff format --check`` are clean (settings in
pyproject.toml), so CI's test command also lints."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    process = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert process.returncode == 0, process.stdout + process.stderr
