"""Which tasks a kitchen can pose, read from the objects THOR reports for it.

A task needs a pickupable object of its object type and a receptacle of its receptacle type in
the kitchen. Nothing is substituted: a task whose object or receptacle is absent (every
"Container" task in THOR >= 1.0) is unavailable there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from synpo_envs.thor.constants import (
    TASK_NAMES,
    TASK_OBJECT_TYPES,
    TASK_OBJECTS,
    TASK_RECEPTACLE_TYPES,
    TASK_RECEPTACLES,
    TASKS,
)

Pair = tuple[int, int]


@dataclass(frozen=True)
class KitchenTasks:
    """The task objects and receptacles found in one kitchen, and so its available tasks."""

    kitchen: str
    missing: tuple[str, ...]  # paper names of the task objects/receptacles the kitchen lacks

    @property
    def available(self) -> tuple[bool, ...]:
        """One flag per task id."""
        return tuple(
            TASK_OBJECTS[obj] not in self.missing and TASK_RECEPTACLES[rec] not in self.missing
            for obj, rec in TASKS
        )

    @property
    def available_task_ids(self) -> tuple[int, ...]:
        return tuple(task for task, ok in enumerate(self.available) if ok)


def survey_kitchen(kitchen: str, objects: Iterable[Mapping]) -> KitchenTasks:
    """Read a kitchen's task objects from THOR's ``event.metadata["objects"]``."""
    objects = list(objects)  # read twice below
    receptacle_types = {obj["objectType"] for obj in objects if obj.get("receptacle")}
    pickupable_types = {obj["objectType"] for obj in objects if obj.get("pickupable")}
    missing = [
        name for name, thor_type in zip(TASK_OBJECTS, TASK_OBJECT_TYPES) if thor_type not in pickupable_types
    ] + [
        name
        for name, thor_type in zip(TASK_RECEPTACLES, TASK_RECEPTACLE_TYPES)
        if thor_type not in receptacle_types
    ]
    return KitchenTasks(kitchen=kitchen, missing=tuple(missing))


def unavailable_pairs(
    pairs: Sequence[Pair], kitchens: Sequence[str], surveys: Mapping[str, KitchenTasks]
) -> tuple[Pair, ...]:
    """The pairs whose task the surveyed kitchen cannot pose."""
    return tuple(
        (env_id, task_id) for env_id, task_id in pairs if not surveys[kitchens[env_id]].available[task_id]
    )


def describe_unavailable(
    excluded: Sequence[Pair], kitchens: Sequence[str], surveys: Mapping[str, KitchenTasks]
) -> str:
    """One line: how many pairs were excluded and what each kitchen lacks."""
    lacking = sorted({kitchens[env_id] for env_id, _ in excluded}, key=kitchens.index)
    reasons = "; ".join(f"{kitchen} lacks {', '.join(surveys[kitchen].missing)}" for kitchen in lacking)
    return (
        f"{len(excluded)} (kitchen, task) pair(s) excluded because the kitchen lacks their object or "
        f"receptacle: {reasons}"
    )


def task_table(surveys: Sequence[KitchenTasks]) -> str:
    """A Markdown table of the tasks per kitchen (the one docs/thor.md shows)."""
    lines = [
        "| kitchen | missing objects/receptacles | available tasks | unavailable tasks |",
        "|---|---|---|---|",
    ]
    for survey in surveys:
        unavailable = [TASK_NAMES[task] for task, ok in enumerate(survey.available) if not ok]
        lines.append(
            f"| {survey.kitchen} | {', '.join(survey.missing) or '-'} | "
            f"{len(survey.available_task_ids)} of {len(TASKS)} | {', '.join(unavailable) or '-'} |"
        )
    return "\n".join(lines)
