"""``rllib train file``: the experiments of a YAML file through Ray Tune, on a local Ray of its
own or on a cluster (``--address`` / ``RAY_ADDRESS``), one experiment after another (the trials
of each side by side as Ray's resources allow), or only those ``--experiment`` names. Everything
the command can check is checked before Ray starts: the file with ``--config`` merged in
(`load_experiments`), ``--stop``, the storage folders, and that a cluster's address answers (Ray
itself would retry an unreachable one for minutes)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import shlex
import socket
import sys
from pathlib import Path

from rllib_synpo.checkpoint import atomic_write
from rllib_synpo.cli.errors import USAGE_ERROR, UsageError, check_output_folder, first_line
from rllib_synpo.cli.experiments import (
    check_stop,
    experiment_config,
    load_experiments,
    lr_schedule_note,
    trial_resources,
)

DEFAULT_STORAGE = "~/ray_results"
# Addresses that mean a local Ray of the command's own (None: no address given).
LOCAL_ADDRESSES = (None, "local")
# How long a cluster's address may take to accept a connection before the command gives up.
ADDRESS_CHECK_TIMEOUT_S = 5.0
ADDRESS_EXPECTED = "expected the address of a running Ray head node (`ray start --head` prints it)"
STOP_EXAMPLE = """'{"training_iteration": 10}'"""
CONFIG_EXAMPLE = """'{"seed": 0}'"""
# What the progress rows show for SynPo and SynPoPPO trials (result key: column), besides the
# trial's name, status and the grid's parameters.
SYNPO_PROGRESS_COLUMNS = {
    "training_iteration": "iter",
    "time_total_s": "seconds",
    "learners/synpo/policy_loss": "policy loss",
    "learners/synpo/action_accuracy": "step accuracy",
    "last_evaluation/seen_avg_success_rate": "seen AvgSR",
    "last_evaluation/unseen_avg_success_rate": "unseen AvgSR",
    "learners/__all_modules__/num_module_steps_trained_throughput": "states/s",
}
SYNPO_ALGORITHMS = ("SynPo", "SynPoPPO")
PROGRESS_EVERY_S = 30
# Where a trial's own stdout and stderr go, in its folder (Ray forwards nothing to the console).
TRIAL_STDOUT, TRIAL_STDERR = "stdout.txt", "stderr.txt"
# Exit status when a trial fails (a Ray, RLlib or model error rather than bad input).
TRIAL_FAILED = 1
# Exit status when trials stopped before their stop criteria (Ctrl-C): the shell's status for a
# command ended by SIGINT, so `rllib train file ... && rllib evaluate ...` stops there rather
# than evaluating half-trained trials.
INTERRUPTED = 128 + 2


def train_file(args: argparse.Namespace) -> int:
    stop_override = parse_stop(args.stop) if args.stop is not None else None
    config_override = parse_config(args.config) if args.config is not None else None
    address, address_source = ray_address(args.address)
    local_ray = address in LOCAL_ADDRESSES
    if not local_ray:
        check_reachable(address, address_source)
    experiments = load_experiments(
        args.experiment, local_ray=local_ray, config_override=config_override, names=args.experiment_names
    )
    if args.name is not None:
        experiments = renamed(experiments, args.name, args.experiment)
    for name, spec in experiments.items():
        if stop_override is not None:
            spec["stop"] = stop_override
        note = lr_schedule_note(name, spec)
        if note:
            print(note)
        spec["storage_path"] = _checked_storage_path(*_storage_choice(args, name, spec))
        spec.setdefault("checkpoint_config", {"checkpoint_frequency": 1, "checkpoint_at_end": True})
        # Each trial's own output (and a traceback of its failure) goes to files in its folder,
        # not to this console, which shows the progress table and one line per failure.
        spec["log_to_file"] = (TRIAL_STDOUT, TRIAL_STDERR)
        spec["sync_config"] = {"sync_artifacts": True}  # the files are copied into the trial's folder
        spec["config"] = experiment_config(spec)
        spec.pop("env", None)
    if local_ray:
        _absolute_thor_executable_variable()
    from ray import tune
    from ray.tune.error import TuneError

    from rllib_synpo.cli.interrupt import checkpoint_on_interrupt
    from rllib_synpo.cli.stop_check import StopCriteriaCheck, without_tunes_missing_criterion_warning

    _init_ray(address, address_source, experiments)
    logging.getLogger("ray.tune.tune").addFilter(_without_tunes_interrupt_lines)
    logging.getLogger("ray.tune.analysis.experiment_analysis").addFilter(_without_tunes_interrupt_lines)
    logging.getLogger("ray.tune.execution.tune_controller").addFilter(_trial_failure_without_traceback)
    logging.getLogger("ray.tune.experiment.trial").addFilter(without_tunes_missing_criterion_warning)
    stop_check = StopCriteriaCheck()
    for folder in experiment_folders(experiments):
        print(f"results and TensorBoard logs: {folder} (tensorboard --logdir {folder})")
    # One Tune run per experiment, one after another: Tune keeps a run's state in its first
    # experiment's folder and, resuming, moves every trial there (a later experiment's
    # checkpoints are then not found), so each experiment is a run of its own that resumes alone.
    trials = []
    with checkpoint_on_interrupt() as callbacks:
        if callbacks:  # where this process can take signals: the check ends the run by one
            callbacks = [*callbacks, stop_check]
        for position, (name, spec) in enumerate(experiments.items()):
            if args.resume and "://" not in spec["storage_path"]:
                _forget_decisions_on_failed_trials(Path(spec["storage_path"]) / name)
            try:
                trials += tune.run_experiments(
                    {name: spec},
                    # A resume also reruns the trials that errored (a worker killed, a node lost),
                    # each from its last checkpoint.
                    resume="AUTO+ERRORED" if args.resume else False,
                    verbose=1,
                    progress_reporter=progress_reporter({name: spec}),
                    callbacks=callbacks,
                )
            except TuneError as err:
                failed = err.args[1] if len(err.args) > 1 else []
                print(
                    f"error: experiment {name!r}: {_failures(failed)}; once the cause is fixed, "
                    f"rerun them from their last checkpoints with: {_resume_command(args)}",
                    file=sys.stderr,
                )
                return TRIAL_FAILED
            if stop_check.problem:
                print(f"error: experiment {name!r}: {stop_check.problem}", file=sys.stderr)
                return USAGE_ERROR
            unfinished = [trial for trial in trials if not _reached_stop(trial)]
            if unfinished:
                not_started = list(experiments)[position + 1 :]
                later = f" (experiment(s) {not_started} not started)" if not_started else ""
                print(
                    f"{len(unfinished)} of {len(trials)} trial(s) stopped before their stop criteria{later}; "
                    f"continue from the last checkpoints with: {_resume_command(args)}"
                )
                return INTERRUPTED
    return 0


def renamed(experiments: dict, name: str, path: str) -> dict:
    """``--name``: the one experiment under a folder name of the user's."""
    if len(experiments) != 1:
        raise UsageError(
            f"--name {name!r}: {path!r} holds {len(experiments)} experiments {list(experiments)}: "
            "expected one (pick it with --experiment)"
        )
    if name in ("", ".", "..") or "/" in name or os.sep in name:
        raise UsageError(f"--name {name!r}: expected a folder name (not empty, '.' or '..', no '/')")
    return {name: next(iter(experiments.values()))}


def _failures(trials: list) -> str:
    """Which trials failed and where Tune wrote each one's traceback."""
    if not trials:
        return "trials did not complete"
    named = []
    for trial in trials:
        error_file = trial.run_metadata.error_filename
        where = f"{trial.path}/{error_file}" if error_file and trial.path else trial.path
        named.append(f"{trial} ({trial.status}, see {where})")
    return f"{len(trials)} trial(s) did not complete: " + ", ".join(named)


def experiment_folders(experiments: dict) -> list[str]:
    """Where each experiment's trials write their results (Tune's storage folder)."""
    return [f"{spec['storage_path'].rstrip('/')}/{name}" for name, spec in experiments.items()]


def progress_reporter(experiments: dict):
    """Tune's table of trials with what a SynPo user watches (`SYNPO_PROGRESS_COLUMNS`) when
    every experiment runs SynPo or SynPoPPO, else Tune's default table."""
    from ray.tune import CLIReporter

    if any(spec["run"] not in SYNPO_ALGORITHMS for spec in experiments.values()):
        return None

    class SynPoReporter(CLIReporter):
        """Names the storage folders as the results' logdir (Tune names its driver's
        artifacts folder under /tmp/ray)."""

        def report(self, trials, done, *sys_info) -> None:
            with contextlib.redirect_stdout(io.StringIO()) as table:
                super().report(trials, done, *sys_info)
            lines = table.getvalue().splitlines()
            logdirs = [f"Result logdir: {folder}" for folder in experiment_folders(experiments)]
            first = next((i for i, line in enumerate(lines) if line.startswith("Result logdir: ")), None)
            lines = [line for line in lines if not line.startswith("Result logdir: ")]
            print("\n".join(lines if first is None else [*lines[:first], *logdirs, *lines[first:]]))

    # Tune's newer console ignores a reporter; its older one (this) takes the columns.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    return SynPoReporter(
        metric_columns=SYNPO_PROGRESS_COLUMNS,
        max_report_frequency=PROGRESS_EVERY_S,
        sort_by_metric=False,
    )


def parse_stop(text: str) -> dict:
    """``--stop``: a JSON object of stop criteria."""
    stop = _json_object("--stop", text, f"result names to numbers, e.g. {STOP_EXAMPLE}")
    return check_stop(stop, "--stop", example=STOP_EXAMPLE)


def parse_config(text: str) -> dict:
    """``--config``: a JSON object of settings merged into every experiment's config (the
    settings themselves are checked with the file's)."""
    return _json_object("--config", text, f"config settings, e.g. {CONFIG_EXAMPLE}")


def _json_object(flag: str, text: str, what: str) -> dict:
    expected = f"expected a JSON object of {what}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        problem = f"is not valid JSON ({err.msg} at column {err.colno})"
        raise UsageError(f"{flag} {text!r} {problem}: {expected}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag} {text!r} holds a JSON {type(value).__name__}: {expected}")
    return value


def _storage_choice(args: argparse.Namespace, name: str, spec: dict) -> tuple[str, str]:
    """(where an experiment's results go, the option or setting that says so)."""
    if args.storage_path:
        return args.storage_path, "--storage-path"
    if spec.get("storage_path"):
        return spec["storage_path"], f"{args.experiment}: experiment {name!r}: storage_path"
    return DEFAULT_STORAGE, "the default storage path"


def _checked_storage_path(path: str, source: str) -> str:
    """`_storage_path`, after checking that a local folder can be created or written."""
    if "://" not in path:
        check_output_folder(path, source)
    return _storage_path(path)


def _storage_path(path: str) -> str:
    """A local folder made absolute (Tune needs one), or a URI (``s3://``, ``gs://``...) as is."""
    return path if "://" in path else str(Path(path).expanduser().resolve())


def ray_address(flag: str | None) -> tuple[str | None, str]:
    """(the Ray cluster to join, or None for a local Ray of our own; the option that named it)."""
    if flag:
        return flag, "--address"
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    return None, ""


def check_reachable(address: str, source: str) -> None:
    """Refuses a cluster address where nothing accepts a TCP connection within
    `ADDRESS_CHECK_TIMEOUT_S` (``ray.init`` retries such an address for minutes). ``auto`` and
    URIs other than ``ray://`` are left to Ray."""
    if address == "auto" or ("://" in address and not address.startswith("ray://")):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"{source} {address!r} is not HOST:PORT: {ADDRESS_EXPECTED}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=ADDRESS_CHECK_TIMEOUT_S):
            pass
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        raise UsageError(
            f"{source} {address!r}: nothing answers there ({reason}): {ADDRESS_EXPECTED}"
        ) from None


def _absolute_thor_executable_variable() -> None:
    """A relative ``SYNPO_THOR_EXECUTABLE`` made absolute for the local Ray's processes (they
    inherit it, and Tune runs each trial in its own folder)."""
    from rllib_synpo.env.thor_pair_env import THOR_EXECUTABLE_ENV

    value = os.environ.get(THOR_EXECUTABLE_ENV)
    if value:
        os.environ[THOR_EXECUTABLE_ENV] = str(Path(value).expanduser().absolute())


def _init_ray(address: str | None, source: str, experiments: dict) -> None:
    import ray

    if address not in LOCAL_ADDRESSES:
        try:
            ray.init(address=address, log_to_driver=False)
        except ConnectionError as err:
            raise UsageError(f"{source} {address!r}: {first_line(err)}: {ADDRESS_EXPECTED}") from None
        return
    # A trial asks for its main process's CPUs (its torch threads: Ray sets OMP_NUM_THREADS to
    # them) + its env runners' and learners'; on a small machine more logical CPUs than cores
    # keep it from waiting forever (the processes then share the cores).
    needed = max(trial_resources(spec)["CPU"] for spec in experiments.values())
    num_cpus = max(os.cpu_count() or 1, math.ceil(needed))
    # "local": a new Ray of our own even when another one runs on this machine (joining a
    # cluster is what --address / RAY_ADDRESS are for).
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)


def _without_tunes_interrupt_lines(record: logging.LogRecord) -> bool:
    """Drops Tune's lines on Ctrl-C: its notice that it stops (`checkpoint_on_interrupt` prints
    what happens instead), its hint that names its Python API (``tune.run_experiments(...,
    resume=True)``), where ``train_file`` prints the command that resumes, and its warning that
    a trial not started yet has no results to read (a FileNotFoundError that is no error)."""
    message = record.getMessage()
    return not (
        "Resume experiment with" in message
        or message.startswith(("Stop signal received", "Failed to fetch metrics"))
    )


def _forget_decisions_on_failed_trials(experiment_folder: Path) -> None:
    """Clears the per-trial decisions Tune keeps in its run state before a resume. A trial that
    failed while saving a checkpoint (its process killed, say) leaves a STOP queued for after that
    save; Tune restores it and stops the rerun trial at its first checkpoint. A state file in
    another format is left as it is."""
    for state_file in experiment_folder.glob("experiment_state-*.json"):
        state = json.loads(state_file.read_text())
        runner = state.get("runner_data", {})
        pending = [key for key in ("_cached_trial_decisions", "_queued_trial_decisions") if runner.get(key)]
        if not pending:
            continue
        for key in pending:
            runner[key] = {}
        atomic_write(state_file, json.dumps(state))


def _trial_failure_without_traceback(record: logging.LogRecord) -> bool:
    """Keeps Tune's line that a trial failed (the study's other trials go on) without its
    traceback, which Tune writes to the trial's ``error.txt``; ``train_file`` names that file."""
    if record.getMessage().startswith("Trial task failed for trial"):
        record.exc_info, record.exc_text = None, None
        record.msg = f"{record.getMessage()} (its traceback is in the trial's error.txt)"
        record.args = ()
    return True


def _reached_stop(trial) -> bool:
    """Whether a trial met one of its stop criteria (Tune marks a Ctrl-C'd trial TERMINATED too)."""
    from rllib_synpo.studies.trials import FINISHED, reached_stop

    return trial.status == FINISHED and reached_stop(trial.stopping_criterion, trial.last_result or {})


def _resume_command(args: argparse.Namespace) -> str:
    words = ["rllib", "train", "file", args.experiment]
    for name in args.experiment_names or []:
        words += ["--experiment", name]
    options = (
        ("--name", args.name),
        ("--config", args.config),
        ("--stop", args.stop),
        ("--address", args.address),
        ("--storage-path", args.storage_path),
    )
    for flag, value in options:
        if value:
            words += [flag, value]
    return shlex.join([*words, "--resume"])
