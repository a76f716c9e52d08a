"""Bad input to the ``rllib`` command ends with exactly one ``error: ...`` line on stderr that
names the bad value and what was expected, and exit status 2: no traceback, and for ``rllib
train file`` no Ray started (Ray's start-up would log to stderr, and nothing else may be there).

The command runs in a subprocess, as a user runs it, where it stops before loading RLlib and for
one case of each kind that needs RLlib (a missing split file, a THOR build named by the
environment); the other cases that need RLlib run the command's `main` in this process
(`rllib_here`: seconds saved per case), and the other checks of an experiment file run
in-process on `load_experiments`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.rllib.conftest import TINY_MODEL

RLLIB = [sys.executable, "-m", "rllib_synpo.cli"]
ROOT = Path(__file__).resolve().parents[2]
STANDIN_THOR_EXAMPLE = ROOT / "tuned_examples" / "synpo_thor_standin.yaml"
MODULE_STATE = Path("learner_group/learner/rl_module/synpo/module_state.pkl")


def _rllib(*args: str, cwd: Path | None = None, **variables: str) -> subprocess.CompletedProcess:
    """The command run with ``args``, on a local Ray unless ``variables`` (environment variables
    added) say otherwise."""
    environ = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    environ.update(variables)
    return subprocess.run([*RLLIB, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=environ)


def _one_error_line(out: subprocess.CompletedProcess, *fragments: str) -> str:
    """The single ``error: ...`` line of a run that refused its input, checked to hold ``fragments``."""
    everything = out.stdout + out.stderr
    assert out.returncode == 2, everything[-3000:]
    assert "Traceback" not in everything
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-3000:]
    assert out.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def _tiny_config(**overrides) -> dict:
    config = {
        "seed": 1,
        "trajectories_per_update": 4,
        "warmup_trajectories": 4,
        "model_config": TINY_MODEL,
        "env_config": {"num_slots": 4, "gridworld": {"max_steps": 60}},
    }
    return {**config, **overrides}


def _experiment_file(folder: Path, spec: dict | None = None, **config) -> Path:
    """An experiment file of one tiny SynPo experiment ``tiny`` (``config`` replacing entries
    of its config), or of ``spec`` as that experiment."""
    spec = spec or {
        "run": "SynPo",
        "env": "synpo_pairs",
        "stop": {"training_iteration": 1},
        "config": _tiny_config(**config),
    }
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump({"tiny": spec}))
    return path


def _gridworld(**settings) -> dict:
    return {"num_slots": 4, "gridworld": {"max_steps": 60, **settings}}


def _maze_lines() -> list[str]:
    from synpo_envs.gridworld.mazes import builtin_mazes

    return builtin_mazes()[0].to_text().splitlines()


@pytest.fixture
def bad_maze(tmp_path) -> Path:
    """A maze file, alone in its folder, whose 4th line is a character short."""
    lines = _maze_lines()
    folder = tmp_path / "mazes"
    folder.mkdir()
    (folder / "short_line.txt").write_text("\n".join([*lines[:3], lines[3][:-1], *lines[4:]]) + "\n")
    return folder / "short_line.txt"


# --- rllib train file: the cases users met --------------------------------------------------------
def test_a_split_file_that_does_not_exist(tmp_path):
    out = _rllib("train", "file", str(_experiment_file(tmp_path, split="no/such/split.json")))
    _one_error_line(
        out,
        "tiny.yaml: experiment 'tiny': split file ",
        "no/such/split.json' does not exist",
        "expected a split JSON file",
    )


def test_a_split_file_that_does_not_exist_in_a_grid(tmp_path, rllib_here):
    split = {"grid_search": [{"random": {"seed": 0}}, "no/such/split.json"]}
    out = rllib_here("train", "file", str(_experiment_file(tmp_path, split=split)))
    _one_error_line(out, "(grid split=", "no/such/split.json' does not exist", "expected a split JSON file")


@pytest.mark.parametrize("as_list", [False, True], ids=["maze folder", "maze file list"])
def test_a_malformed_maze_file_is_named_before_ray_starts(tmp_path, bad_maze, as_list, rllib_here):
    mazes = [str(bad_maze)] if as_list else str(bad_maze.parent)
    out = rllib_here("train", "file", str(_experiment_file(tmp_path, env_config=_gridworld(mazes=mazes))))
    _one_error_line(
        out,
        f"env_config.gridworld.mazes: maze file {str(bad_maze)!r}, line 4",
        "expected 16 characters, found 15",
    )


def test_a_maze_folder_that_does_not_exist(tmp_path, rllib_here):
    out = rllib_here(
        "train", "file", str(_experiment_file(tmp_path, env_config=_gridworld(mazes="no_mazes")))
    )
    _one_error_line(out, "maze folder ", "no_mazes' does not exist", "expected a folder of *.txt maze files")


def test_the_thor_build_named_in_the_config_must_exist(tmp_path, rllib_here):
    (spec,) = yaml.safe_load(STANDIN_THOR_EXAMPLE.read_text()).values()
    spec["config"]["env_config"]["thor"]["local_executable_path"] = "/no/thor/player"
    out = rllib_here("train", "file", str(_experiment_file(tmp_path, spec)))
    _one_error_line(
        out,
        "env_config.thor.local_executable_path '/no/thor/player' does not exist",
        "expected the path of a THOR 5.0 player executable",
    )


def test_the_thor_build_named_by_the_environment_variable_must_exist():
    out = _rllib("train", "file", str(STANDIN_THOR_EXAMPLE), SYNPO_THOR_EXECUTABLE="no/thor/player")
    _one_error_line(out, "SYNPO_THOR_EXECUTABLE 'no/thor/player' does not exist", "expected the path of")


@pytest.mark.parametrize("how", ["--address", "RAY_ADDRESS"])
def test_a_cluster_address_where_nobody_listens_fails_fast(tmp_path, how):
    """Ray retries such an address for minutes; a TCP connect refused at once says it in one line."""
    experiment = str(_experiment_file(tmp_path))
    variables = {"RAY_ADDRESS": "127.0.0.1:1"} if how == "RAY_ADDRESS" else {}
    args = ["train", "file", experiment] + (["--address", "127.0.0.1:1"] if how == "--address" else [])
    start = time.monotonic()
    out = _rllib(*args, **variables)
    assert time.monotonic() - start < 90
    _one_error_line(
        out,
        f"error: {how} '127.0.0.1:1': nothing answers there",
        "expected the address of a running Ray head node",
    )


def test_a_cluster_address_that_is_not_host_and_port(tmp_path):
    out = _rllib("train", "file", str(_experiment_file(tmp_path)), "--address", "headnode")
    _one_error_line(out, "--address 'headnode' is not HOST:PORT")


@pytest.mark.parametrize(
    "content, fragments",
    [
        (None, ["experiment file ", "missing.yaml' does not exist: expected a YAML file of experiments"]),
        ("FOLDER", ["experiment file ", "' is a folder: expected a YAML file of experiments"]),
        ("a: [b\n", ["is not valid YAML (line 2"]),
        ("- a\n- b\n", ["holds a list: expected a mapping of experiment names to {run, env, stop, config}"]),
        ("", ["holds nothing: expected a mapping of experiment names"]),
        (b"\xff\xfe", ["is not UTF-8 text (invalid start byte)"]),
        ("tiny: 5\n", ["experiment 'tiny' is an int: expected a mapping of {run, env, stop, config}"]),
    ],
    ids=["missing", "a folder", "not YAML", "a list", "empty", "not UTF-8", "an experiment not a mapping"],
)
def test_experiment_files_that_are_not_a_mapping_of_experiments(tmp_path, content, fragments):
    path = tmp_path / "missing.yaml"
    if content == "FOLDER":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    _one_error_line(_rllib("train", "file", str(path)), *fragments)


@pytest.mark.parametrize(
    "stop, fragment",
    [
        ("{training_iteration: 2}", "--stop '{training_iteration: 2}' is not valid JSON (Expecting property"),
        ("5", "--stop '5' holds a JSON int: expected a JSON object of result names to numbers"),
        ('{"training_iteration": "x"}', "--stop: training_iteration 'x': expected a number"),
        ('{"training_iteration": -1}', "--stop: training_iteration -1: expected a number > 0"),
        (
            '{"num_env_steps_sampled_lifetime": 0}',
            "--stop: num_env_steps_sampled_lifetime 0: expected a number > 0",
        ),
    ],
)
def test_bad_stop_criteria(tmp_path, stop, fragment):
    _one_error_line(_rllib("train", "file", str(_experiment_file(tmp_path)), "--stop", stop), fragment)


def test_a_stop_bound_below_zero_is_kept_for_results_that_can_fall():
    from rllib_synpo.cli.experiments import check_stop

    stop = {"env_runners/episode_return_mean": -5.0, "training_iteration": 3}
    assert check_stop(stop, "--stop", example="") == stop


@pytest.mark.parametrize(
    "config, fragment",
    [
        ("{seed: 2}", "--config '{seed: 2}' is not valid JSON (Expecting property"),
        ("[1]", "--config '[1]' holds a JSON list: expected a JSON object of config settings"),
        ('{"lrr": 1}', "with --config: experiment 'tiny': unknown config key(s) ['lrr'] for SynPo"),
        ('{"seed": {"grid_search": [0, -1]}}', "with --config: experiment 'tiny' (grid seed=-1): `seed`"),
    ],
)
def test_bad_config_overrides(tmp_path, config, fragment, rllib_here):
    _one_error_line(
        rllib_here("train", "file", str(_experiment_file(tmp_path)), "--config", config), fragment
    )


def test_an_experiment_the_file_does_not_hold(tmp_path):
    path = _experiment_file(tmp_path)
    expected = f"--experiment 'tine': {str(path)!r} holds no such experiment; expected one of ['tiny']"
    _one_error_line(_rllib("train", "file", str(path), "--experiment", "tine"), expected)


@pytest.mark.parametrize(
    "name, experiments, fragment",
    [
        ("runs", ["a", "b"], "holds 2 experiments ['a', 'b']: expected one (pick it with --experiment)"),
        ("..", ["a"], "expected a folder name"),
        ("a/b", ["a"], "expected a folder name"),
        ("", ["a"], "expected a folder name"),
    ],
)
def test_bad_experiment_names(tmp_path, name, experiments, fragment, rllib_here):
    spec = {"run": "SynPo", "env": "synpo_pairs", "config": _tiny_config()}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(dict.fromkeys(experiments, spec)))
    _one_error_line(rllib_here("train", "file", str(path), "--name", name), f"--name {name!r}", fragment)


def test_a_storage_path_under_a_file(tmp_path, rllib_here):
    (tmp_path / "a_file").write_text("")
    storage = str(tmp_path / "a_file" / "runs")
    out = rllib_here("train", "file", str(_experiment_file(tmp_path)), "--storage-path", storage)
    _one_error_line(out, f"--storage-path {storage!r} lies under the file", "expected a folder")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("verb", ["train", "evaluate", "report", "adapt"])
def test_an_output_folder_that_cannot_be_created(tmp_path, rllib_here, verb):
    """Nothing can be made under /proc, whoever runs the command (root too, whom the
    permission check lets through); whatever the check created on the way is removed."""
    out_folder = "/proc/no/such/folder"
    command = {
        "train": ["train", "file", str(_experiment_file(tmp_path)), "--storage-path", out_folder],
        "evaluate": ["evaluate", str(tmp_path), "--out", out_folder],
        "report": ["report", str(tmp_path), "--out", out_folder],
        "adapt": ["synpo", "adapt", str(tmp_path), "--setting", "2", "--out", out_folder],
    }[verb]
    option = "--storage-path" if verb == "train" else "--out"
    out = rllib_here(*command)
    _one_error_line(
        out, f"{option} {out_folder!r} cannot be created (", "expected a folder this user can create"
    )


def test_the_output_folder_check_leaves_nothing_behind(tmp_path, rllib_here):
    out = rllib_here("report", str(tmp_path / "missing"), "--out", str(tmp_path / "new" / "report"))
    assert out.returncode == 2 and not (tmp_path / "new").exists()


# --- rllib evaluate, report, synpo adapt ----------------------------------------------------------
@pytest.fixture(scope="module")
def module_checkpoint(tmp_path_factory) -> Path:
    """A checkpoint folder holding an untrained tiny module and its metadata, as
    `SynPo.save_to_path` writes them (without Ray)."""
    import gymnasium as gym
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from synpo_envs.gridworld import BatchedGridWorld
    from synpo_envs.splits import random_split

    from rllib_synpo.checkpoint import MODULE_COMPONENT, write_meta
    from rllib_synpo.rl_module import SynPoTorchRLModule, check_model_config

    env = BatchedGridWorld(1)
    module = RLModuleSpec(
        module_class=SynPoTorchRLModule,
        observation_space=env.single_observation_space,
        action_space=gym.spaces.Discrete(env.single_action_space.n),
        model_config=dict(TINY_MODEL),
    ).build()
    path = tmp_path_factory.mktemp("checkpoints") / "checkpoint"
    module.save_to_path(path / MODULE_COMPONENT)
    model_config = check_model_config(dict(TINY_MODEL))
    write_meta(path, split=random_split().to_dict(), gridworld={}, model_config=model_config)
    return path


def _damaged(checkpoint: Path, folder: Path, damage) -> Path:
    """A copy of ``checkpoint`` in ``folder`` after ``damage(copy)``."""
    copy = folder / "damaged"
    shutil.copytree(checkpoint, copy)
    damage(copy)
    return copy


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _meta(copy: Path) -> Path:
    return copy / "synpo_meta.json"


def _with_missing_maze(copy: Path) -> None:
    meta = json.loads(_meta(copy).read_text())
    _meta(copy).write_text(json.dumps({**meta, "gridworld": {"mazes": ["/gone/maze.txt"]}}))


# What is done to a checkpoint's copy, and what the error line then says.
DAMAGES = {
    "meta not JSON": (
        lambda c: _meta(c).write_text("{not json"),
        ["synpo_meta.json' is not readable JSON", "the checkpoint is corrupted"],
    ),
    "meta a list": (
        lambda c: _meta(c).write_text("[]"),
        ["synpo_meta.json' holds a JSON list: expected an object"],
    ),
    "meta without split": (
        lambda c: _meta(c).write_text('{"module_id": "synpo"}'),
        ["has no 'split' object"],
    ),
    "meta naming a missing maze": (
        _with_missing_maze,
        ["gridworld mazes: maze file '/gone/maze.txt' does not exist"],
    ),
    "module folder missing": (
        lambda c: shutil.rmtree(c / "learner_group"),
        ["has no module folder learner_group/learner/rl_module/synpo"],
    ),
    "module state truncated": (
        lambda c: _truncate(c / MODULE_STATE),
        ["rl_module/synpo' did not load (UnpicklingError", "truncated or corrupted"],
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_evaluate_names_a_damaged_checkpoint_file(module_checkpoint, tmp_path, damage, rllib_here):
    make_damage, fragments = DAMAGES[damage]
    checkpoint = _damaged(module_checkpoint, tmp_path, make_damage)
    line = _one_error_line(rllib_here("evaluate", str(checkpoint), "--episodes-per-pair", "1"), *fragments)
    assert str(checkpoint) in line


@pytest.mark.parametrize("damage", ["meta not JSON", "module state truncated"])
def test_adapt_names_a_damaged_checkpoint_file(module_checkpoint, tmp_path, damage, rllib_here):
    make_damage, fragments = DAMAGES[damage]
    checkpoint = _damaged(module_checkpoint, tmp_path, make_damage)
    out = rllib_here("synpo", "adapt", str(checkpoint), "--setting", "2", "--out", str(tmp_path / "out"))
    _one_error_line(out, str(checkpoint), *fragments)


@pytest.mark.parametrize(
    "verb", [["evaluate"], ["synpo", "adapt", "--setting", "2"]], ids=["evaluate", "adapt"]
)
def test_a_checkpoint_that_does_not_exist(tmp_path, verb):
    out = _rllib(*verb, str(tmp_path / "no_checkpoint"), cwd=tmp_path)
    _one_error_line(
        out,
        f"{tmp_path / 'no_checkpoint'} is not a SynPo checkpoint and does not exist: "
        "expected a SynPo checkpoint folder",
    )


def test_adapt_names_a_malformed_new_maze(module_checkpoint, tmp_path, bad_maze, rllib_here):
    out = rllib_here(
        "synpo",
        "adapt",
        str(module_checkpoint),
        "--setting",
        "2",
        "--new-maze",
        str(bad_maze),
        "--out",
        str(tmp_path / "out"),
    )
    _one_error_line(out, f"maze file {str(bad_maze)!r}, line 4: expected 16 characters, found 15")


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["--episodes-per-pair", "-3"],
            "error: rllib evaluate: argument --episodes-per-pair: expected an integer >= 1, got -3",
        ),
        (["--seed", "-1"], "error: rllib evaluate: argument --seed: expected an integer >= 0, got -1"),
    ],
)
def test_evaluate_refuses_bad_numbers(tmp_path, args, line):
    assert _one_error_line(_rllib("evaluate", str(tmp_path), *args)) == line


def test_evaluate_refuses_an_output_folder_that_is_a_file(module_checkpoint, tmp_path):
    (tmp_path / "a_file").write_text("")
    out = _rllib("evaluate", str(module_checkpoint), "--out", str(tmp_path / "a_file"))
    _one_error_line(out, f"--out {str(tmp_path / 'a_file')!r} is a file: expected a folder")


@pytest.mark.parametrize("what", ["missing", "a file"])
def test_report_names_an_experiment_folder_that_is_not_one(tmp_path, what):
    path = tmp_path / "experiment"
    if what == "a file":
        path.write_text("")
    problem = "does not exist" if what == "missing" else "is a file"
    out = _rllib("report", str(path))
    _one_error_line(out, f"experiment folder {str(path)!r} {problem}: expected the folder")


def test_input_errors_found_without_loading_torch_or_ray(tmp_path):
    """A missing file, bad JSON or a malformed address is named in a fraction of a second: the
    command checks them before it imports torch, Ray or RLlib (seconds on a small machine)."""
    missing = str(tmp_path / "missing")
    commands = [
        ["train", "file", missing],
        ["train", "file", str(_experiment_file(tmp_path)), "--stop", "5"],
        ["train", "file", str(_experiment_file(tmp_path)), "--address", "headnode"],
        ["evaluate", missing],
        ["report", missing],
        ["synpo", "adapt", missing, "--setting", "2", "--out", str(tmp_path / "out")],
    ]
    script = (
        "import sys\n"
        "from rllib_synpo.cli.main import main\n"
        f"codes = [main(argv) for argv in {commands!r}]\n"
        "loaded = [name for name in ('torch', 'ray', 'ray.rllib') if name in sys.modules]\n"
        "print(codes, loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == f"{[2] * len(commands)} []", out.stderr[-3000:]
    assert len(out.stderr.strip().splitlines()) == len(commands)


# --- the other checks of an experiment file, in-process ---------------------------------------------
def _refusal(path: Path) -> str:
    from rllib_synpo.cli.errors import UsageError
    from rllib_synpo.cli.experiments import load_experiments

    with pytest.raises(UsageError) as err:
        load_experiments(path)
    (line,) = str(err.value).splitlines()
    return line


@pytest.mark.parametrize(
    "config, fragment",
    [
        ({"env_config": _gridworld(windw=1)}, "unknown env_config.gridworld key(s) ['windw']"),
        ({"env_config": _gridworld(window=99)}, "env_config.gridworld: window"),
        ({"env_config": 5}, "env_config 5: expected a mapping"),
        ({"env_config": {"gridworld": 5}}, "env_config.gridworld 5: expected a mapping"),
        ({"model_config": 5}, "model_config 5: expected a mapping"),
        ({"seed": "x"}, "`seed` must be None or an integer >= 0, got 'x'"),
        ({"num_env_runners": -1}, "`num_env_runners` must be an integer >= 0, got -1"),
        (
            {"num_cpus_for_main_process": {"grid_search": [1, "x"]}},
            "(grid num_cpus_for_main_process=x): `num_cpus_for_main_process` must be a number >= 0",
        ),
        ({"env_config": _gridworld(mazes=[5])}, "maze file entry 5: expected the path of a maze file"),
        ({"env_config": {"num_slots": 0}}, "env_config num_slots must be an integer >= 1, got 0"),
        ({"model_config": {**TINY_MODEL, "hidden_dim": 0}}, "hidden_dim must be an integer >= 1, got 0"),
        (
            {"model_config": {**TINY_MODEL, "encoder_kwargs": {"width": -3}}},
            "encoder_kwargs width must be an integer >= 1, got -3",
        ),
        ({"model_config": {**TINY_MODEL, "encoder_kwargs": 5}}, "encoder_kwargs 5: expected a mapping"),
        (
            {"warmup_trajectories": 8, "replay_capacity": 4},
            "`warmup_trajectories` 8 exceeds `replay_capacity` 4",
        ),
        ({"evaluation_interval": -5}, "`evaluation_interval` must be None or an integer >= 0, got -5"),
        ({"split": {"random": {"seed": -1}}}, "seed=-1 must be an integer >= 0"),
        ({"num_learners": 1.5}, "`num_learners` must be an integer >= 0, got 1.5"),
        ({"num_cpus_per_learner": -1}, "`num_cpus_per_learner` must be 'auto' or a number >= 0, got -1"),
        ({"grad_clip": -1}, "`grad_clip` must be None or a number >= 0, got -1"),
    ],
)
def test_config_settings_that_would_fail_in_the_trial(tmp_path, config, fragment):
    assert fragment in _refusal(_experiment_file(tmp_path, **config))


def test_a_trial_that_asks_for_more_gpus_than_the_machine_has(tmp_path):
    import torch

    asked = torch.cuda.device_count() + 1
    line = _refusal(_experiment_file(tmp_path, num_gpus_per_learner=asked))
    assert f"a trial asks for {asked} GPU(s)" in line
    assert f"this machine has {asked - 1}: expected at most {asked - 1} on a local Ray" in line


def test_mazes_and_split_must_agree(tmp_path):
    from synpo_envs.gridworld.mazes import builtin_mazes

    from rllib_synpo.cli.experiments import load_experiments

    folder = tmp_path / "three"
    folder.mkdir()
    for index, maze in enumerate(builtin_mazes()[:3]):
        (folder / f"maze_{index}.txt").write_text(maze.to_text())
    line = _refusal(_experiment_file(tmp_path, env_config=_gridworld(mazes=str(folder))))
    assert "env_config.gridworld.mazes holds 3 mazes, but the split has pairs of environment 19" in line
    split = {"random": {"num_envs": 3, "num_seen": 20, "min_per_task": 1}}
    assert load_experiments(_experiment_file(tmp_path, env_config=_gridworld(mazes=str(folder)), split=split))


def test_config_override_merges_mappings_and_replaces_grids(tmp_path):
    from rllib_synpo.cli.experiments import grid_variants, load_experiments

    path = _experiment_file(
        tmp_path, seed={"grid_search": [0, 1, 2]}, lr={"grid_search": [1e-3, 1e-4]}, l3=0.5
    )
    override = {"seed": {"grid_search": [1]}, "lr": 1e-2, "model_config": {"feature_dim": 8}}
    (spec,) = load_experiments(path, config_override=override).values()
    config = spec["config"]
    assert config["seed"] == {"grid_search": [1]} and config["lr"] == 1e-2 and config["l3"] == 0.5
    assert config["_model_config"] == {**TINY_MODEL, "feature_dim": 8} and "model_config" not in config
    assert len(grid_variants(config)) == 1  # the file's 3 x 2 grid cut to one trial
    (untouched,) = load_experiments(path).values()
    assert len(grid_variants(untouched["config"])) == 6


def test_only_the_experiments_asked_for(tmp_path):
    from rllib_synpo.cli.experiments import load_experiments

    spec = {"run": "SynPo", "env": "synpo_pairs", "config": _tiny_config()}
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump({"a": spec, "b": {**spec, "config": _tiny_config(seed=5)}, "c": spec}))
    assert list(load_experiments(path)) == ["a", "b", "c"]
    experiments = load_experiments(path, names=["c", "b"])
    assert list(experiments) == ["b", "c"] and experiments["b"]["config"]["seed"] == 5  # the file's order


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"env": "synpo_pair"}, "unknown env 'synpo_pair': expected synpo_pairs, synpo_thor_pairs"),
        ({"stop": 5}, "stop 5: expected a mapping of result names to numbers"),
        ({"stop": {"training_iteration": "x"}}, "stop: training_iteration 'x': expected a number"),
        ({"stop": {"time_total_s": 0}}, "stop: time_total_s 0: expected a number > 0"),
        (
            {"checkpoint_config": {"num_to_keep": 0}},
            "checkpoint_config num_to_keep 0: expected None or an integer >= 1",
        ),
        ({"checkpoint_config": 5}, "checkpoint_config 5: expected a mapping of some of"),
        ({"num_samples": 0}, "num_samples 0: expected an integer >= 1"),
        ({"storage_path": 5}, "storage_path 5: expected a folder or a URI"),
        ({"config": 5}, "config 5: expected a mapping of algorithm settings"),
    ],
)
def test_tune_settings_that_would_fail_after_ray_started(tmp_path, change, fragment):
    spec = {"run": "SynPo", "env": "synpo_pairs", "config": _tiny_config(), **change}
    assert fragment in _refusal(_experiment_file(tmp_path, spec))


def test_file_settings_are_made_absolute_for_the_trials(tmp_path, monkeypatch):
    """Tune runs each trial in its own folder: relative paths are resolved where the command runs."""
    from rllib_synpo.cli.experiments import experiment_config

    monkeypatch.chdir(tmp_path)
    env_config = {"gridworld": {"mazes": ["m/0.txt", "/abs/1.txt"]}, "thor": {"local_executable_path": "p"}}
    split = {"grid_search": ["a.json", {"random": {"seed": 0}}]}
    spec = {"env": "synpo_pairs", "config": {"split": split, "env_config": env_config}}
    config = experiment_config(spec)
    assert config["split"] == {"grid_search": [str(tmp_path / "a.json"), {"random": {"seed": 0}}]}
    assert config["env_config"]["gridworld"]["mazes"] == [str(tmp_path / "m/0.txt"), "/abs/1.txt"]
    assert config["env_config"]["thor"]["local_executable_path"] == str(tmp_path / "p")


def test_a_relative_split_file_inside_a_trial_is_read_from_where_the_run_started(tmp_path, monkeypatch):
    from synpo_envs.splits import random_split

    from rllib_synpo.env.splits import resolve_split

    random_split(seed=3).save(tmp_path / "split.json")
    trial = tmp_path / "trial"
    trial.mkdir()
    monkeypatch.chdir(trial)
    monkeypatch.setenv("TUNE_ORIG_WORKING_DIR", str(tmp_path))
    assert resolve_split("split.json") == random_split(seed=3)
