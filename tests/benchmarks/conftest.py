"""A saved `benchmarks/learning_speed.py` run without its training: a freshly initialized
network of the run's command line, saved as RUN.pt beside the RUN.json that records it."""

import json

import pytest
import torch
from synpo_envs.gridworld import BatchedGridWorld

from benchmarks.learning_speed import _config, _parser
from rllib_synpo.direct import network_for


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
