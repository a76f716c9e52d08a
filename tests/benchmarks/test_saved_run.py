"""A run's network rebuilt from its RUN.json (a learning_speed.py command line or a reproduction
study's settings): the run's sizes and options, refused clearly when the record is missing or
does not describe the weights."""

import dataclasses
import json

import pytest
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.splits import Split

from benchmarks.saved_run import load_run
from rllib_synpo.budgeted import Budget, best_recipe
from rllib_synpo.direct import network_for
from rllib_synpo.study_runs import RunSpec


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
    with pytest.raises(SystemExit, match=r"run\.json has no 'argv' list nor 'settings'"):
        load_run(weights)
    weights.with_suffix(".json").unlink()
    with pytest.raises(SystemExit, match=r"run\.json not found"):
        load_run(weights)


def test_a_reproduction_study_run_comes_from_its_settings(tmp_path):
    split = Split(3, 2, ((0, 0), (1, 1), (2, 0)), name="tiny")  # not the gridworld's 20 x 20
    config = best_recipe(network="mtl", feature_dim=16, embedding_dim=8)
    spec = RunSpec(name="mtl_seed0", group="mtl", seed=0, config=config, split=split, budget=Budget(1.0, 0.5))
    torch.manual_seed(0)
    weights = tmp_path / "mtl_seed0.pt"
    torch.save(network_for(config, BatchedGridWorld(1, **config.env_kwargs).grid_spec).state_dict(), weights)
    spec.result_path(tmp_path).write_text(json.dumps({"name": spec.name, "settings": spec.settings()}))
    run = load_run(weights)
    assert run.config == dataclasses.replace(config, device="cpu")
    assert run.split == split and run.seen_pairs == list(split.seen)
    assert all(torch.equal(v, torch.load(weights)[k]) for k, v in run.network().state_dict().items())
    spec.result_path(tmp_path).write_text(json.dumps({"settings": {"config": {}}}))
    with pytest.raises(SystemExit, match=r"mtl_seed0\.json: malformed study settings"):
        load_run(weights)
