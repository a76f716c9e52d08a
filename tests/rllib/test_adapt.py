"""Transfer (settings 2/3): new embedding rows for a new maze and an unseen task learn from one
demonstration per pair while everything else stays bit-identical; the `rllib synpo adapt` verb."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tests.rllib.conftest import TINY_MODEL, tiny_config

NEW_TASK = 19
LOSS_NAMES = ("policy_loss", "reward_loss", "env_disentangle_loss", "task_disentangle_loss", "total_loss")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


BATCH_NORM_MODEL = {**TINY_MODEL, "encoder_kwargs": {"width": 4, "batch_norm": True}}
EMBEDDINGS = ("net.env_embedding.weight", "net.task_embedding.weight")
MODULE_PATH = Path("learner_group") / "learner" / "rl_module" / "synpo"  # in an algorithm checkpoint


def _trained_checkpoint(path: Path, model_config: dict, seen, name: str) -> Path:
    """A tiny SynPo of ``model_config`` trained one iteration on the ``seen`` pairs, saved at
    ``path``."""
    from synpo_envs.splits import Split

    config = tiny_config(split=Split(20, 20, tuple(seen), name=name))
    config.rl_module(model_config=model_config)
    algo = config.build_algo()
    try:
        algo.train()
        return Path(algo.save_to_path(path))
    finally:
        algo.stop()


@pytest.fixture(scope="module")
def checkpoint(ray_session, tmp_path_factory) -> Path:
    """Tiny SynPo (with BatchNorm, whose running statistics must not move) trained on every
    pair but task 19's (so task 19 is new)."""
    seen = [(e, t) for e in range(20) for t in range(20) if t != NEW_TASK]
    return _trained_checkpoint(
        tmp_path_factory.mktemp("imitation") / "ckpt", dict(BATCH_NORM_MODEL), seen, "no_task_19"
    )


@pytest.fixture(scope="module")
def maze_file(tmp_path_factory) -> Path:
    from synpo_envs.gridworld.mazes import builtin_mazes, generate_maze

    maze = generate_maze(np.random.default_rng(7), name="brought")
    assert maze not in builtin_mazes()
    path = tmp_path_factory.mktemp("mazes") / "brought.txt"
    path.write_text(maze.to_text())
    return path


def _config(maze_file, **knobs):
    from rllib_synpo.adaptation import AdaptConfig

    defaults = {"setting": 2, "iterations": 20, "batch_size": 32, "episodes_per_pair": 1}
    defaults["new_mazes"] = [str(maze_file)]
    return AdaptConfig(**{**defaults, **knobs})


def _state(module) -> dict[str, torch.Tensor]:
    return {key: value.detach().clone() for key, value in module.state_dict().items()}


def _adapted(checkpoint, maze_file):
    """(prepared adaptation, its state before learning, the learner's log) of `_config`."""
    from rllib_synpo.adaptation import collect_demonstrations, learn_rows, prepare

    config = _config(maze_file)
    adaptation = prepare(checkpoint, config)
    initial = _state(adaptation.module)
    demos = collect_demonstrations(adaptation.demonstrated, adaptation.world, seed=config.seed)
    assert set(zip(demos["env_id"].tolist(), demos["task_id"].tolist())) == set(adaptation.demonstrated)
    rows = adaptation.ids.rows()
    log = learn_rows(adaptation.module, rows, demos, adaptation.world, config, split=adaptation.split)
    return adaptation, initial, log


def test_only_the_new_rows_learn(checkpoint, maze_file):
    from ray.rllib.core.rl_module.rl_module import RLModule

    original = _state(RLModule.from_checkpoint(checkpoint / MODULE_PATH))
    assert sum("running_mean" in key for key in original) == 4  # BatchNorm: its statistics are checked too
    adaptation, initial, log = _adapted(checkpoint, maze_file)
    assert adaptation.ids.envs == (20,) and adaptation.ids.tasks == (NEW_TASK,)
    assert adaptation.ids.rows() == {"env_embedding": (20,), "task_embedding": (NEW_TASK,)}
    # Setting 2: the new maze with the 19 old tasks, the 20 old mazes with the new task.
    assert len(adaptation.demonstrated) == 19 + 20
    assert initial[EMBEDDINGS[0]].shape == (21, 8) and initial[EMBEDDINGS[1]].shape == (20, 8)
    assert [row["iteration"] for row in log] == [20]  # logged every 100 iterations and at the last
    assert set(log[-1]) == {"iteration", *LOSS_NAMES, "action_accuracy"}
    assert np.isfinite(log[-1]["total_loss"])
    assert 0 <= log[-1]["action_accuracy"] <= 1

    after = adaptation.module.state_dict()
    assert set(after) == set(original)
    for key, value in after.items():
        if key not in EMBEDDINGS:
            assert torch.equal(value, original[key]), key  # frozen, BatchNorm's running statistics included
    old_tasks = [t for t in range(20) if t != NEW_TASK]
    assert torch.equal(after[EMBEDDINGS[0]][:20], original[EMBEDDINGS[0]])
    assert torch.equal(after[EMBEDDINGS[1]][old_tasks], original[EMBEDDINGS[1]][old_tasks])
    # The new rows were drawn afresh, then learnt.
    assert not torch.equal(initial[EMBEDDINGS[1]][NEW_TASK], original[EMBEDDINGS[1]][NEW_TASK])
    assert not torch.equal(after[EMBEDDINGS[0]][20], initial[EMBEDDINGS[0]][20])
    assert not torch.equal(after[EMBEDDINGS[1]][NEW_TASK], initial[EMBEDDINGS[1]][NEW_TASK])
    # Seeded: the same seed draws the same rows and learns the same values.
    again, again_initial, again_log = _adapted(checkpoint, maze_file)
    assert again_log == log
    for key, value in again.module.state_dict().items():
        assert torch.equal(value, after[key]) and torch.equal(again_initial[key], initial[key]), key


def test_new_environments_can_start_from_the_unknown_environment(ray_session, maze_file, tmp_path):
    """A network trained with env_dropout: ``new_env_rows: unknown`` starts each new
    environment's row at its unknown-environment embedding, where its policy is the one it
    learnt for environments it cannot tell."""
    from rllib_synpo.adaptation import collect_demonstrations, prepare

    seen = [(e, t) for e in range(20) for t in range(20) if t != NEW_TASK]
    model_config = {**TINY_MODEL, "normalize_embeddings": True, "env_dropout": 0.5}
    path = _trained_checkpoint(tmp_path / "ckpt", model_config, seen, "no_task_19")
    random_start = prepare(path, _config(maze_file)).module.net
    adaptation = prepare(path, _config(maze_file, new_env_rows="unknown"))
    unknown_start = adaptation.module.net
    unknown = unknown_start.unknown_env.detach()
    assert torch.equal(unknown_start.env_embedding.weight[20], unknown)
    assert not torch.equal(random_start.env_embedding.weight[20], unknown)
    assert torch.equal(unknown_start.env_embedding.weight[:20], random_start.env_embedding.weight[:20])
    # The new maze's policy is then the unknown environment's.
    demos = collect_demonstrations([(20, 0), (20, 1)], adaptation.world, seed=0)
    obs, tasks = torch.as_tensor(demos["obs"]), torch.as_tensor(demos["task_id"])
    unknown_start.eval()
    new_maze = unknown_start(obs, torch.full_like(tasks, 20), tasks).logits
    assert torch.equal(new_maze, unknown_start(obs, torch.full_like(tasks, -1), tasks).logits)


def test_a_new_mazes_wall_map_starts_from_the_trained_mean_and_learns(ray_session, maze_file, tmp_path):
    """A network with wall maps (``maze_map``): adaptation grows the map table too; the new
    maze's map row starts at the trained mazes' mean and learns, with the other new rows, from
    the demonstrations, while every old row stays as it was."""
    from rllib_synpo.adaptation import collect_demonstrations, learn_rows, prepare

    seen = [(e, t) for e in range(19) for t in range(20) if t != NEW_TASK]
    path = _trained_checkpoint(
        tmp_path / "ckpt", {**TINY_MODEL, "maze_map": True}, seen, "no_task_19_no_env_19"
    )
    adapt_config = _config(maze_file)
    adaptation = prepare(path, adapt_config)
    net = adaptation.module.net
    assert adaptation.ids.envs == (19, 20)
    rows = adaptation.ids.rows(("env_embedding", "maze_map"))
    assert rows["maze_map"] == (19, 20)
    before = net.maze_map.weight.detach().clone()
    assert before.shape == (21, 256)
    trained_mean = before[:19].mean(0)
    assert before[:19].any()  # the P model's maps learnt
    assert torch.equal(before[19], trained_mean) and torch.equal(before[20], trained_mean)
    demos = collect_demonstrations(adaptation.demonstrated, adaptation.world, seed=0)
    log = learn_rows(adaptation.module, rows, demos, adaptation.world, adapt_config, split=adaptation.split)
    assert np.isfinite(log[-1]["maze_map_loss"])
    after = adaptation.module.net.maze_map.weight.detach()
    assert torch.equal(after[:19], before[:19])
    assert not torch.equal(after[19], before[19]) and not torch.equal(after[20], before[20])


def test_the_learner_trains_only_the_listed_rows():
    """`ADAPT_ROWS_KEY` on a hand-made batch: after updates only the listed rows differ; BatchNorm
    keeps its statistics (while the same learner without the key moves them)."""
    from synpo_envs.gridworld import BatchedGridWorld

    from rllib_synpo import SynPoConfig
    from rllib_synpo.algorithms.synpo.synpo import learner_batch
    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import ADAPT_ROWS_KEY

    pairs = [(3, 1), (3, 2), (0, 1), (5, 0), (3, 7), (9, 2), (0, 0), (12, 12)]  # frozen rows in the batch too
    gridworld = BatchedGridWorld(len(pairs))
    obs, info = gridworld.reset(seed=0, options={"pairs": pairs})
    sample = {key: obs[key] for key in ("obs", "env_id", "task_id")}
    rewards = np.linspace(-0.1, 1, len(pairs), dtype=np.float32)
    sample.update(expert_action=info["expert_action"], action=info["expert_action"], reward=rewards)
    spaces = {"synpo": (gridworld.single_observation_space, gridworld.single_action_space)}

    def updated(learner_config_dict: dict) -> tuple[dict, dict]:
        config = SynPoConfig().rl_module(model_config=dict(BATCH_NORM_MODEL)).debugging(seed=0)
        learner = config.learners(learner_config_dict=learner_config_dict).build_learner(spaces=spaces)
        module = learner.module["synpo"]
        before = _state(module)
        for _ in range(3):
            learner.update(batch=learner_batch(sample))
        return before, _state(module)

    before, after = updated({ADAPT_ROWS_KEY: {"env_embedding": [3], "task_embedding": [1, 2]}})
    changed = {key for key in after if not torch.equal(after[key], before[key])}
    assert changed == set(EMBEDDINGS)
    for key, rows in zip(EMBEDDINGS, ([3], [1, 2])):
        moved = (after[key] != before[key]).any(-1).nonzero().flatten().tolist()
        assert moved == rows, key
    # Without the key the whole module trains, BatchNorm's statistics included.
    before, after = updated({})
    statistics = "net.encoder.convs.0.running_mean"
    assert not torch.equal(after[statistics], before[statistics])
    assert not torch.equal(after[EMBEDDINGS[0]][0], before[EMBEDDINGS[0]][0])
    with pytest.raises(ValueError, match=r"rows \[20\] are not rows of env_embedding \(0..19\)"):
        updated({ADAPT_ROWS_KEY: {"env_embedding": [20]}})
    with pytest.raises(ValueError, match="has no embedding 'maze_embedding'"):
        updated({ADAPT_ROWS_KEY: {"maze_embedding": [0]}})


def test_quadrants_match_the_transfer_splits():
    from synpo_envs.splits import transfer_split

    from rllib_synpo.adaptation import new_ids

    for setting in (2, 3):
        split = transfer_split(setting)
        ids = new_ids(split.seen, 20, 20, 0)
        assert ids.envs == tuple(range(10, 20)) and ids.tasks == tuple(range(10, 20))
        assert sorted(ids.demonstrated_pairs(setting)) == sorted(split.adapt)


def test_the_adapt_verb_writes_the_table_and_heatmaps(checkpoint, maze_file, tmp_path, capsys):
    from ray.rllib.core.rl_module.rl_module import RLModule

    from rllib_synpo.cli import main

    out = tmp_path / "adapted"
    code = main(
        [
            "synpo",
            "adapt",
            str(checkpoint),
            "--setting",
            "2",
            "--new-maze",
            str(maze_file),
            "--iterations",
            "10",
            "--batch-size",
            "32",
            "--episodes-per-pair",
            "1",
            "--out",
            str(out),
        ]
    )
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
    original = RLModule.from_checkpoint(checkpoint / MODULE_PATH).net.state_dict()
    frozen = [key for key in state if key not in ("env_embedding.weight", "task_embedding.weight")]
    assert all(torch.equal(state[key], original[key]) for key in frozen)
    assert torch.equal(state["env_embedding.weight"][:20], original["env_embedding.weight"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--setting", "4"], "setting must be one of (2, 3), got 4"),
        (
            ["--setting", "3"],
            "setting 3 needs new environments and new tasks; new environments [], new tasks [19]",
        ),
        (["--setting", "2", "--iterations", "-1"], "iterations must be an integer >= 0"),
        (
            ["--setting", "2", "--new-maze", "/nonexistent/maze.txt"],
            "maze file '/nonexistent/maze.txt' does not exist",
        ),
        (["--setting", "2", "--new-maze", "BUILTIN"], "is the same maze as environment 0"),
        (
            ["--setting", "2", "--new-env-rows", "sideways"],
            "new_env_rows must be one of ['random', 'unknown'], got 'sideways'",
        ),
        (
            ["--setting", "2", "--new-env-rows", "unknown"],
            "new_env_rows 'unknown' needs a network trained with env_dropout > 0",
        ),
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
    args = [str(checkpoint), "--known", "0", "--iterations", "5", "--episodes", "1", "--out", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert "new" not in result  # every maze was trained, so no new group
    known = result["known"]
    assert known["envs"] == [0] and known["pairs"] == 19 and known["demonstration_states"] > 19
    for key in ("demonstration_accuracy", "avg_success_rate_before", "avg_success_rate_after"):
        assert 0 <= known[key] <= 1, key
    assert "known envs [0]: demonstration accuracy" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"--new: environments \[3\] are in the checkpoint's seen pairs"):
        main([str(checkpoint), "--new", "3", "--known"])
    message = r"--known: environments \[20\] are not ids of the checkpoint's 20 mazes \(0..19\)"
    with pytest.raises(SystemExit, match=message):
        main([str(checkpoint), "--known", "20"])


def test_maze_reliance_benchmark_swaps_the_mazes(checkpoint, tmp_path, capsys):
    from synpo_envs.splits import Split

    from benchmarks.maze_reliance import main, shifted
    from rllib_synpo.checkpoint import read_gridworld_checkpoint
    from rllib_synpo.evaluation import evaluate, torch_greedy_policy

    lookup = shifted([0, 2, 5], 1)
    assert lookup(np.array([0, 2, 5, 5])).tolist() == [2, 5, 0, 0]
    out = tmp_path / "reliance.json"
    assert main([str(checkpoint), "--episodes", "1", "--shifts", "1", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    rates = result["avg_success_rate"]
    assert list(rates) == ["own maze", "maze shifted by 1", "maze shifted by 3"]  # no env_dropout
    _, module, split, gridworld = read_gridworld_checkpoint(checkpoint)
    assert isinstance(split, Split) and result["pairs"] == len(split.seen) == 380
    own = evaluate(torch_greedy_policy(module.net), split.seen, 1, seed=0, env_kwargs=gridworld)
    assert rates["own maze"] == own.summary()["avg_success_rate"]
    assert "maze shifted by 3" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"--shifts \[20\]: a multiple of the 20 trained mazes"):
        main([str(checkpoint), "--shifts", "20"])
