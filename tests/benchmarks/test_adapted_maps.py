"""The adapted-maps benchmark names the cells of a new maze's wall map that read wrong."""

import json

import numpy as np
import pytest
import torch

from benchmarks.adapted_maps import main


def test_names_the_walls_no_demonstration_showed(module_checkpoint, tmp_path, capsys):
    from synpo_envs.gridworld.mazes import generate_maze

    from rllib_synpo.adaptation import AdaptConfig, adapt_checkpoint

    maze_file = tmp_path / "new.txt"
    maze = generate_maze(np.random.default_rng(7), name="new")
    maze_file.write_text(maze.to_text())
    # One Adam step on every demonstration state from maps at 0 (an untrained network's mean):
    # each cell a window showed moves towards what it showed, every other cell stays at 0 and
    # reads as floor. So the wrong cells are the walls no window showed, and only those.
    config = AdaptConfig(
        setting=2, iterations=1, batch_size=100_000, episodes_per_pair=1, new_mazes=[str(maze_file)]
    )
    adapt_checkpoint(module_checkpoint(maze_map=True), config, out=tmp_path / "adapted")
    assert main([str(tmp_path / "adapted"), "--out", str(tmp_path / "maps.json")]) == 0
    (row,) = json.loads((tmp_path / "maps.json").read_text())["mazes"]
    assert row["env"] == 20 and 0 <= row["avg_success_rate_old_tasks"] <= 100
    wrong = row["wrong_cells"]
    assert wrong and all(c["truth"] == "wall" and not c["shown"] and c["logit"] == 0 for c in wrong)
    assert all(maze.walls[r, c] for r, c in (cell["cell"] for cell in wrong))
    line = capsys.readouterr().out.strip()
    assert line.startswith("env 20  AvgSR (old tasks)") and f"wrong cells {len(wrong)}: " in line
    assert line.count("wall read as floor (logit 0.0, never shown)") == len(wrong)


def test_refuses_a_network_without_maps(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"config": {"setting": 2}}))
    torch.save({"env_embedding.weight": torch.zeros(1)}, tmp_path / "adapted_network.pt")
    with pytest.raises(SystemExit, match="has no wall maps"):
        main([str(tmp_path)])
