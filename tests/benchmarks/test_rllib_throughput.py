"""The RLlib-throughput benchmark on a tiny experiment: one row per thread count."""

import pytest
import yaml

from benchmarks.rllib_throughput import main
from tests.rllib.conftest import TINY_MODEL


def test_prints_rllib_and_ray_free_rates(tiny_experiment, capsys):
    assert main(["--experiment", str(tiny_experiment), "--seconds", "0.5", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:2] == ["threads", "rllib"]
    threads, trained, collected, share, direct, ratio = lines[2].replace(",", "").split()
    assert threads == "1" and float(trained) > 0 and float(collected) > 0 and float(direct) > 0
    assert 0 < float(share.rstrip("%")) <= 100
    assert abs(float(ratio) - float(trained) / float(direct)) < 0.01


def test_an_experiment_without_state_batches_is_refused(tmp_path):
    experiment = tmp_path / "trajectories.yaml"
    experiment.write_text(yaml.safe_dump({"t": {"run": "SynPo", "env": "synpo_pairs", "config": {"model_config": TINY_MODEL}}}))
    with pytest.raises(SystemExit, match="set states_per_update"):
        main(["--experiment", str(experiment), "--seconds", "0.1", "--threads", "1"])
