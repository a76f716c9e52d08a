"""Transfer (settings 2/3): new embedding rows for a new maze and an unseen task learn from one
demonstration per pair while everything else stays bit-identical; the `rllib synpo adapt` verb."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.rllib.conftest import tiny_config

NEW_TASK = 19


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def checkpoint(ray_session, tmp_path_factory) -> Path:
    """Tiny SynPo trained on every pair but task 19's (so task 19 is new)."""
    from synpo_envs.splits import Split

    seen = tuple((e, t) for e in range(20) for t in range(20) if t != NEW_TASK)
    algo = tiny_config(split=Split(20, 20, seen, name="no_task_19")).build_algo()
    try:
        algo.train()
        return Path(algo.save_to_path(tmp_path_factory.mktemp("imitation") / "ckpt"))
    finally:
        algo.stop()


@pytest.fixture(scope="module")
def maze_file(tmp_path_factory) -> Path:
    from synpo_envs.gridworld.mazes import builtin_mazes, generate_maze

    maze = generate_maze(np.random.default_rng(7), name="brought")
    assert maze not in builtin_mazes()
    path = tmp_path_factory.mktemp("mazes") / "brought.txt"
    path.write_text(maze.to_text())
    return path


def _config(maze_file, **knobs):
    from rllib_synpo.adapt import AdaptConfig

    return AdaptConfig(**{"setting": 2, "iterations": 20, "batch_size": 32, "episodes_per_pair": 1, "new_mazes": [str(maze_file)], **knobs})


def test_only_the_new_rows_learn(checkpoint, maze_file):
    from ray.rllib.core.rl_module.rl_module import RLModule

    from rllib_synpo.adapt import collect_demonstrations, prepare, train_new_embeddings

    original = RLModule.from_checkpoint(checkpoint / "learner_group" / "learner" / "rl_module" / "synpo").net.state_dict()
    adaptation = prepare(checkpoint, _config(maze_file))
    assert adaptation.ids.envs == (20,) and adaptation.ids.tasks == (NEW_TASK,)
    # Setting 2: the new maze with the 19 old tasks, the 20 old mazes with the new task.
    assert len(adaptation.demonstrated) == 19 + 20
    net = adaptation.module.net
    initial = {k: v.clone() for k, v in net.state_dict().items()}
    assert initial["env_embedding.weight"].shape[0] == 21 and initial["task_embedding.weight"].shape[0] == 20
    assert [p.shape for p in net.parameters() if p.requires_grad] == [(21, 8), (20, 8)]

    demos = collect_demonstrations(adaptation.demonstrated, adaptation.world, seed=0)
    assert set(zip(demos["env_id"].tolist(), demos["task_id"].tolist())) == set(adaptation.demonstrated)
    log = train_new_embeddings(adaptation.module, demos, _config(maze_file), adaptation.trainable)
    assert log[-1]["iteration"] == 20 and np.isfinite(log[-1]["total_loss"])

    after = net.state_dict()
    for key, value in after.items():
        if key not in ("env_embedding.weight", "task_embedding.weight"):
            assert torch.equal(value, original[key]), key  # frozen, buffers included
    assert torch.equal(after["env_embedding.weight"][:20], original["env_embedding.weight"])
    old_tasks = [t for t in range(20) if t != NEW_TASK]
    assert torch.equal(after["task_embedding.weight"][old_tasks], original["task_embedding.weight"][old_tasks])
    assert not torch.equal(after["env_embedding.weight"][20], initial["env_embedding.weight"][20])
    assert not torch.equal(after["task_embedding.weight"][NEW_TASK], initial["task_embedding.weight"][NEW_TASK])
    # Seeded: the same seed draws the same new rows.
    again = prepare(checkpoint, _config(maze_file)).module.net.state_dict()
    assert torch.equal(again["env_embedding.weight"], initial["env_embedding.weight"])


def test_quadrants_match_the_transfer_splits():
    from synpo_envs.splits import transfer_split

    from rllib_synpo.adapt import new_ids

    for setting in (2, 3):
        split = transfer_split(setting)
        ids = new_ids(split.seen, 20, 20, 0)
        assert ids.envs == tuple(range(10, 20)) and ids.tasks == tuple(range(10, 20))
        assert sorted(ids.demonstrated_pairs(setting)) == sorted(split.adapt)


def test_the_adapt_verb_writes_the_table_and_heatmaps(checkpoint, maze_file, tmp_path, capsys):
    from rllib_synpo.cli import main

    out = tmp_path / "adapted"
    code = main(["synpo", "adapt", str(checkpoint), "--setting", "2", "--new-maze", str(maze_file),
                 "--iterations", "10", "--batch-size", "32", "--episodes-per-pair", "1", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "new environments [20], new tasks [19], 39 demonstrated pairs" in printed and "Q pairs" in printed
    assert "iteration 10/10: policy loss" in printed  # progress while the embeddings learn
    table = pd.read_csv(out / "transfer_table.csv")
    assert list(table.columns) == ["cross (Q env, P task)", "cross (P env, Q task)", "Q pairs"]
    assert 0 <= table.iloc[0, 0] <= 100 and 0 <= table.iloc[0, 2] <= 100
    matrix = pd.read_csv(out / "success_matrix.csv", index_col=0)
    assert matrix.shape == (21, 20) and matrix.notna().all().all()
    for name in ("heatmap.png", "heatmap_demonstrated.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["new_envs"] == [20] and summary["new_tasks"] == [NEW_TASK]
    state = torch.load(out / "adapted_network.pt")
    assert state["env_embedding.weight"].shape == (21, 8)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--setting", "4"], "setting must be one of (2, 3), got 4"),
        (["--setting", "3"], "setting 3 needs new environments and new tasks; new environments [], new tasks [19]"),
        (["--setting", "2", "--iterations", "-1"], "iterations must be an integer >= 0"),
        (["--setting", "2", "--new-maze", "/nonexistent/maze.txt"], "maze file '/nonexistent/maze.txt' does not exist"),
        (["--setting", "2", "--new-maze", "BUILTIN"], "is the same maze as environment 0"),
    ],
)
def test_bad_requests_give_one_line_errors(checkpoint, tmp_path, capsys, args, message):
    from synpo_envs.gridworld.mazes import builtin_mazes

    from rllib_synpo.cli import main

    if "BUILTIN" in args:
        (tmp_path / "copy.txt").write_text(builtin_mazes()[0].to_text())
        args = [str(tmp_path / "copy.txt") if a == "BUILTIN" else a for a in args]
    assert main(["synpo", "adapt", str(checkpoint), *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_not_a_checkpoint_is_named(tmp_path, capsys):
    from rllib_synpo.cli import main

    assert main(["synpo", "adapt", str(tmp_path), "--setting", "2"]) == 2
    assert "is not a SynPo checkpoint and holds none" in capsys.readouterr().err


def test_capacity_benchmark_relearns_known_rows(checkpoint, tmp_path, capsys):
    from benchmarks.adapt_capacity import main

    out = tmp_path / "capacity.json"
    assert main([str(checkpoint), "--known", "0", "--iterations", "5", "--episodes", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert "new" not in result  # every maze was trained, so no new group
    known = result["known"]
    assert known["envs"] == [0] and known["pairs"] == 19 and known["demonstration_states"] > 19
    for key in ("demonstration_accuracy", "avg_success_rate_before", "avg_success_rate_after"):
        assert 0 <= known[key] <= 1, key
    assert "known envs [0]: demonstration accuracy" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"--new: environments \[3\] are in the checkpoint's seen pairs"):
        main([str(checkpoint), "--new", "3", "--known"])
    with pytest.raises(SystemExit, match=r"--known: environments \[20\] are not ids of the checkpoint's 20 mazes \(0..19\)"):
        main([str(checkpoint), "--known", "20"])
