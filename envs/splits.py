"""Which (environment, task) pairs are seen in training: the paper's splits, saved as JSON.

- `random_split`: setting 1, a seeded random set of seen pairs covering every environment and
  every task a minimum number of times (default: the paper's 144 of 20 x 20, each >= 4 times).
- `transfer_split`: settings 2 and 3, trained on P = first half of envs x first half of tasks;
  new embeddings learned from one demonstration per pair of the setting's quadrants.
- `ratio_split`: the seen-fraction study on 10 x 10 pairs.

`first_colour_uncovered` marks the unseen pairs whose task starts with a colour that no seen
task of their maze starts with: the hardest unseen pairs of a split, reported on their own;
`pair_subsets` gives the masks of every reported subset (`PAIR_SUBSETS`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from synpo_envs.checks import is_int
from synpo_envs.gridworld.constants import NUM_COLOURS, NUM_TASKS, TASK_COLOURS
from synpo_envs.gridworld.mazes import NUM_BUILTIN_MAZES

Pair = tuple[int, int]
PAPER_NUM_SEEN = 144
PAPER_MIN_COVER = 4
SPLIT_FORMAT_VERSION = 1
QUADRANTS = ("P", "cross_env", "cross_task", "Q")  # (P env, P task), (Q env, P task), ...
# The pair subsets results are reported on: seen, unseen, and the unseen pairs split by
# `first_colour_uncovered` into those it marks and the others.
PAIR_SUBSETS = ("seen", "unseen", "unseen_uncovered", "unseen_covered")
TRANSFER_SETTINGS = (2, 3)
RATIO_GRID = 10


class SplitError(ValueError):
    """An impossible split request or a malformed split file."""


@dataclass(frozen=True)
class Split:
    """Seen pairs of a ``num_envs`` x ``num_tasks`` grid (everything else is unseen), and the
    pairs that give one adaptation demonstration (settings 2/3 only)."""

    num_envs: int
    num_tasks: int
    seen: tuple[Pair, ...]
    adapt: tuple[Pair, ...] = ()
    name: str = "split"
    _seen_set: frozenset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for label, n in (("num_envs", self.num_envs), ("num_tasks", self.num_tasks)):
            if not is_int(n) or n < 1:
                raise SplitError(f"{label} must be a positive integer, got {n!r}")
            object.__setattr__(self, label, int(n))  # JSON-safe
        object.__setattr__(self, "seen", self._check_pairs("seen", self.seen))
        object.__setattr__(self, "adapt", self._check_pairs("adapt", self.adapt))
        object.__setattr__(self, "_seen_set", frozenset(self.seen))
        if not self.seen:
            raise SplitError("a split needs at least one seen pair")

    def _check_pairs(self, label: str, pairs: Iterable) -> tuple[Pair, ...]:
        checked = []
        for pair in pairs:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(is_int(v) for v in pair):
                raise SplitError(f"{label} pair {pair!r} is not (env_id, task_id)")
            env_id, task_id = int(pair[0]), int(pair[1])
            if not (0 <= env_id < self.num_envs and 0 <= task_id < self.num_tasks):
                raise SplitError(
                    f"{label} pair {(env_id, task_id)} out of range: env_id must be in "
                    f"[0, {self.num_envs}) and task_id in [0, {self.num_tasks})"
                )
            checked.append((env_id, task_id))
        if len(set(checked)) != len(checked):
            raise SplitError(f"{label} pairs contain duplicates")
        return tuple(sorted(checked))

    @property
    def all_pairs(self) -> tuple[Pair, ...]:
        return tuple((e, t) for e in range(self.num_envs) for t in range(self.num_tasks))

    @property
    def unseen(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.all_pairs if p not in self._seen_set)

    def is_seen(self, pair: Pair) -> bool:
        return tuple(pair) in self._seen_set

    def seen_mask(self) -> np.ndarray:
        """(num_envs, num_tasks) bool, True for seen pairs."""
        mask = np.zeros((self.num_envs, self.num_tasks), dtype=bool)
        mask[tuple(np.array(self.seen).T)] = True
        return mask

    def first_colour_uncovered(self) -> np.ndarray:
        """(num_envs, num_tasks) bool: `first_colour_uncovered` of this split's seen pairs."""
        return first_colour_uncovered(self.seen_mask())

    def to_dict(self) -> dict:
        return {
            "format_version": SPLIT_FORMAT_VERSION,
            "name": self.name,
            "num_envs": self.num_envs,
            "num_tasks": self.num_tasks,
            "seen": [list(p) for p in self.seen],
            "adapt": [list(p) for p in self.adapt],
        }

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> Split:
        expected = {"format_version", "name", "num_envs", "num_tasks", "seen", "adapt"}
        if not isinstance(data, dict):
            raise SplitError(f"{source}: expected a JSON object, got {type(data).__name__}")
        unknown, missing = set(data) - expected, {"num_envs", "num_tasks", "seen"} - set(data)
        if unknown or missing:
            raise SplitError(f"{source}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
        if data.get("format_version", SPLIT_FORMAT_VERSION) != SPLIT_FORMAT_VERSION:
            raise SplitError(
                f"{source}: format_version {data['format_version']!r}; expected {SPLIT_FORMAT_VERSION}"
            )
        try:
            return cls(
                num_envs=data["num_envs"],
                num_tasks=data["num_tasks"],
                seen=data["seen"],
                adapt=data.get("adapt", ()),
                name=data.get("name", "split"),
            )
        except SplitError as err:
            raise SplitError(f"{source}: {err}") from None

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Split:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise SplitError(f"{path}: not valid JSON ({err})") from None
        return cls.from_dict(data, source=str(path))


def first_colour_uncovered(seen_mask: np.ndarray) -> np.ndarray:
    """(E, T) bool, True for the unseen pairs (env, task) whose task's first colour is the
    first colour of no seen task of env: in training the agent never went for that colour
    first in that maze. ``seen_mask`` is (E, T) over the gridworld's first T tasks."""
    seen_mask = np.asarray(seen_mask, dtype=bool)
    return ~seen_mask & ~first_colour_in_seen_task(seen_mask, position=0)


def first_colour_in_seen_task(seen_mask: np.ndarray, position: int) -> np.ndarray:
    """(E, T) bool, True for the pairs (env, task) where some seen task of env has the task's
    first colour at ``position`` (0: as its first colour, 1: as its second)."""
    seen_mask = np.asarray(seen_mask, dtype=bool)
    if seen_mask.ndim != 2 or seen_mask.shape[1] > NUM_TASKS:
        raise ValueError(f"seen_mask must be (envs, tasks <= {NUM_TASKS}), got shape {seen_mask.shape}")
    first = TASK_COLOURS[: seen_mask.shape[1], 0]  # (T,) each task's first colour
    at_position = TASK_COLOURS[: seen_mask.shape[1], position]
    colour_seen = np.stack([(seen_mask & (at_position == c)).any(axis=1) for c in range(NUM_COLOURS)], axis=1)
    return colour_seen[:, first]


def pair_subsets(seen_mask: np.ndarray) -> dict[str, np.ndarray]:
    """(E, T) bool mask of each of `PAIR_SUBSETS`, given the split's (E, T) seen pairs."""
    seen_mask = np.asarray(seen_mask, dtype=bool)
    uncovered = first_colour_uncovered(seen_mask)
    return {
        "seen": seen_mask,
        "unseen": ~seen_mask,
        "unseen_uncovered": uncovered,
        "unseen_covered": ~seen_mask & ~uncovered,
    }


def uncovered_pair_subsets(seen_mask: np.ndarray) -> dict[str, np.ndarray]:
    """(E, T) bool masks of the first-colour-uncovered unseen pairs (`first_colour_uncovered`),
    and of them those whose first colour a seen task of their maze picks second
    ("second_colour": the agent went for it there, after another treasure) and those whose first
    colour no seen task of their maze holds ("no_seen_task")."""
    uncovered = first_colour_uncovered(seen_mask)
    second = first_colour_in_seen_task(seen_mask, position=1)
    return {"uncovered": uncovered, "second_colour": uncovered & second, "no_seen_task": uncovered & ~second}


def random_split(
    num_envs: int = NUM_BUILTIN_MAZES,
    num_tasks: int = NUM_TASKS,
    num_seen: int = PAPER_NUM_SEEN,
    min_per_env: int = PAPER_MIN_COVER,
    min_per_task: int = PAPER_MIN_COVER,
    seed: int = 0,
) -> Split:
    """Seeded random seen pairs; every environment is seen with at least ``min_per_env`` tasks
    and every task in at least ``min_per_task`` environments.

    First a cover is built greedily (the least-covered environment takes the least-covered task
    it lacks, ties broken at random), then the remaining seen pairs are drawn uniformly.
    """
    if not is_int(seed) or seed < 0:  # numpy's own refusal names no value
        raise SplitError(f"seed={seed!r} must be an integer >= 0")
    total = num_envs * num_tasks
    if not 0 < num_seen <= total:
        raise SplitError(f"num_seen={num_seen} must be in [1, {total}] for {num_envs} x {num_tasks} pairs")
    if min_per_env > num_tasks or min_per_task > num_envs:
        raise SplitError(
            f"min_per_env={min_per_env} exceeds num_tasks={num_tasks} or "
            f"min_per_task={min_per_task} exceeds num_envs={num_envs}"
        )
    needed = max(num_envs * min_per_env, num_tasks * min_per_task)
    if num_seen < needed:
        raise SplitError(
            f"num_seen={num_seen} is too few: covering {num_envs} envs x {min_per_env} and "
            f"{num_tasks} tasks x {min_per_task} needs at least {needed} seen pairs"
        )
    rng = np.random.default_rng(seed)
    seen = np.zeros((num_envs, num_tasks), dtype=bool)
    while True:
        env_need = np.maximum(min_per_env - seen.sum(1), 0)
        task_need = np.maximum(min_per_task - seen.sum(0), 0)
        if not env_need.any() and not task_need.any():
            break
        # The unseen pair that covers the most outstanding need; random among equals.
        score = np.where(seen, -1, env_need[:, None] + task_need[None, :])
        best = np.argwhere(score == score.max())
        seen[tuple(best[rng.integers(len(best))])] = True
    if seen.sum() > num_seen:
        raise SplitError(
            f"could not cover every env {min_per_env}x and task {min_per_task}x with "
            f"{num_seen} seen pairs (needed {int(seen.sum())}); ask for more seen pairs"
        )
    rest = np.flatnonzero(~seen.ravel())
    extra = rng.choice(rest, size=num_seen - int(seen.sum()), replace=False)
    seen.ravel()[extra] = True
    pairs = [tuple(map(int, p)) for p in np.argwhere(seen)]
    return Split(num_envs, num_tasks, tuple(pairs), name=f"random_{num_seen}_of_{total}_seed{seed}")


def quadrant(pair: Pair, num_envs: int = NUM_BUILTIN_MAZES, num_tasks: int = NUM_TASKS) -> str:
    """Which of the transfer settings' quadrants a pair is in: P, cross_env (new environment,
    known task), cross_task (known environment, new task) or Q (both new)."""
    new_env, new_task = pair[0] >= num_envs // 2, pair[1] >= num_tasks // 2
    return QUADRANTS[int(new_env) + 2 * int(new_task)]


def transfer_split(setting: int, num_envs: int = NUM_BUILTIN_MAZES, num_tasks: int = NUM_TASKS) -> Split:
    """Settings 2 and 3: train on P; adapt from one demo per pair of the cross quadrants
    (setting 2) or of Q x Q (setting 3)."""
    if setting not in TRANSFER_SETTINGS:
        raise SplitError(f"setting must be one of {TRANSFER_SETTINGS}, got {setting!r}")
    if num_envs < 2 or num_tasks < 2:
        raise SplitError(f"transfer splits need >= 2 envs and tasks, got {num_envs} x {num_tasks}")
    groups: dict[str, list[Pair]] = {name: [] for name in QUADRANTS}
    for env_id in range(num_envs):
        for task_id in range(num_tasks):
            groups[quadrant((env_id, task_id), num_envs, num_tasks)].append((env_id, task_id))
    adapt = groups["cross_env"] + groups["cross_task"] if setting == 2 else groups["Q"]
    return Split(num_envs, num_tasks, tuple(groups["P"]), tuple(adapt), name=f"setting{setting}")


def ratio_split(fraction: float, seed: int = 0, size: int = RATIO_GRID) -> Split:
    """The seen-fraction study: ``fraction`` of ``size`` x ``size`` pairs seen, each env and
    task at least once."""
    if not 0.0 < fraction <= 1.0:
        raise SplitError(f"fraction must be in (0, 1], got {fraction!r}")
    num_seen = round(fraction * size * size)
    split = random_split(size, size, max(num_seen, size), 1, 1, seed)
    return Split(size, size, split.seen, name=f"ratio_{fraction:.2f}_seed{seed}")
