"""The ``rllib`` command end to end: train from a YAML file, evaluate, resume after a kill, a
study interrupted and resumed, then evaluated and reported; bad input in one line."""

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rllib_synpo.cli.interrupt import SAVING_MESSAGE
from rllib_synpo.cli.train import INTERRUPTED
from rllib_synpo.studies.trials import read_progress
from tests.rllib.conftest import TINY_MODEL

RLLIB = [sys.executable, "-m", "rllib_synpo.cli"]


def _experiment(tmp_path, iterations=2, name="tiny"):
    spec = {
        name: {
            "run": "SynPo",
            "env": "synpo_pairs",
            "stop": {"training_iteration": iterations},
            "checkpoint_config": {"checkpoint_frequency": 1, "checkpoint_at_end": True},
            "config": {
                "seed": 1,
                "trajectories_per_update": 4,
                "warmup_trajectories": 4,
                "model_config": TINY_MODEL,
                "env_config": {"num_slots": 4, "gridworld": {"max_steps": 60}},
            },
        }
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run(*args, timeout=600, cwd=None):
    return subprocess.run([*RLLIB, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _session_processes(session_id: int) -> list[int]:
    """The processes of a session: a run started in a session of its own and its Ray processes."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getsid(int(entry.name)) == session_id:
                pids.append(int(entry.name))
        except (ProcessLookupError, PermissionError):
            pass
    return pids


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _kill_session(session_id: int) -> None:
    """Ray processes the killed run left behind (they share its session)."""
    for pid in _session_processes(session_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _checkpoints(storage: Path, experiment: str = "*"):
    return sorted(storage.glob(f"{experiment}/*/checkpoint_*"))


def _iterations(storage: Path, experiment: str = "*") -> list[int]:
    """The training iterations a trial's result.json holds, in the order they were written."""
    results = next(storage.glob(f"{experiment}/*/result.json"), None)
    lines = results.read_text().splitlines() if results else []
    return [json.loads(line)["training_iteration"] for line in lines]


def _train_until_checkpoints(
    experiment: Path, storage: Path, count: int, stdout=subprocess.DEVNULL, name: str = "*", results: int = 0
) -> subprocess.Popen:
    """Starts ``rllib train file`` in a session of its own; returns once it has written ``count``
    checkpoints and ``results`` results (of the experiment ``name``) or ended, or 10 minutes
    passed."""
    return _train_until(
        experiment,
        storage,
        lambda: len(_checkpoints(storage, name)) >= count and len(_iterations(storage, name)) >= results,
        stdout,
    )


def _train_until(experiment: Path, storage: Path, done, stdout=subprocess.DEVNULL) -> subprocess.Popen:
    """Starts ``rllib train file`` in a session of its own; returns once ``done()`` holds or the
    run ended, or 10 minutes passed."""
    process = subprocess.Popen(
        [*RLLIB, "train", "file", str(experiment), "--storage-path", str(storage)],
        stdout=stdout,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.time() + 600
    while not done() and time.time() < deadline and process.poll() is None:
        time.sleep(0.5)
    return process


@pytest.mark.timeout(900)
def test_train_file_then_evaluate(tmp_path):
    storage = tmp_path / "results"
    override = json.dumps({"seed": 3, "env_config": {"gridworld": {"max_steps": 50}}})
    out = _run(
        *("train", "file", str(_experiment(tmp_path)), "--storage-path", str(storage)),
        *("--config", override, "--name", "tiny-seed3"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "stopped before their stop criteria" not in out.stdout  # it ran to its stop
    assert [folder.name for folder in storage.iterdir()] == ["tiny-seed3"]  # --name, not the file's
    (params,) = storage.glob("tiny-seed3/*/params.json")
    params = json.loads(params.read_text())  # --config merged into the file's config
    assert params["seed"] == 3 and params["env_config"] == {"num_slots": 4, "gridworld": {"max_steps": 50}}
    evaluation = tmp_path / "eval"
    out = _run(
        "evaluate",
        str(storage / "tiny-seed3"),
        "--episodes-per-pair",
        "1",
        "--pairs",
        "all",
        "--out",
        str(evaluation),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "seen   pairs 144" in out.stdout and "unseen pairs 256" in out.stdout
    assert f"checkpoint {_checkpoints(storage)[-1]}" in out.stdout  # the newest one
    matrix = pd.read_csv(evaluation / "success_matrix.csv", index_col=0)
    assert matrix.shape == (20, 20) and matrix.notna().all().all()
    summary = json.loads((evaluation / "summary.json").read_text())
    assert summary["seen"]["pairs"] == 144 and 0 <= summary["unseen"]["avg_success_rate"] <= 1
    assert (evaluation / "heatmap.png").read_bytes()[:4] == b"\x89PNG"
    # A relative checkpoint path, as in the README's main job (RLlib reads it as a URI otherwise).
    out = _run(
        "evaluate",
        "results",
        "--episodes-per-pair",
        "1",
        "--pairs",
        "seen",
        "--sample",
        "--out",
        "sampled",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((tmp_path / "sampled" / "summary.json").read_text())
    assert (
        summary["policy"] == "sampled"
        and summary["unseen"]["pairs"] == 0
        and summary["unseen"]["avg_success_rate"] is None
    )


@pytest.mark.timeout(900)
def test_training_resumes_after_being_killed(tmp_path):
    """A file of two experiments killed during the second: the resume finishes the second in its
    own folder and leaves the first alone (Tune resuming both as one run looks for the second's
    checkpoints in the first's folder)."""
    storage = tmp_path / "results"
    iterations = 40
    first = yaml.safe_load(_experiment(tmp_path, iterations=2, name="first").read_text())
    second = yaml.safe_load(_experiment(tmp_path, iterations=iterations, name="resumable").read_text())
    experiment = tmp_path / "two.yaml"
    experiment.write_text(yaml.safe_dump({**first, **second}, sort_keys=False))
    process = _train_until_checkpoints(experiment, storage, count=2, name="resumable")
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    completed = len(_checkpoints(storage, "resumable"))
    assert 2 <= completed < iterations, f"the run was not interrupted mid-way ({completed} checkpoints)"
    _kill_session(process.pid)
    (first_trial,) = (storage / "first").glob("SynPo_*")
    first_results = (first_trial / "result.json").read_text()
    out = _run("train", "file", str(experiment), "--storage-path", str(storage), "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    done = _iterations(storage, "resumable")
    assert done[-1] == iterations and set(range(1, iterations + 1)) <= set(done)
    assert list((storage / "first").glob("SynPo_*")) == [first_trial]
    assert (first_trial / "result.json").read_text() == first_results  # not trained again


@pytest.mark.timeout(900)
def test_ctrl_c_saves_a_checkpoint_and_says_how_to_resume_with_this_command(tmp_path):
    """Ctrl-C before the trial's first checkpoint (it has periodic ones turned off): it saves one
    at the end of its iteration, the command prints how to resume and exits 130, and the resume
    goes on from that iteration, neither losing nor repeating one."""
    storage, iterations = tmp_path / "results", 300
    spec = yaml.safe_load(_experiment(tmp_path, iterations=iterations, name="interrupted").read_text())
    spec["interrupted"]["checkpoint_config"]["checkpoint_frequency"] = 0
    # Iterations of at least 50 ms: the tiny trial would otherwise run its 300 on a fast CPU in
    # about 4 s and have ended before the Ctrl-C could land mid-way.
    spec["interrupted"]["config"]["min_time_s_per_iteration"] = 0.05
    experiment = tmp_path / "interrupted.yaml"
    experiment.write_text(yaml.safe_dump(spec))
    log = tmp_path / "output.txt"  # stdout and stderr: Tune logs its own hint to stderr
    with log.open("w") as output:  # a file, not a pipe nobody reads while it trains
        process = _train_until_checkpoints(experiment, storage, count=0, results=2, stdout=output)
        assert not _checkpoints(storage)
        process.send_signal(signal.SIGINT)  # what Ctrl-C delivers to the driver
        process.wait(timeout=300)
    _kill_session(process.pid)
    assert process.returncode == INTERRUPTED, log.read_text()[-3000:]  # an `&&` chain stops here
    trained = _iterations(storage)
    assert len(_checkpoints(storage)) == 1 and 2 <= trained[-1] < iterations
    resume = shlex.join(
        ["rllib", "train", "file", str(experiment), "--storage-path", str(storage), "--resume"]
    )
    output = log.read_text()
    assert SAVING_MESSAGE in output
    hint = "1 of 1 trial(s) stopped before their stop criteria; continue from the last checkpoints with: "
    assert hint + resume in output
    assert "tune.run_experiments" not in output  # Tune's own hint, for its Python API, is not shown
    # Evaluating the half-trained trial says so.
    out = _run(
        "evaluate", str(storage / "interrupted"), "--episodes-per-pair", "1", "--out", str(tmp_path / "ev")
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "note: this trial has not reached its stop criteria" in out.stdout
    out = _run("train", "file", str(experiment), "--storage-path", str(storage), "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    assert _iterations(storage) == list(range(1, iterations + 1))


@pytest.mark.timeout(600)
def test_a_trial_failing_at_run_time_gives_an_error_line_naming_it(tmp_path):
    """A setting the file checks accept but the trial cannot run (a replay larger than any
    machine's address space) ends the command with exit 1 and a line naming the trial, its error
    file and the command that reruns it. The traceback is in that file, not on the console (the
    trial process's own report of it is not forwarded)."""
    spec = yaml.safe_load(_experiment(tmp_path, name="doomed").read_text())
    spec["doomed"]["config"]["replay_capacity"] = 10**17
    experiment = tmp_path / "doomed.yaml"
    experiment.write_text(yaml.safe_dump(spec))
    storage = tmp_path / "results"
    out = _run("train", "file", str(experiment), "--storage-path", str(storage))
    assert out.returncode == 1, out.stderr[-3000:]
    (error_file,) = storage.glob("doomed/SynPo_*/error.txt")
    assert "Unable to allocate" in error_file.read_text()
    (line,) = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: experiment 'doomed': 1 trial(s) did not complete: SynPo_")
    resume = shlex.join(
        ["rllib", "train", "file", str(experiment), "--storage-path", str(storage), "--resume"]
    )
    assert line.endswith(
        f"(ERROR, see {error_file}); once the cause is fixed, rerun them from "
        f"their last checkpoints with: {resume}"
    )
    assert "Traceback" not in out.stderr and 'File "' not in out.stderr and "pid=" not in out.stderr


@pytest.mark.timeout(600)
def test_a_stop_criterion_that_names_no_result_ends_the_run_with_an_error_line(tmp_path):
    """Tune only warns about it and trains on for ever; the command stops at the first result,
    exit 2, with one line naming the criterion and the result it resembles."""
    experiment = _experiment(tmp_path, name="typo")
    storage = str(tmp_path / "results")
    out = _run(
        "train", "file", str(experiment), "--storage-path", storage, "--stop", '{"training_iterations": 3}'
    )
    assert out.returncode == 2, out.stderr[-3000:]
    (line,) = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith(
        "error: experiment 'typo': stop criterion 'training_iterations' is not among trial "
    )
    assert "such as training_iteration" in line
    assert "Traceback" not in out.stderr and "Available keys" not in out.stderr


@pytest.mark.timeout(900)
def test_resume_reruns_a_trial_whose_process_died_from_its_last_checkpoint(tmp_path):
    """The trial's process killed (as by the kernel's OOM killer): the command names the failed
    trial and exits 1; ``--resume`` reruns that trial from its last checkpoint to its stop."""
    storage, iterations = tmp_path / "results", 40
    experiment = _experiment(tmp_path, iterations=iterations, name="killed")
    log = tmp_path / "output.txt"
    with log.open("w") as output:
        process = _train_until_checkpoints(experiment, storage, count=2, stdout=output)
        (trial_process,) = [pid for pid in _session_processes(process.pid) if "ray::SynPo" in _command(pid)]
        os.kill(trial_process, signal.SIGKILL)
        process.wait(timeout=300)
    _kill_session(process.pid)
    assert process.returncode == 1, log.read_text()[-3000:]
    assert "error: experiment 'killed': 1 trial(s) did not complete" in log.read_text()
    completed = len(_checkpoints(storage, "killed"))
    assert completed < iterations, "the trial ended before it was killed"
    out = _run("train", "file", str(experiment), "--storage-path", str(storage), "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    done = _iterations(storage, "killed")
    assert done[-1] == iterations and set(range(1, iterations + 1)) <= set(done)
    assert done.count(1) == 1  # it went on from a checkpoint rather than starting afresh
    # Tune appended the resumed run's results; the report reads each iteration once.
    trial_folder = next(storage.glob("killed/*/result.json")).parent
    assert read_progress(trial_folder)["training_iteration"].tolist() == list(range(1, iterations + 1))


@pytest.mark.parametrize(
    "content, message",
    [
        ("a: [b\n", "is not valid YAML (line 2"),
        ("x:\n  run: SynPoo\n", "unknown algorithm 'SynPoo'"),
        ("x:\n  run: SynPo\n  config: {lrr: 1}\n", "unknown config key(s) ['lrr']"),
        ("x:\n  run: SynPo\n  stopp: {}\n", "unknown key(s) ['stopp']"),
        ("x:\n  run: SynPo\n  config: {l3: -1}\n", "`l3` must be a number >= 0"),
        (
            "x:\n  run: SynPo\n  config: {lr: [[0, 1.0e-3], [100, 2e-05]]}\n",
            "YAML reads 2e-05 as a string: write 2.0e-05",
        ),
    ],
)
def test_bad_experiment_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    out = _run("train", "file", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert message in out.stderr.strip().splitlines()[-1]


def test_missing_file_and_checkpoint_are_named(tmp_path):
    out = _run("train", "file", str(tmp_path / "none.yaml"))
    assert out.returncode == 2 and "none.yaml' does not exist" in out.stderr
    out = _run("evaluate", str(tmp_path))
    assert out.returncode == 2 and "is not a SynPo checkpoint and holds none" in out.stderr
    (tmp_path / "synpo_meta.json").write_text(
        '{"env": "synpo_thor_pairs", "module_id": "synpo", "split": {}}'
    )
    out = _run("evaluate", str(tmp_path))
    assert out.returncode == 2 and "was trained on 'synpo_thor_pairs'" in out.stderr


def _study(tmp_path, iterations: int, name: str = "study") -> Path:
    """A study file: 2 networks x 2 seeds of tiny trials, one CPU each."""
    spec = yaml.safe_load(_experiment(tmp_path, iterations=iterations, name=name).read_text())
    config = spec[name]["config"]
    config.update(
        seed={"grid_search": [0, 1]},
        num_cpus_for_main_process=1,
        model_config={"grid_search": [{**TINY_MODEL, "network": network} for network in ("mlp", "synpo")]},
    )
    spec[name]["checkpoint_config"] = {"checkpoint_frequency": 5, "checkpoint_at_end": True}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _finished_trials(experiment: Path, iterations: int) -> list[Path]:
    """The trials whose last result (Tune's result.json, one JSON object per line; its
    progress.csv can mix rows of different lengths once a trial resumes) is ``iterations``."""
    finished = []
    for results in experiment.glob("*/result.json"):
        lines = results.read_text().splitlines()
        try:
            if lines and json.loads(lines[-1])["training_iteration"] == iterations:
                finished.append(results.parent)
        except (json.JSONDecodeError, KeyError):  # a line being written
            pass
    return sorted(finished)


def _terminated_trials(experiment: Path) -> list[Path]:
    """The trial folders Tune's newest experiment state records as TERMINATED (a trial whose
    last result is written but whose end Tune had not processed when it stopped is not)."""
    (state,) = sorted(experiment.glob("experiment_state-*.json"))[-1:]
    terminated = set()
    for trial_json, _ in json.loads(state.read_text())["trial_data"]:
        trial = json.loads(trial_json)
        if trial["status"] == "TERMINATED":
            terminated.add(trial["trial_id"])
    return sorted(
        path
        for path in experiment.glob("*/result.json")
        if any(f"_{trial_id}_" in path.parent.name for trial_id in terminated)  # Tune's folder names
    )


@pytest.mark.timeout(900)
def test_a_study_interrupted_and_resumed_runs_no_finished_trial_again(tmp_path):
    # Long enough trials that a Ctrl-C sent when the first one ends lands before the last two
    # (which start after the first two) can end.
    storage, iterations = tmp_path / "results", 60
    study = _study(tmp_path, iterations)
    log = tmp_path / "output.txt"
    with log.open("w") as output:
        process = _train_until(
            study, storage, lambda: _finished_trials(storage / "study", iterations), output
        )
        process.send_signal(signal.SIGINT)  # Ctrl-C, once a trial has finished
        process.wait(timeout=300)
    _kill_session(process.pid)
    # Tune's warning that the trials not started yet have no results is not shown.
    assert "Failed to fetch metrics" not in log.read_text()
    finished = {path.parent: path.read_text() for path in _terminated_trials(storage / "study")}
    assert 1 <= len(finished) < 4, f"the study was not interrupted mid-way ({len(finished)} trials finished)"
    assert process.returncode == INTERRUPTED

    out = _run("train", "file", str(study), "--storage-path", str(storage), "--resume")
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(_finished_trials(storage / "study", iterations)) == 4
    for trial, results in finished.items():  # not trained again
        assert (trial / "result.json").read_text() == results

    out = _run("evaluate", str(storage / "study"), "--episodes-per-pair", "1")
    assert out.returncode == 0 and "note: this trial" not in out.stdout  # every trial finished
    out = _run("report", str(storage / "study"))
    assert out.returncode == 0, out.stderr[-3000:]
    table = pd.read_csv(storage / "study" / "report" / "report.csv")
    assert sorted(table["group"]) == ["network=mlp", "network=synpo"] and table["trials"].tolist() == [2, 2]


@pytest.mark.parametrize(
    "model_config, message",
    [
        (
            {"grid_search": [{"network": "synpo"}, {"network": "transformer"}]},
            "network must be one of ['mlp', 'modulenet', 'mtl', 'sf', 'sf_env', 'synpo'], got 'transformer'",
        ),
        (
            {"network": {"grid_search": ["synpo", "mlp"]}, "widht": 3},
            "unknown SynPo model_config key(s) ['widht']",
        ),
        ({"grid_search": []}, "grid_search takes a non-empty list"),
    ],
)
def test_a_study_file_with_a_bad_grid_gives_one_line(tmp_path, model_config, message, rllib_here):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"x": {"run": "SynPo", "config": {"model_config": model_config}}}))
    out = rllib_here("train", "file", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line


def test_report_refuses_a_folder_without_trials_and_an_unevaluated_trial(tmp_path):
    out = _run("report", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "holds no Tune trials" in out.stderr.strip().splitlines()[-1]
    trial = tmp_path / "SynPo_synpo_pairs_0_seed=0"
    trial.mkdir()
    (trial / "params.json").write_text(json.dumps({"seed": 0}))
    out = _run("report", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("error: ") and trial.name in line and "rllib evaluate" in line


def test_a_stop_past_the_end_of_a_time_clocked_lr_schedule_is_noted_before_training(tmp_path, rllib_here):
    """``--stop`` lengthening the tuned example's hour leaves the rest of the run at its cosine's
    last rate: the command says so while it checks the file (a storage path under a file then
    stops it before Ray, so nothing trains here)."""
    example = str(Path(__file__).resolve().parents[2] / "tuned_examples" / "synpo_gridworld.yaml")
    (tmp_path / "a_file").write_text("")
    command = ["train", "file", example, "--storage-path", str(tmp_path / "a_file" / "runs")]
    longer = rllib_here(*command, "--stop", '{"time_total_s": 7200}')
    assert longer.returncode == 2
    (note,) = longer.stdout.splitlines()
    assert note.startswith(
        "note: experiment 'synpo-gridworld': its lr schedule ends at 3600 training seconds, before "
        "stop time_total_s 7200; the learning rate stays at 2e-05 from there"
    )
    suggested = note.split("--config '")[1].removesuffix("')")
    schedule = json.loads(suggested)["lr"]
    assert schedule[0] == [0, 0.001] and schedule[1] == [900, 0.000963] and schedule[-1] == [7200, 2.0e-05]
    stretched = rllib_here(*command, "--stop", '{"time_total_s": 7200}', "--config", suggested)
    as_filed = rllib_here(*command)
    assert stretched.returncode == as_filed.returncode == 2
    assert stretched.stdout == as_filed.stdout == ""


# The PPO example names an imitation checkpoint to start from: tests/rllib/test_ppo.py checks it.
TUNED_EXAMPLES = sorted(
    p
    for p in (Path(__file__).resolve().parents[2] / "tuned_examples").glob("**/*.yaml")
    if "ppo" not in p.name
)


@pytest.mark.parametrize("path", TUNED_EXAMPLES, ids=[p.name for p in TUNED_EXAMPLES])
def test_tuned_examples_are_valid(path):
    from rllib_synpo.cli.experiments import load_experiments

    experiments = load_experiments(path)
    assert all(spec["run"] == "SynPo" for spec in experiments.values())


def test_the_resume_command_repeats_the_options_of_the_run():
    from argparse import Namespace

    from rllib_synpo.cli.train import _resume_command

    args = Namespace(
        experiment="x.yaml",
        experiment_names=["b"],
        name="b-seed0",
        config='{"seed": 0}',
        stop=None,
        address=None,
        storage_path="runs",
    )
    expected = (
        """rllib train file x.yaml --experiment b --name b-seed0 --config '{"seed": 0}' """
        """--storage-path runs --resume"""
    )
    assert _resume_command(args) == expected


def test_storage_paths_are_made_absolute_and_uris_kept():
    from rllib_synpo.cli.train import _storage_path

    assert _storage_path("runs") == str(Path("runs").resolve())
    assert _storage_path("s3://bucket/sweeps") == "s3://bucket/sweeps"


@pytest.mark.parametrize(
    "config, cpus",
    [
        ({}, 1),
        ({"num_env_runners": 2}, 3),
        ({"num_cpus_for_main_process": 2}, 2),
        (
            {
                "num_cpus_for_main_process": 2,
                "num_env_runners": {"grid_search": [0, 1]},
                "num_cpus_per_env_runner": 2,
            },
            4,
        ),
        ({"num_learners": 2}, 3),  # the main process and one CPU per learner
        ({"num_learners": 2, "num_cpus_for_main_process": 2, "lr": {"loguniform": [1e-4, 1e-3]}}, 4),
    ],
)
def test_local_ray_has_the_cpus_a_trial_asks_for(config, cpus):
    from rllib_synpo.cli.experiments import trial_resources

    spec = {"run": "SynPo", "env": "synpo_pairs", "config": config}
    assert trial_resources(spec) == {"CPU": cpus, "GPU": 0}
