"""The THOR split (SynPo paper, section 4.2): 144 seen of the 19 kitchens x 21 tasks, every
kitchen and every available task seen; pairs that cannot be posed are never drawn.

THOR >= 1.0 has no "Container" object, so its three tasks are unavailable in every kitchen and
excluded by default. Which other tasks a particular kitchen lacks is only known from a running
build (``python -m synpo_envs.thor --list-tasks``); pass those as ``unavailable_pairs``.
Without them `ThorKitchen` drops such pairs when its player starts and reports them
(`TaskUnavailableWarning`), so fewer than ``num_seen`` pairs are then trained on.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from synpo_envs.splits import PAPER_MIN_COVER, PAPER_NUM_SEEN, Split, SplitError
from synpo_envs.thor.constants import NUM_TASKS, PAPER_KITCHENS, TASK_OBJECTS, TASKS

from rllib_synpo.utils.checks import is_int

# Task ids whose object THOR >= 1.0 kitchens do not have.
CONTAINER_TASKS = tuple(task for task, (obj, _) in enumerate(TASKS) if TASK_OBJECTS[obj] == "Container")


def _allowed(
    num_envs: int, unavailable_tasks: Iterable[int], unavailable_pairs: Iterable[Iterable[int]]
) -> np.ndarray:
    allowed = np.ones((num_envs, NUM_TASKS), bool)
    for task in unavailable_tasks:
        if not 0 <= int(task) < NUM_TASKS:
            raise SplitError(f"unavailable task {task!r} is not a task id 0..{NUM_TASKS - 1}")
        allowed[:, int(task)] = False
    for pair in unavailable_pairs:
        env, task = (int(v) for v in pair)
        if not (0 <= env < num_envs and 0 <= task < NUM_TASKS):
            raise SplitError(
                f"unavailable pair {tuple(pair)} is outside {num_envs} kitchens x {NUM_TASKS} tasks"
            )
        allowed[env, task] = False
    return allowed


def thor_split(
    num_envs: int = len(PAPER_KITCHENS),
    num_seen: int = PAPER_NUM_SEEN,
    min_per_env: int = PAPER_MIN_COVER,
    min_per_task: int = PAPER_MIN_COVER,
    seed: int = 0,
    unavailable_tasks: Iterable[int] = CONTAINER_TASKS,
    unavailable_pairs: Iterable[Iterable[int]] = (),
) -> Split:
    """Seeded seen pairs of ``num_envs`` kitchens x 21 tasks, drawn among the available ones:
    every kitchen seen with ``min_per_env`` tasks and every available task in ``min_per_task``
    kitchens (or as many as can pose it; the paper asks for at least one, the released gridworld
    code for 4), then the rest uniformly (the cover rule of `synpo_envs.splits.random_split`)."""
    if not is_int(num_envs) or num_envs < 1:
        raise SplitError(f"num_envs must be a positive integer, got {num_envs!r}")
    allowed = _allowed(num_envs, unavailable_tasks, unavailable_pairs)
    if not 0 < num_seen <= allowed.sum():
        raise SplitError(f"num_seen={num_seen} must be in [1, {int(allowed.sum())}] (the available pairs)")
    env_target = np.minimum(max(min_per_env, 0), allowed.sum(1))
    task_target = np.minimum(max(min_per_task, 0), allowed.sum(0))
    rng = np.random.default_rng(seed)
    seen = np.zeros_like(allowed)
    while True:
        env_need = np.maximum(env_target - seen.sum(1), 0)
        task_need = np.maximum(task_target - seen.sum(0), 0)
        if not env_need.any() and not task_need.any():
            break
        # The available unseen pair that covers the most outstanding need; random among equals.
        score = np.where(allowed & ~seen, env_need[:, None] + task_need[None, :], -1)
        best = np.argwhere(score == score.max())
        seen[tuple(best[rng.integers(len(best))])] = True
    if seen.sum() > num_seen:
        raise SplitError(
            f"covering every kitchen {min_per_env}x and task {min_per_task}x needs {int(seen.sum())} "
            f"seen pairs, more than num_seen={num_seen}"
        )
    rest = np.flatnonzero((allowed & ~seen).ravel())
    seen.ravel()[rng.choice(rest, size=num_seen - int(seen.sum()), replace=False)] = True
    pairs = tuple((int(env), int(task)) for env, task in np.argwhere(seen))
    return Split(num_envs, NUM_TASKS, pairs, name=f"thor_{num_seen}_of_{num_envs}x{NUM_TASKS}_seed{seed}")
