"""A run's network rebuilt from its RUN.json: the run's sizes and options, refused clearly when
the record is missing or does not describe the weights."""

import json

import pytest
import torch

from benchmarks.saved_run import load_run


def test_the_network_comes_from_the_recorded_command_line(saved_run):
    weights = saved_run("--feature-dim", "16", "--normalize-embeddings", "--batch-norm", "--pairs", "0:0,0:1,1:1")
    run = load_run(weights)
    net = run.network()
    assert net.normalize_embeddings and not net.training
    assert any(isinstance(module, torch.nn.BatchNorm2d) for module in net.modules())
    assert all(torch.equal(v, torch.load(weights)[k]) for k, v in net.state_dict().items())
    assert run.seen_pairs == [(0, 0), (0, 1), (1, 1)] and run.config.feature_dim == 16 and run.config.device == "cpu"


def test_weights_of_another_network_are_refused_naming_the_file(saved_run):
    weights = saved_run("--feature-dim", "16")
    weights.with_suffix(".json").write_text(json.dumps({"argv": ["benchmarks/learning_speed.py", "--feature-dim", "32"]}))
    with pytest.raises(SystemExit, match=r"run\.pt: Error\(s\) in loading state_dict"):
        load_run(weights).network()


def test_a_missing_or_foreign_record_is_named(saved_run):
    weights = saved_run("--feature-dim", "16")
    weights.with_suffix(".json").write_text(json.dumps({"config": {}}))
    with pytest.raises(SystemExit, match=r"run\.json has no 'argv' list"):
        load_run(weights)
    weights.with_suffix(".json").unlink()
    with pytest.raises(SystemExit, match=r"run\.json not found"):
        load_run(weights)
