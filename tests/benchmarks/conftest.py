"""A saved `benchmarks/learning_speed.py` run without its training (a freshly initialized
network of the run's command line, saved as RUN.pt beside the RUN.json that records it), and
a tiny SynPo experiment file."""

import json

import pytest
import torch
import yaml
from synpo_envs.gridworld import BatchedGridWorld

from benchmarks.learning_speed import _config, _parser
from rllib_synpo.direct import network_for
from tests.rllib.conftest import TINY_MODEL


@pytest.fixture
def saved_run(tmp_path):
    def save(*run_argv: str, name: str = "run"):
        torch.manual_seed(0)
        config = _config(_parser().parse_args(list(run_argv)))
        net = network_for(config, BatchedGridWorld(1, **config.env_kwargs).grid_spec)
        weights = tmp_path / f"{name}.pt"
        torch.save(net.state_dict(), weights)
        weights.with_suffix(".json").write_text(json.dumps({"argv": ["benchmarks/learning_speed.py", *run_argv]}))
        return weights

    return save


@pytest.fixture
def tiny_experiment(tmp_path):
    """An experiment file with one tiny `SynPo` experiment (seconds per iteration)."""
    experiment = tmp_path / "tiny.yaml"
    config = {
        "seed": 1, "states_per_update": 16, "updates_per_iteration": 2, "warmup_trajectories": 4,
        "model_config": TINY_MODEL, "env_config": {"num_slots": 4, "gridworld": {"max_steps": 60}},
    }
    experiment.write_text(yaml.safe_dump({"tiny": {"run": "SynPo", "env": "synpo_pairs", "config": config}}))
    return experiment
