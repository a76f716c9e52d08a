"""An experiment folder read into a study: its finished, evaluated trials in groups (trials that
differ only in their seed), each group labelled by its grid values and set beside the paper's row
where it runs the paper's setting, and the trials Tune has not finished, named.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from synpo_envs.gridworld.constants import DEFAULT_WINDOW
from synpo_envs.gridworld.mazes import BUILTIN_SEED, GENERATED_KEY, NUM_BUILTIN_MAZES

from rllib_synpo.losses import LossWeights
from rllib_synpo.networks.factory import OPTION_DEFAULTS
from rllib_synpo.studies.paper_numbers import BLIND, DISPLAY_NAMES, TABLE1, PaperAvgSR
from rllib_synpo.studies.trials import (
    FINISHED,
    SEED_KEY,
    STATES_COLUMN,
    TIME_COLUMN,
    EvaluatedTrial,
    ReportError,
    Trial,
    canonical,
    differing_keys,
    find_trials,
    grid_value_text,
    read_evaluated,
    stale_evaluation_note,
)

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
    options: tuple[str, ...] = ()  # `network_options` of its trials

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
        Group(
            labels[members[0].trial.name],
            tuple(members),
            paper_row(members[0].trial),
            network_options(members[0].trial),
        )
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
        unique.append(Group(label, group.trials, group.paper, group.options))
    return unique


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


def seed_order(seed: Any) -> tuple[bool, Any]:
    """Numbers by value, then anything else by its text."""
    is_number = isinstance(seed, (int, float)) and not isinstance(seed, bool)
    return (not is_number, seed if is_number else format_value(seed))


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
    return tuple(grid_value_text(grid, key) for key in keys)


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


def model_config(params: dict) -> dict:
    return params.get("_model_config") or params.get("model_config") or {}


def network_options(trial: Trial) -> tuple[str, ...]:
    """The trial's network options that differ from the paper's network ("maze_map=true"), in
    `OPTION_DEFAULTS` order: a group beside the paper's row may run more than the paper's
    method."""
    config = model_config(trial.params)
    return tuple(
        f"{key}={format_value(config[key])}"
        for key, default in OPTION_DEFAULTS.items()
        if key in config and config[key] != default
    )


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
    network = model_config(params).get("network", DEFAULT_NETWORK)
    gridworld = (params.get("env_config") or {}).get("gridworld") or {}
    if gridworld.get("mazes") not in PAPER_MAZES:
        return None
    table_name, table = PAPER_TABLES.get(gridworld.get("window", DEFAULT_WINDOW), (None, {}))
    if network not in table:
        return None
    return PaperRow(f"{DISPLAY_NAMES.get(network, network)}, {table_name}", table[network])
