"""The RLlib-throughput benchmark on a tiny experiment: one row per thread count."""

import pytest
import yaml

from benchmarks.rllib_throughput import main
from tests.rllib.conftest import TINY_MODEL


def test_prints_rllib_and_ray_free_rates(tiny_experiment, capsys):
    assert main(["--experiment", str(tiny_experiment), "--seconds", "0.5", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["threads", "updates", "rllib"]
    threads, updates, trained, collected, share, direct, ratio = lines[2].replace(",", "").split()
    assert threads == "1" and updates == "2"  # the experiment's own updates per iteration
    assert float(trained) > 0 and float(collected) > 0 and float(direct) > 0
    assert 0 < float(share.rstrip("%")) <= 100
    assert abs(float(ratio) - float(trained) / float(direct)) < 0.01


def test_one_row_per_number_of_updates_per_iteration(tiny_experiment, capsys):
    argv = ["--experiment", str(tiny_experiment), "--seconds", "0.5", "--threads", "1", "--updates-per-iteration", "1", "3"]
    assert main(argv) == 0
    rows = [line.replace(",", "").split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[1] for row in rows] == ["1", "3"]
    assert rows[0][5] == rows[1][5]  # one Ray-free measurement per thread count


def test_updates_per_iteration_below_one_is_refused(tiny_experiment):
    with pytest.raises(SystemExit, match="--updates-per-iteration must be >= 1, got 0"):
        main(["--experiment", str(tiny_experiment), "--seconds", "0.1", "--threads", "1", "--updates-per-iteration", "0"])


def test_an_experiment_without_state_batches_is_refused(tmp_path):
    experiment = tmp_path / "trajectories.yaml"
    experiment.write_text(yaml.safe_dump({"t": {"run": "SynPo", "env": "synpo_pairs", "config": {"model_config": TINY_MODEL}}}))
    with pytest.raises(SystemExit, match="set states_per_update"):
        main(["--experiment", str(experiment), "--seconds", "0.1", "--threads", "1"])
