"""The failure-breakdown benchmark reads a saved state dict and prints shares that add up."""

import re

import torch

from benchmarks.failure_breakdown import main
from rllib_synpo.networks import make_network


def test_shares_of_every_outcome_add_up(tmp_path, capsys):
    torch.manual_seed(0)
    net = make_network("synpo", obs_shape=(12, 16, 16), num_actions=5, num_envs=20, num_tasks=20, feature_dim=8)
    torch.save(net.state_dict(), tmp_path / "run.pt")
    assert main([str(tmp_path / "run.pt"), "--feature-dim", "8", "--episodes", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["seen", "unseen"]
    for line in lines:
        shares = [float(v) for v in re.findall(r"(-?[\d.]+)%", line)]
        assert len(shares) == 4 and abs(sum(shares) - 100) < 0.5, line
