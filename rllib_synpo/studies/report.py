"""``rllib report EXPERIMENT_DIR``: the study's tables and figures from a Ray Tune experiment folder.

A study is one Tune experiment (``rllib train file study.yaml``) whose finished trials were
evaluated by ``rllib evaluate EXP`` (each trial folder then holds ``evaluation/summary.json`` and
``evaluation/success_matrix.csv``). Trials that differ only in ``seed`` form a group; each group is
one table row with AvgSR in percent as mean ± sample std (ddof 1) over its seeds, beside the
paper's numbers where the group runs the paper's setting, plus a learning-curve figure (the
periodic evaluations in Tune's ``result.json``) and a figure of each group's mean success matrix.

Trials Tune has not finished (pending, running, errored, paused) are left out of the numbers
and named in the report; a finished trial without an evaluation stops the report, since its
group's numbers would silently come from fewer seeds.

Reads only JSON and CSV files: importing this module loads neither Ray nor matplotlib.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from synpo_envs.gridworld.constants import DEFAULT_WINDOW
from synpo_envs.gridworld.mazes import BUILTIN_SEED, GENERATED_KEY, NUM_BUILTIN_MAZES
from synpo_envs.splits import PAIR_SUBSETS, pair_subsets

from rllib_synpo.checkpoint import MATRIX_FILE, META_FILE, SUMMARY_FILE, TRIAL_EVALUATION, TRIAL_PARAMS
from rllib_synpo.losses import LossWeights
from rllib_synpo.studies.paper_numbers import BLIND, DISPLAY_NAMES, TABLE1, PaperAvgSR

STATE_GLOB = "experiment_state-*.json"
PARAMS_FILE = TRIAL_PARAMS
PROGRESS_FILE = "progress.csv"
RESULTS_FILE = "result.json"  # Tune's results, one JSON object per line
EVALUATION_DIR = TRIAL_EVALUATION
CHECKPOINT_META_FILE = META_FILE
DEFAULT_REPORT_DIR = "report"

FINISHED = "TERMINATED"  # Tune's status of a trial that ran to its stop condition
INTERRUPTED = "TERMINATED before its stop criteria"  # what the report calls a Ctrl-C'd trial
SEED_KEY = "seed"  # the training seed, the one grid value a group averages over
# Seen and unseen pairs; then the unseen pairs split by their first colour (`pair_subsets`).
PARTS, UNSEEN_SUBSETS = PAIR_SUBSETS[:2], PAIR_SUBSETS[2:]
MISSING = "-"

# Result keys (RLlib's nested result keys joined with "/", as progress.csv names its columns).
ITERATION_COLUMN = "training_iteration"
TIME_COLUMN = "time_total_s"
STATES_COLUMN = "learners/__all_modules__/num_module_steps_trained_lifetime"
EVAL_COLUMNS = {part: f"evaluation/{part}_avg_success_rate" for part in PARTS}

# The defaults a params.json leaves out (it holds only what the study file sets): the module's
# network (rllib_synpo.rl_module imports Ray, so it is restated here), the gridworld's window
# and the paper's loss weights.
DEFAULT_NETWORK = "synpo"
DEFAULT_LOSS_WEIGHTS = {"l2": LossWeights().l2, "l3": LossWeights().l3}
GRIDWORLD_ENV = "synpo_pairs"
PAPER_ALGORITHM = "SynPo"  # the paper's numbers are for imitation, not the PPO variant
# The paper's 144 seen / 256 unseen split of 20 mazes x 20 tasks: a ``{"random": {...}}`` split
# may change its seed and cover minimums, and restate these sizes, but nothing else.
PAPER_SPLIT_SIZES = {"num_seen": 144, "num_envs": 20, "num_tasks": 20}
PAPER_SPLIT_FREE_KEYS = {"seed", "min_per_env", "min_per_task"}
PAPER_TABLES = {1: ("window 1", TABLE1), 0: ("window 0", BLIND)}
# The paper's mazes: the built-in set (no ``mazes`` key), or the generator call that made it.
PAPER_MAZES = (None, {GENERATED_KEY: {"count": NUM_BUILTIN_MAZES, "seed": BUILTIN_SEED}})

NO_STATE = "none; trials found from their folders, all counted as finished"
MAX_HEATMAPS = 12
HEATMAP_COLUMNS = 4


class ReportError(ValueError):
    """An experiment folder that cannot be reported (no trials, an unevaluated trial, a bad file)."""


# ---------------------------------------------------------------------------------------------
# Reading the experiment folder


@dataclass(frozen=True)
class Trial:
    """One Tune trial: what the experiment state (or its folder) says about it."""

    name: str  # the trial folder's name, or "<trial_id> (<experiment_tag>)" for one never started
    status: str
    folder: Path | None  # None when Tune never made one
    grid: dict[str, Any]  # its grid values, nested keys joined with "/" ("_model_config/network")
    params: dict  # params.json: the config the study file set ({} for a trial never started)
    trainable: str | None = None

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


@dataclass(frozen=True)
class PaperRow:
    """The paper's numbers that a group is compared with, and which of its rows they are."""

    name: str  # e.g. "SynPo, window 1"
    numbers: PaperAvgSR


@dataclass(frozen=True)
class Group:
    """Evaluated trials that differ only in their seed."""

    label: str
    trials: tuple[EvaluatedTrial, ...]
    paper: PaperRow | None

    @property
    def seeds(self) -> list:
        return sorted((t.trial.seed for t in self.trials), key=seed_order)

    def avgsr(self, part: str) -> tuple[float, float | None] | None:
        """(mean, sample std) of the AvgSR % over seeds; std None for one seed, None if no value."""
        return mean_std([t.avgsr_percent(part) for t in self.trials])

    def states_trained_mean(self) -> float | None:
        return mean_of([t.last_progress_value(STATES_COLUMN) for t in self.trials])

    def train_minutes_mean(self) -> float | None:
        seconds = mean_of([t.last_progress_value(TIME_COLUMN) for t in self.trials])
        return None if seconds is None else seconds / 60.0


@dataclass(frozen=True)
class Study:
    """An experiment folder read: its groups of evaluated trials and the trials left out."""

    folder: Path
    state_files: tuple[Path, ...]  # oldest first; none when the trials were found from their folders
    trials: tuple[Trial, ...]
    groups: tuple[Group, ...]
    missing: tuple[tuple[Trial, str], ...]  # (trial, its group's label), not finished by Tune
    notes: tuple[str, ...] = field(default=())  # e.g. an evaluation of an older checkpoint

    @property
    def evaluated(self) -> list[EvaluatedTrial]:
        return [t for group in self.groups for t in group.trials]


def mean_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def mean_std(values: Iterable[float | None]) -> tuple[float, float | None] | None:
    """(mean, sample std with ddof 1) of the values present; the std is None for one value (a
    single seed has no spread, which is not a spread of 0)."""
    present = np.asarray([v for v in values if v is not None], float)
    if not len(present):
        return None
    return float(present.mean()), (float(present.std(ddof=1)) if len(present) > 1 else None)


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


def state_files(folder: Path) -> list[Path]:
    """Every ``experiment_state-<date>.json``, oldest first: its name's timestamp sorts by time (a
    copy of the folder can reorder modification times), the modification time breaks ties."""
    return sorted(folder.glob(STATE_GLOB), key=lambda p: (p.name, p.stat().st_mtime))


def trials_from_states(folder: Path, states: list[Path]) -> list[Trial]:
    """The trials of every experiment state, a trial that several name (a resumed experiment)
    as the newest names it: a second ``rllib train file`` run into the same folder (other seeds,
    say) writes a state of its own beside the first's."""
    trials: dict[str, Trial] = {}
    for state_file in states:
        trials.update((trial.name, trial) for trial in trials_from_state(folder, state_file))
    return list(trials.values())


def read_params(folder: Path | None) -> dict:
    if folder is None or not (folder / PARAMS_FILE).is_file():
        return {}
    params = read_json(folder / PARAMS_FILE)
    if not isinstance(params, dict):
        raise ReportError(f"{folder / PARAMS_FILE} holds {type(params).__name__}; expected a JSON object")
    return params


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


def is_object_repr(value: Any) -> bool:
    """Whether a params.json value is Tune's text of an object that JSON cannot hold (a callback
    class, a function): "<function f at 0x7f...>" differs between trials without being a grid value."""
    return isinstance(value, str) and value.startswith("<") and " at 0x" in value


def differing_keys(grids: Sequence[dict[str, Any]]) -> list[str]:
    """Keys (in order of first appearance) whose value is not the same in every grid, a key
    missing from some grids included."""
    keys = list(dict.fromkeys(key for grid in grids for key in grid))
    return [key for key in keys if len({canonical(grid.get(key, _ABSENT)) for grid in grids}) > 1]


_ABSENT = object()


def canonical(value: Any) -> str:
    """A comparable text of a JSON value."""
    return "<absent>" if value is _ABSENT else json.dumps(value, sort_keys=True)


# ---------------------------------------------------------------------------------------------
# Groups and their labels


def short_names(keys: Sequence[str], taken: Iterable[str] = (SEED_KEY,)) -> dict[str, str]:
    """Each "/"-joined key's shortest trailing part that no other key ends with and that is not
    ``taken``: "_model_config/network" -> "network", "split/ratio/seed" -> "ratio/seed"."""
    parts = {key: key.split("/") for key in keys}
    names = {}
    for key, path in parts.items():
        for length in range(1, len(path) + 1):
            name = "/".join(path[-length:])
            clash = any(
                other != key and other_path[-length:] == path[-length:] for other, other_path in parts.items()
            )
            if not clash and name not in taken:
                break
        names[key] = name
    return names


def format_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def signature(grid: dict[str, Any], keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(canonical(grid.get(key, _ABSENT)) for key in keys)


def label_keys(grids: Sequence[dict[str, Any]], varying: Sequence[str]) -> list[str]:
    """The varying keys a label needs. Keys under one top-level config key (one grid over whole
    dicts, such as model configs that vary "network" and options only some networks take) are
    thinned: from the last one back, a key is dropped while that config key's values stay told
    apart without it and every group keeps a value to show, so "network" alone names such
    groups. Other keys are all kept."""
    kept = list(varying)
    for key in reversed(varying):
        family = [k for k in kept if top_level(k) == top_level(key)]
        fewer = [k for k in family if k != key]
        told_apart = len({signature(g, fewer) for g in grids}) == len({signature(g, family) for g in grids})
        shown = all(any(k in g for k in fewer) for g in grids if any(k in g for k in family))
        if told_apart and shown:
            kept.remove(key)
    return kept


def top_level(key: str) -> str:
    return key.split("/", 1)[0]


def group_labels(trials: Sequence[Trial], experiment_name: str) -> dict[str, str]:
    """Label of each trial's group, by its non-seed grid values that differ between trials,
    e.g. "network=mlp" or "l2=0, l3=0.001"; the experiment's name when only seeds differ."""
    grids = [t.grid for t in trials]
    varying = label_keys(grids, [key for key in differing_keys(grids) if key != SEED_KEY])
    names = short_names(varying)
    labels = {}
    for trial in trials:
        values = [f"{names[k]}={format_value(trial.grid[k])}" for k in varying if k in trial.grid]
        labels[trial.name] = ", ".join(values) or experiment_name
    return labels


def group_key(trial: Trial) -> str:
    return canonical({key: value for key, value in trial.grid.items() if key != SEED_KEY})


def is_paper_split(split: Any) -> bool:
    """Whether a params.json ``split`` is the paper's 144/256 random split (any seed)."""
    if split is None:
        return True
    if not (isinstance(split, dict) and set(split) == {"random"}):
        return False
    kwargs = split["random"] or {}
    if not isinstance(kwargs, dict):
        return False
    fixed = {key: value for key, value in kwargs.items() if key not in PAPER_SPLIT_FREE_KEYS}
    return all(PAPER_SPLIT_SIZES.get(key) == value for key, value in fixed.items())


def is_default_weight(params: dict, name: str) -> bool:
    value = params.get(name)
    return value is None or math.isclose(float(value), DEFAULT_LOSS_WEIGHTS[name])


def paper_row(trial: Trial) -> PaperRow | None:
    """The paper's numbers for the trial's setting: a network of the paper's table for the
    trial's gridworld window, the 144/256 random split, SynPo imitation on the paper's mazes and
    the default loss weights (an l2/l3 ablation, or another maze set, has none)."""
    params = trial.params
    if trial.trainable not in (None, PAPER_ALGORITHM) or params.get("env", GRIDWORLD_ENV) != GRIDWORLD_ENV:
        return None
    default_weights = all(is_default_weight(params, weight) for weight in DEFAULT_LOSS_WEIGHTS)
    if not (default_weights and is_paper_split(params.get("split"))):
        return None
    model_config = params.get("_model_config") or params.get("model_config") or {}
    network = model_config.get("network", DEFAULT_NETWORK)
    gridworld = (params.get("env_config") or {}).get("gridworld") or {}
    if gridworld.get("mazes") not in PAPER_MAZES:
        return None
    table_name, table = PAPER_TABLES.get(gridworld.get("window", DEFAULT_WINDOW), (None, {}))
    if network not in table:
        return None
    return PaperRow(f"{DISPLAY_NAMES.get(network, network)}, {table_name}", table[network])


# ---------------------------------------------------------------------------------------------
# A finished trial's evaluation and curves


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
            f"run `rllib evaluate {experiment}` first"
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


# ---------------------------------------------------------------------------------------------
# The study


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


def read_study(experiment_dir: str | Path) -> Study:
    """Reads the experiment folder: groups of finished, evaluated trials and the trials left out."""
    folder = Path(experiment_dir).expanduser().resolve()
    states, trials = find_trials(folder)
    labels = group_labels(trials, folder.name)
    finished = [read_evaluated(t, folder) for t in trials if t.status == FINISHED]
    if not finished:
        statuses = ", ".join(sorted({t.status for t in trials}))
        raise ReportError(f"{folder} has no finished trial (statuses {statuses}); expected a {FINISHED} one")
    by_key: dict[str, list[EvaluatedTrial]] = {}
    for evaluated in finished:
        by_key.setdefault(group_key(evaluated.trial), []).append(evaluated)
    groups = [
        Group(labels[members[0].trial.name], tuple(members), paper_row(members[0].trial))
        for members in by_key.values()
    ]
    notes = [note for note in map(stale_evaluation_note, finished) if note]
    missing = tuple((t, labels[t.name]) for t in trials if t.status != FINISHED)
    return Study(folder, tuple(states), tuple(trials), tuple(unique_labels(groups)), missing, tuple(notes))


def unique_labels(groups: list[Group]) -> list[Group]:
    """Groups whose labels coincide (values that print alike, 0 and 0.0) get " #2", " #3"..."""
    seen: dict[str, int] = {}
    unique = []
    for group in groups:
        seen[group.label] = seen.get(group.label, 0) + 1
        label = group.label if seen[group.label] == 1 else f"{group.label} #{seen[group.label]}"
        unique.append(Group(label, group.trials, group.paper))
    return unique


# ---------------------------------------------------------------------------------------------
# Tables


def format_mean_std(stat: tuple[float, float | None] | None, digits: int = 1) -> str:
    if stat is None:
        return MISSING
    mean, std = stat
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def format_number(value: float | None, spec: str) -> str:
    return MISSING if value is None else format(value, spec)


def format_seeds(seeds: Sequence[Any], separator: str = ", ") -> str:
    return separator.join(MISSING if s is None else format_value(s) for s in seeds)


def paper_cell(paper: PaperRow | None, part: str) -> str:
    if paper is None:
        return MISSING
    return format_mean_std((getattr(paper.numbers, part), getattr(paper.numbers, f"{part}_std")))


def markdown_table(groups: Sequence[Group]) -> list[str]:
    lines = [
        (
            "| group | trials | seeds | seen AvgSR % | paper seen AvgSR % | unseen AvgSR % "
            "| paper unseen AvgSR % | paper row | states trained | training minutes "
            "| unseen, first colour uncovered AvgSR % | unseen, first colour covered AvgSR % |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group in groups:
        cells = [
            group.label,
            str(len(group.trials)),
            format_seeds(group.seeds),
            format_mean_std(group.avgsr("seen")),
            paper_cell(group.paper, "seen"),
            format_mean_std(group.avgsr("unseen")),
            paper_cell(group.paper, "unseen"),
            group.paper.name if group.paper else MISSING,
            format_number(group.states_trained_mean(), ",.0f"),
            format_number(group.train_minutes_mean(), ".1f"),
            *(format_mean_std(group.avgsr(part)) for part in UNSEEN_SUBSETS),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def distinct_counts(values: Iterable[Any]) -> str:
    """ "100" when every value is 100, else "100 (4 trials), 2 (1 trial)"."""
    counts: dict[str, int] = {}
    for value in values:
        text = MISSING if value is None else format_value(value)
        counts[text] = counts.get(text, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{text} ({n} trial{'s' if n > 1 else ''})" for text, n in counts.items())


def summary_values(evaluated: Sequence[EvaluatedTrial], key: str) -> str:
    return distinct_counts(t.summary.get(key) for t in evaluated)


def seed_order(seed: Any) -> tuple[bool, Any]:
    """Numbers by value, then anything else by its text."""
    is_number = isinstance(seed, (int, float)) and not isinstance(seed, bool)
    return (not is_number, seed if is_number else format_value(seed))


def setup_lines(study: Study) -> list[str]:
    evaluated = study.evaluated
    source = ", ".join(state.name for state in study.state_files) or NO_STATE
    all_seeds = sorted({t.trial.seed for t in evaluated if t.trial.seed is not None}, key=seed_order)
    lines = [
        f"- Experiment folder: `{study.folder}`",
        f"- Tune experiment states: {source}",
        f"- Trials: {len(study.trials)}; finished and evaluated: {len(evaluated)}",
        f"- Missing trials (not finished, left out of the numbers): {len(study.missing)}",
        *(f"  - {trial.name} ({trial.status}), group {label}" for trial, label in study.missing),
        f"- Seeds: {format_seeds(all_seeds)}",
        f"- Evaluation episodes per pair: {summary_values(evaluated, 'episodes_per_pair')}",
        f"- Evaluation policy: {summary_values(evaluated, 'policy')}",
        (
            "- AvgSR: success rate over the pairs in percent, mean ± sample std (ddof 1) over a group's "
            "seeds; one seed shows the mean alone"
        ),
        (
            "- Unseen, first colour uncovered: the unseen pairs whose task's first colour is the first "
            "colour of no seen task of their maze (covered: the other unseen pairs)"
        ),
        (
            "- States trained: the last learners/__all_modules__/num_module_steps_trained_lifetime of "
            "the trial's results, mean over a group's trials; training minutes: the last time_total_s / 60"
        ),
        (
            "- Paper: SynPo (NeurIPS 2018) supplement, 144/256 split, mean ± std over 3 seeds; only for "
            "groups in the paper's setting (its networks and window, the 144/256 random split, "
            "default l2/l3)"
        ),
    ]
    if study.notes:
        lines += ["- Notes:", *(f"  - {note}" for note in study.notes)]
    return lines


def write_markdown(study: Study, path: Path) -> Path:
    lines = [
        f"# SynPo study report: {study.folder.name}",
        "",
        *markdown_table(study.groups),
        "",
        "## Set-up",
        "",
        *setup_lines(study),
        "",
    ]
    path.write_text("\n".join(lines))
    return path


CSV_COLUMNS = (
    "group",
    "trials",
    "seeds",
    "seen_mean",
    "seen_std",
    "unseen_mean",
    "unseen_std",
    "paper_seen",
    "paper_seen_std",
    "paper_unseen",
    "paper_unseen_std",
    "states_trained_mean",
    "train_minutes_mean",
    "unseen_uncovered_mean",
    "unseen_uncovered_std",
    "unseen_covered_mean",
    "unseen_covered_std",
)


def csv_row(group: Group) -> dict[str, Any]:
    """One group's numbers; "" where there is none (pandas reads it as NaN)."""
    row: dict[str, Any] = {
        "group": group.label,
        "trials": len(group.trials),
        "seeds": format_seeds(group.seeds, " "),
    }
    for part in PARTS + UNSEEN_SUBSETS:
        stat = group.avgsr(part)
        row[f"{part}_mean"] = stat[0] if stat else None
        row[f"{part}_std"] = stat[1] if stat else None
    for part in PARTS:
        row[f"paper_{part}"] = getattr(group.paper.numbers, part) if group.paper else None
        row[f"paper_{part}_std"] = getattr(group.paper.numbers, f"{part}_std") if group.paper else None
    row["states_trained_mean"] = group.states_trained_mean()
    row["train_minutes_mean"] = group.train_minutes_mean()
    return {column: "" if row[column] is None else row[column] for column in CSV_COLUMNS}


def write_csv(study: Study, path: Path) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_row(group) for group in study.groups)
    return path


# ---------------------------------------------------------------------------------------------
# Figures


def evaluation_rows(trial: EvaluatedTrial) -> pd.DataFrame | None:
    """The result rows with a periodic evaluation (time and both AvgSRs), None if none."""
    progress = trial.progress
    if progress is None or TIME_COLUMN not in progress or EVAL_COLUMNS["seen"] not in progress:
        return None
    rows = progress[progress[EVAL_COLUMNS["seen"]].notna()]
    return rows if len(rows) else None


def curve_band(curves: Sequence[pd.DataFrame], part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(minutes, mean AvgSR %, sample std or None for one seed) over seeds, aligned by evaluation
    index (seeds evaluate at nearly the same minutes) and truncated to the shortest curve."""
    length = min(len(c) for c in curves)
    minutes = np.mean([c[TIME_COLUMN].to_numpy(float)[:length] for c in curves], axis=0) / 60.0
    column = EVAL_COLUMNS[part]
    values = 100.0 * np.array(
        [c[column].to_numpy(float)[:length] if column in c else np.full(length, np.nan) for c in curves]
    )
    std = values.std(axis=0, ddof=1) if len(curves) > 1 else None
    return minutes, values.mean(axis=0), std


def plot_curves(groups: Sequence[Group], path: Path, title: str) -> Path:
    """Seen and unseen AvgSR over training minutes, one line per group, mean ± std band."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    plotted = False
    for ax, part in zip(axes, PARTS):
        for group in groups:
            curves = [rows for rows in map(evaluation_rows, group.trials) if rows is not None]
            if not curves:
                continue
            minutes, mean, std = curve_band(curves, part)
            if np.isnan(mean).all():
                continue
            (line,) = ax.plot(minutes, mean, marker="o", ms=3, label=f"{group.label} ({len(curves)} seeds)")
            if std is not None:
                ax.fill_between(minutes, mean - std, mean + std, color=line.get_color(), alpha=0.2)
            plotted = True
        ax.set(xlabel="training minutes", title=f"{part} pairs", ylim=(0, 100))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("AvgSR % (mean ± std over seeds)")
    if plotted:
        axes[0].legend(fontsize=8)
    else:
        axes[0].text(0.5, 0.5, "no periodic evaluations", ha="center", transform=axes[0].transAxes)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def mean_matrix(matrices: Sequence[np.ndarray], group: Group) -> np.ndarray:
    """Pair-wise mean success rate over the trials' matrices, NaN where none evaluated the pair."""
    shapes = {m.shape for m in matrices}
    if len(shapes) > 1:
        raise ReportError(f"group {group.label}: success matrices of shapes {sorted(shapes)}; expected one")
    stack = np.stack(matrices)
    counts = np.isfinite(stack).sum(axis=0)
    totals = np.nansum(stack, axis=0)
    return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def plot_heatmaps(groups: Sequence[Group], path: Path, title: str) -> Path:
    """Each group's mean success matrix (%), seen pairs boxed when the checkpoint names them."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    shown = [(g, [t.matrix for t in g.trials if t.matrix is not None]) for g in groups]
    shown = [(g, matrices) for g, matrices in shown if matrices][:MAX_HEATMAPS]
    columns = max(1, min(len(shown), HEATMAP_COLUMNS))
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False, layout="constrained"
    )
    image = None
    for ax, (group, matrices) in zip(axes.flat, shown):
        image = ax.imshow(100 * mean_matrix(matrices, group), vmin=0, vmax=100, cmap="viridis")
        mask = next((t.seen_mask for t in group.trials if t.seen_mask is not None), None)
        if mask is not None and mask.shape == matrices[0].shape:
            for env_id, task_id in zip(*np.nonzero(mask)):
                box = Rectangle((task_id - 0.5, env_id - 0.5), 1, 1, fill=False, edgecolor="white", lw=0.8)
                ax.add_patch(box)
        ax.set(xlabel="task", ylabel="environment", title=f"{group.label} ({len(matrices)} seeds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.title.set_fontsize(9)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, label="success rate % (seen pairs boxed)")
    else:
        axes[0, 0].text(0.5, 0.5, f"no {MATRIX_FILE}", ha="center", transform=axes[0, 0].transAxes)
    more = len([g for g in groups if any(t.matrix is not None for t in g.trials)]) - len(shown)
    fig.suptitle(title + (f" (first {MAX_HEATMAPS} groups, {more} more)" if more > 0 else ""))
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------------
# Entry point


def write_report(study: Study, out: str | Path) -> list[Path]:
    """report.md, report.csv, curves.png and heatmap.png of the study in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = study.folder.name
    return [
        write_markdown(study, out / "report.md"),
        write_csv(study, out / "report.csv"),
        plot_curves(study.groups, out / "curves.png", f"{name}: periodic evaluations"),
        plot_heatmaps(study.groups, out / "heatmap.png", f"{name}: mean success rate per pair"),
    ]


def report_experiment(
    experiment_dir: str | Path, out: str | Path | None = None, *, echo: Callable[[str], None] | None = print
) -> list[Path]:
    """Writes the study's report of a Tune experiment folder to ``out`` (default
    ``EXPERIMENT_DIR/report``) and returns the written files. ``echo`` (None: silent) gets one
    line per trial left out because Tune has not finished it."""
    study = read_study(experiment_dir)
    if echo is not None:
        for trial, label in study.missing:
            echo(f"left out: {trial.name} ({trial.status}), group {label}")
    return write_report(study, Path(out) if out is not None else study.folder / DEFAULT_REPORT_DIR)
