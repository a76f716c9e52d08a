"""The command a person uses to look at the gridworld, and the speed benchmark, end to end."""

import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)


def test_render_command_draws_map_png_and_expert(tmp_path):
    png = tmp_path / "maze.png"
    out = _run(
        "-m",
        "synpo_envs.gridworld",
        "--render",
        "--env-id",
        "2",
        "--task-id",
        "5",
        "--png",
        str(png),
        "--expert",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("env 2, task 5")
    assert sum(1 for line in lines if len(line) == 16 and line[0] == "#") == 16
    assert "success True" in out.stdout
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (256 * 2 + 8, 256)


def test_render_command_rejects_bad_ids_in_one_line():
    out = _run("-m", "synpo_envs.gridworld", "--render", "--task-id", "20")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (
        out.stderr.strip()
        == "error: pair (0, 20) out of range: env_id must be in [0, 20) and task_id in [0, 20)"
    )


def test_write_mazes_command(tmp_path):
    out = _run("-m", "synpo_envs.gridworld", "--write-mazes", str(tmp_path), "--count", "25")
    assert out.returncode == 0, out.stderr
    assert len(list(tmp_path.glob("*.txt"))) == 25


@pytest.mark.timeout(120)
def test_speed_benchmark_prints_every_figure():
    out = _run("benchmarks/gridworld_speed.py", "--seconds", "0.2", "--repeats", "1", "--num-envs", "64")
    assert out.returncode == 0, out.stderr
    for label in ("baseline", "single env", "batched N=64", "expert action", "stacked observation"):
        assert label in out.stdout
    assert "3,072 bytes uint8" in out.stdout
