"""The RLlib-throughput benchmark on a tiny experiment: one row per thread count and number of
updates per iteration, RLlib's rates against the bare update loop's, and a last line with the
smallest ratio; bad input ends in one ``error:`` line and exit status 2 before Ray starts."""

from pathlib import Path

import pytest
import yaml

from benchmarks import rllib_throughput
from benchmarks.rllib_throughput import main
from tests.rllib.conftest import TINY_MODEL

# Iterations of a fraction of a second; a small replay keeps filling it to capacity quick.
TINY_CONFIG = {
    "seed": 1,
    "states_per_update": 16,
    "updates_per_iteration": 2,
    "warmup_trajectories": 4,
    "replay_capacity": 32,
    "model_config": TINY_MODEL,
    "env_config": {"num_slots": 4, "gridworld": {"max_steps": 60}},
}


@pytest.fixture
def experiment_file(tmp_path):
    """``experiment_file(**config)``: an experiment file with one tiny `SynPo` experiment,
    ``config`` replacing entries of `TINY_CONFIG` (None removes one); ``experiments=`` writes
    that mapping instead."""

    def write(experiments: dict | None = None, **config) -> Path:
        if experiments is None:
            merged = {key: value for key, value in {**TINY_CONFIG, **config}.items() if value is not None}
            experiments = {"tiny": {"run": "SynPo", "env": "synpo_pairs", "config": merged}}
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump(experiments))
        return path

    return write


def _table(out: str) -> tuple[list[str], list[list[str]], str]:
    """(header words, row words without thousands separators, last line) of the output."""
    lines = out.splitlines()
    return lines[1].split(), [line.replace(",", "").split() for line in lines[2:-1]], lines[-1]


def test_prints_rllib_and_bare_rates_and_the_smallest_ratio(experiment_file, capsys):
    argv = ["--experiment", str(experiment_file()), "--seconds", "0.3", "--rounds", "2", "--threads", "1"]
    argv += ["--updates-per-iteration", "1", "3"]
    assert main(argv) == 0
    header, rows, last = _table(capsys.readouterr().out)
    assert header[:3] == ["threads", "updates", "rllib"] and header[-2:] == ["trained/s", "rllib/bare"]
    assert [row[:2] for row in rows] == [["1", "1"], ["1", "3"]]
    ratios = []
    for _threads, _updates, trained, collected, share, bare, ratio in rows:
        assert float(trained) > 0 and float(collected) > 0 and float(bare) > 0
        assert 0 < float(share.rstrip("%")) <= 100
        assert abs(float(ratio) - float(trained) / float(bare)) < 0.01
        ratios.append(float(ratio))
    word, value = last.split()
    assert word == "ratio" and float(value) == pytest.approx(min(ratios), abs=0.006)


def test_the_experiments_own_updates_per_iteration_by_default(experiment_file, capsys):
    assert main(["--experiment", str(experiment_file()), "--seconds", "0.2", "--threads", "1"]) == 0
    _, rows, last = _table(capsys.readouterr().out)
    assert [row[:2] for row in rows] == [["1", "2"]]
    assert last == f"ratio {float(rows[0][6]):.2f}"


# {case: (experiment_file's arguments, None for a missing file; extra arguments; the message)}
BAD_INPUT = {
    "seconds zero": ({}, ["--seconds", "0"], "--seconds must be > 0, got 0"),
    "seconds negative": ({}, ["--seconds", "-1"], "--seconds must be > 0, got -1"),
    "seconds not a number": ({}, ["--seconds", "x"], "argument --seconds: invalid float value: 'x'"),
    "threads zero": ({}, ["--threads", "1", "0"], "--threads must be >= 1, got 0"),
    "rounds zero": ({}, ["--rounds", "0"], "--rounds must be >= 1, got 0"),
    "updates zero": ({}, ["--updates-per-iteration", "0"], "--updates-per-iteration must be >= 1, got 0"),
    "no state batches": ({"states_per_update": None}, [], "set states_per_update"),
    "two experiments": (
        {"experiments": {"a": {"run": "SynPo"}, "b": {"run": "SynPo"}}},
        [],
        "expected one experiment, found ['a', 'b']",
    ),
    "not SynPo": (
        {"experiments": {"p": {"run": "PPO", "env": "CartPole-v1"}}},
        [],
        "expected run: SynPo, got 'PPO'",
    ),
    "bad setting": ({"replay_capacity": 0}, [], "replay_capacity"),
    "missing file": (None, [], "does not exist"),
}


@pytest.mark.parametrize("file_config, argv, message", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_error_line_and_status_2_before_ray(
    experiment_file, tmp_path, monkeypatch, capsys, file_config, argv, message
):
    def no_ray(num_cpus: int):
        raise AssertionError("Ray started")

    monkeypatch.setattr(rllib_throughput, "local_ray", no_ray)
    path = tmp_path / "missing.yaml" if file_config is None else experiment_file(**file_config)
    assert main(["--experiment", str(path), "--seconds", "0.1", "--threads", "1", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: ") and message in err
