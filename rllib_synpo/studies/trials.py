"""The trials of a Ray Tune experiment folder and what each finished one left: Tune's
experiment states (or the trial folders), each trial's params.json, its results (``result.json``,
else ``progress.csv``) and ``rllib evaluate``'s files.

Reads only JSON and CSV files: importing this module loads neither Ray nor matplotlib.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from synpo_envs.splits import PAIR_SUBSETS, pair_subsets

from rllib_synpo.checkpoint import MATRIX_FILE, META_FILE, SUMMARY_FILE, TRIAL_EVALUATION, TRIAL_PARAMS

STATE_GLOB = "experiment_state-*.json"
PARAMS_FILE = TRIAL_PARAMS
PROGRESS_FILE = "progress.csv"
RESULTS_FILE = "result.json"  # Tune's results, one JSON object per line
EVALUATION_DIR = TRIAL_EVALUATION
CHECKPOINT_META_FILE = META_FILE

FINISHED = "TERMINATED"  # Tune's status of a trial that ran to its stop condition
INTERRUPTED = "TERMINATED before its stop criteria"  # what the report calls a Ctrl-C'd trial
SEED_KEY = "seed"  # the training seed, the one grid value a group averages over
# Seen and unseen pairs; then the unseen pairs split by their first colour (`pair_subsets`).
PARTS, UNSEEN_SUBSETS = PAIR_SUBSETS[:2], PAIR_SUBSETS[2:]

# Result keys (RLlib's nested result keys joined with "/", as progress.csv names its columns).
ITERATION_COLUMN = "training_iteration"
TIME_COLUMN = "time_total_s"
STATES_COLUMN = "learners/__all_modules__/num_module_steps_trained_lifetime"
EVAL_COLUMNS = {part: f"evaluation/{part}_avg_success_rate" for part in PARTS}


class ReportError(ValueError):
    """An experiment folder that cannot be reported (no trials, an unevaluated trial, a bad file)."""


@dataclass(frozen=True)
class Trial:
    """One Tune trial: what the experiment state (or its folder) says about it."""

    name: str  # the trial folder's name, or "<trial_id> (<experiment_tag>)" for one never started
    status: str
    folder: Path | None  # None when Tune never made one
    grid: dict[str, Any]  # its grid values, nested keys joined with "/" ("_model_config/network")
    params: dict  # params.json: the config the study file set ({} for a trial never started)
    trainable: str | None = None
    trial_id: str = ""  # Tune's ("31a8d_00003": the run's, then the trial's number in its grid)

    @property
    def seed(self) -> Any:
        return self.grid.get(SEED_KEY, self.params.get(SEED_KEY))


@dataclass(frozen=True)
class EvaluatedTrial:
    """A finished trial with its evaluation and training curves."""

    trial: Trial
    summary: dict  # evaluation/summary.json
    progress: pd.DataFrame | None  # per iteration: time, states trained, evaluations; None if absent
    matrix: np.ndarray | None  # evaluation/success_matrix.csv as (envs, tasks); None if absent
    seen_mask: np.ndarray | None  # seen pairs of the trial's split, from its checkpoint's metadata

    def avgsr_percent(self, part: str) -> float | None:
        """AvgSR % on ``part`` (`PARTS` or `UNSEEN_SUBSETS`) from the summary; an evaluation
        written before the summary had `UNSEEN_SUBSETS` gets them from its success matrix."""
        if part in self.summary:
            rate = self.summary[part].get("avg_success_rate")
        elif part in UNSEEN_SUBSETS and self.matrix is not None and self.seen_mask is not None:
            rates = self.matrix[pair_subsets(self.seen_mask)[part] & ~np.isnan(self.matrix)]
            rate = float(rates.mean()) if len(rates) else None
        else:
            rate = None
        return None if rate is None else 100.0 * float(rate)

    def last_progress_value(self, column: str) -> float | None:
        """The column's last non-empty value in the trial's results (None if it has none)."""
        if self.progress is None or column not in self.progress:
            return None
        values = self.progress[column].dropna()
        return float(values.iloc[-1]) if len(values) else None


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReportError(f"{path} is not readable JSON ({err}); expected a JSON file") from None


def flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level of "/"-joined keys: {"a": {"b": 1}} -> {"a/b": 1}."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{path}/"))
        else:
            flat[path] = value
    return flat


def canonical(value: Any) -> str:
    """A comparable text of a JSON value."""
    return json.dumps(value, sort_keys=True)


def grid_value_text(grid: dict[str, Any], key: str) -> str:
    """A comparable text of the grid's value at ``key``, "<absent>" where the grid has none."""
    return canonical(grid[key]) if key in grid else "<absent>"


def differing_keys(grids: Sequence[dict[str, Any]]) -> list[str]:
    """Keys (in order of first appearance) whose value is not the same in every grid, a key
    missing from some grids included."""
    keys = list(dict.fromkeys(key for grid in grids for key in grid))
    return [key for key in keys if len({grid_value_text(grid, key) for grid in grids}) > 1]


def is_object_repr(value: Any) -> bool:
    """Whether a params.json value is Tune's text of an object that JSON cannot hold (a callback
    class, a function): "<function f at 0x7f...>" differs between trials without being a grid value."""
    return isinstance(value, str) and value.startswith("<") and " at 0x" in value


def find_trials(folder: Path) -> tuple[list[Path], list[Trial]]:
    """(experiment state files, oldest first, trials): from the experiment states when there are
    any (they also name trials never started), else from the trial folders."""
    if not folder.is_dir():
        raise ReportError(f"{folder} is not a folder; expected a Ray Tune experiment folder")
    states = state_files(folder)
    trials = trials_from_states(folder, states) if states else trials_from_folders(folder)
    if not trials:
        raise ReportError(
            f"{folder} holds no Tune trials (no {STATE_GLOB} and no trial folder with {PARAMS_FILE})"
        )
    return states, trials


def state_files(folder: Path) -> list[Path]:
    """Every ``experiment_state-<date>.json``, oldest first: its name's timestamp sorts by time (a
    copy of the folder can reorder modification times), the modification time breaks ties."""
    return sorted(folder.glob(STATE_GLOB), key=lambda p: (p.name, p.stat().st_mtime))


def trials_from_states(folder: Path, states: list[Path]) -> list[Trial]:
    """The trials of every experiment state, a trial that several name (a resumed experiment)
    as the newest names it: a second ``rllib train file`` run into the same folder (other seeds,
    say) writes a state of its own beside the first's. Each run's trials in their grid's order
    (Tune numbers them in their ids), which a resumed run's state does not keep."""
    trials: dict[str, Trial] = {}
    for state_file in states:
        in_grid_order = sorted(trials_from_state(folder, state_file), key=lambda trial: trial.trial_id)
        trials.update((trial.name, trial) for trial in in_grid_order)
    return list(trials.values())


def trials_from_state(folder: Path, state_file: Path) -> list[Trial]:
    """Every trial of Tune's experiment state, started or not."""
    state = read_json(state_file)
    entries = state.get("trial_data") if isinstance(state, dict) else None
    if not isinstance(entries, list):
        raise ReportError(f"{state_file} has no 'trial_data' list; expected Tune's experiment state")
    return [trial_from_entry(folder, state_file, entry) for entry in entries]


def trial_from_entry(folder: Path, state_file: Path, entry: Any) -> Trial:
    """One ``trial_data`` entry: ``[trial JSON string, runtime JSON string]``."""
    raw = entry[0] if isinstance(entry, (list, tuple)) and entry else entry
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as err:
        raise ReportError(f"{state_file}: a trial_data entry is not JSON ({err})") from None
    if not isinstance(data, dict) or "status" not in data:
        raise ReportError(f"{state_file}: a trial_data entry has no 'status'; expected Tune's trial JSON")
    logdir = data.get("relative_logdir")
    trial_folder = folder / logdir if logdir else None
    if logdir:
        name = logdir
    else:
        name = f"{data.get('trial_id', '?')} ({data.get('experiment_tag') or 'never started'})"
    status = str(data["status"])
    if status == FINISHED and not reached_stop(data.get("stopping_criterion"), runtime_result(entry)):
        status = INTERRUPTED  # Tune marks a trial stopped by Ctrl-C TERMINATED too
    return Trial(
        name=name,
        status=status,
        folder=trial_folder,
        grid=flatten(data.get("evaluated_params") or {}),
        params=read_params(trial_folder),
        trainable=data.get("trainable_name"),
        trial_id=str(data.get("trial_id", "")),
    )


def runtime_result(entry: Any) -> dict | None:
    """The last result in a ``trial_data`` entry's runtime JSON, None where there is none."""
    if not isinstance(entry, (list, tuple)) or len(entry) < 2:
        return None
    try:
        runtime = json.loads(entry[1]) if isinstance(entry[1], str) else entry[1]
    except ValueError:
        return None
    result = runtime.get("last_result") if isinstance(runtime, dict) else None
    return result if isinstance(result, dict) else None


def reached_stop(criteria: Any, result: dict | None) -> bool:
    """Whether ``result`` meets one of Tune's stop ``criteria`` (``{metric: value}``, nested
    metrics as "a/b"); True where the state records no criteria or no result to check."""
    if not isinstance(criteria, dict) or not criteria or result is None:
        return True
    flat = flatten(result)
    return any(
        isinstance(flat.get(key), (int, float)) and flat[key] >= value
        for key, value in criteria.items()
        if isinstance(value, (int, float))
    )


def trials_from_folders(folder: Path) -> list[Trial]:
    """Trial folders (those holding params.json) when there is no experiment state: every one
    counts as finished; their grid values are the params.json entries that differ between them."""
    folders = sorted(p for p in folder.iterdir() if (p / PARAMS_FILE).is_file())
    params = [read_params(p) for p in folders]
    flat = [flatten(p) for p in params]
    varying = [key for key in differing_keys(flat) if not any(is_object_repr(f.get(key)) for f in flat)]
    return [
        Trial(name=p.name, status=FINISHED, folder=p, grid={k: f[k] for k in varying if k in f}, params=ps)
        for p, ps, f in zip(folders, params, flat)
    ]


def read_params(folder: Path | None) -> dict:
    if folder is None or not (folder / PARAMS_FILE).is_file():
        return {}
    params = read_json(folder / PARAMS_FILE)
    if not isinstance(params, dict):
        raise ReportError(f"{folder / PARAMS_FILE} holds {type(params).__name__}; expected a JSON object")
    return params


def read_evaluated(trial: Trial, experiment: Path) -> EvaluatedTrial:
    """The trial's evaluation files and curves; a finished trial must have been evaluated."""
    if trial.folder is None:
        raise ReportError(f"trial {trial.name} is {trial.status} but Tune's state names no folder for it")
    if not trial.folder.is_dir():
        raise ReportError(f"trial {trial.name} is {trial.status} but its folder {trial.folder} is missing")
    summary_path = trial.folder / EVALUATION_DIR / SUMMARY_FILE
    if not summary_path.is_file():
        raise ReportError(
            f"trial {trial.folder} has finished but has no {EVALUATION_DIR}/{SUMMARY_FILE}; "
            f"run `rllib evaluate {experiment}` first (the report reads each trial's own "
            f"{EVALUATION_DIR}/ folder, not one written elsewhere with --out)"
        )
    summary = read_json(summary_path)
    if not isinstance(summary, dict) or not all(isinstance(summary.get(part), dict) for part in PARTS):
        raise ReportError(f"{summary_path} lacks 'seen'/'unseen' objects; expected rllib evaluate's")
    return EvaluatedTrial(
        trial=trial,
        summary=summary,
        progress=read_progress(trial.folder),
        matrix=read_matrix(trial.folder / EVALUATION_DIR / MATRIX_FILE),
        seen_mask=read_seen_mask(evaluated_checkpoint(trial.folder, summary)),
    )


def read_progress(folder: Path) -> pd.DataFrame | None:
    """A trial's time, states trained and periodic evaluations, one row per iteration of its
    final timeline (`final_timeline`): from Tune's ``result.json`` (every result's keys), else
    from ``progress.csv``, whose columns are only those of the first result (a trial whose
    updates or evaluations start later has none of theirs there, and the rows a resumed trial
    appends there with more cells than its header are left out)."""
    wanted = {ITERATION_COLUMN, TIME_COLUMN, STATES_COLUMN, *EVAL_COLUMNS.values()}
    results = folder / RESULTS_FILE
    if results.is_file():
        rows = []
        for line in results.read_text().splitlines():
            if line.strip():
                flat = flatten(json.loads(line))
                rows.append({key: flat[key] for key in wanted if key in flat})
        progress = pd.DataFrame(rows, columns=sorted(wanted)) if rows else None
    elif (folder / PROGRESS_FILE).is_file():
        try:
            progress = pd.read_csv(
                folder / PROGRESS_FILE, usecols=lambda column: column in wanted, on_bad_lines="skip"
            )
        except pd.errors.EmptyDataError:
            progress = None
    else:
        progress = None
    return None if progress is None else final_timeline(progress)


def final_timeline(progress: pd.DataFrame) -> pd.DataFrame:
    """The rows of the timeline a trial ended on. Tune appends a resumed trial's results to the
    same files, starting again after its last checkpoint, so the iterations between that
    checkpoint and the interruption are there twice: a row whose iteration does not follow the
    one before it drops the earlier rows from that iteration on."""
    if ITERATION_COLUMN not in progress:
        return progress
    iterations = progress[ITERATION_COLUMN].to_numpy()
    kept: list[int] = []
    for position, iteration in enumerate(iterations):
        while kept and iterations[kept[-1]] >= iteration:
            kept.pop()
        kept.append(position)
    return progress.iloc[kept].reset_index(drop=True)


def read_matrix(path: Path) -> np.ndarray | None:
    if not path.is_file():
        return None
    return pd.read_csv(path, index_col=0).to_numpy(float)


def newest_checkpoint(trial_folder: Path) -> Path | None:
    checkpoints = sorted(p for p in trial_folder.glob("checkpoint_*") if p.is_dir())
    return checkpoints[-1] if checkpoints else None


def evaluated_checkpoint(trial_folder: Path, summary: dict) -> Path | None:
    """The trial's checkpoint that the evaluation names, found by its folder name (the summary's
    absolute path may be another machine's); else the trial's newest checkpoint."""
    name = Path(str(summary.get("checkpoint") or "")).name
    if name and (trial_folder / name).is_dir():
        return trial_folder / name
    return newest_checkpoint(trial_folder)


def read_seen_mask(checkpoint: Path | None) -> np.ndarray | None:
    """(envs, tasks) bool of the seen pairs in the checkpoint's split, None if unreadable: it only
    draws the boxes of the heatmaps."""
    if checkpoint is None or not (checkpoint / CHECKPOINT_META_FILE).is_file():
        return None
    try:
        split = json.loads((checkpoint / CHECKPOINT_META_FILE).read_text())["split"]
        mask = np.zeros((int(split["num_envs"]), int(split["num_tasks"])), bool)
        for env_id, task_id in split["seen"]:
            mask[env_id, task_id] = True
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return mask


def stale_evaluation_note(evaluated: EvaluatedTrial) -> str | None:
    """A note when the evaluation is not of the trial's newest checkpoint."""
    newest = newest_checkpoint(evaluated.trial.folder)
    name = Path(str(evaluated.summary.get("checkpoint") or "")).name
    if newest is None or not name or name == newest.name:
        return None
    return f"{evaluated.trial.name}: the evaluation is of {name}, the newest checkpoint is {newest.name}"
