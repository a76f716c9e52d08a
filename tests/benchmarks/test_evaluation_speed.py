"""The evaluation-speed benchmark on freshly initialized weights, one episode per pair (the
results' equality with running episodes out is tested in tests/model/test_evaluation.py)."""

import torch
from synpo_envs.gridworld import BatchedGridWorld

from benchmarks.evaluation_speed import main
from rllib_synpo.budgeted import best_recipe
from rllib_synpo.direct import network_for


def test_prints_the_timing_of_a_full_evaluation(tmp_path, capsys):
    torch.manual_seed(0)
    weights = tmp_path / "net.pt"
    torch.save(network_for(best_recipe(feature_dim=32), BatchedGridWorld(1).grid_spec).state_dict(), weights)
    assert main([str(weights), "--episodes", "1", "--threads", "1", "--feature-dim", "32"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("loops ended early") and "400 episodes" in line
    assert float(line.split()[3]) > 0
