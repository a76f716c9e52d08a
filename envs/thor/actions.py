"""From the agent's 7 discrete actions to THOR 5.0 actions.

Navigation maps one to one. The two interaction actions need a target object, which THOR
leaves to the caller: the target is the *nearest visible* object of the task family (the
paper's seven objects for pick-up, its three receptacles for put-down and open/close), so other
furniture (cabinets, counters) and clutter (knives, bread) are never interaction targets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from synpo_envs.thor.constants import (
    NAVIGATION_THOR_ACTIONS,
    NUM_ACTIONS,
    OPEN_CLOSE,
    PICK_PUT,
    TASK_OBJECT_TYPES,
    TASK_RECEPTACLE_TYPES,
)


@dataclass(frozen=True)
class ThorAction:
    """One THOR ``controller.step`` call: its action name and, for interactions, the target."""

    name: str
    object_id: str | None = None
    object_type: str | None = None

    def step_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"action": self.name}
        if self.object_id is not None:
            # In THOR 5.0 PutObject's objectId is the receptacle, like the other interactions.
            arguments["objectId"] = self.object_id
        return arguments


@dataclass(frozen=True)
class NoTarget:
    """An interaction with nothing to act on in view: a failed action that THOR never sees."""

    reason: str


def held_object_type(metadata: Mapping[str, Any]) -> str | None:
    """The THOR type of the object in the agent's hand, or None."""
    inventory = metadata.get("inventoryObjects") or []
    return inventory[0]["objectType"] if inventory else None


def _nearest_visible(
    metadata: Mapping[str, Any], types: tuple[str, ...], accept: Callable[[Mapping], bool]
) -> Mapping[str, Any] | None:
    candidates = [
        obj
        for obj in metadata["objects"]
        if obj.get("visible") and obj["objectType"] in types and accept(obj)
    ]
    # Ties (same distance) are broken by id so the choice never depends on THOR's list order.
    return min(candidates, key=lambda obj: (obj["distance"], obj["objectId"]), default=None)


def plan_action(action: int, metadata: Mapping[str, Any]) -> ThorAction | NoTarget:
    """The THOR call for discrete ``action`` given the latest ``event.metadata``."""
    if action in NAVIGATION_THOR_ACTIONS:
        return ThorAction(NAVIGATION_THOR_ACTIONS[action])
    if action == OPEN_CLOSE:
        target = _nearest_visible(metadata, TASK_RECEPTACLE_TYPES, lambda obj: obj.get("openable"))
        if target is None:
            return NoTarget(f"no {'/'.join(TASK_RECEPTACLE_TYPES)} that opens is visible")
        name = "CloseObject" if target.get("isOpen") else "OpenObject"
        return ThorAction(name, target["objectId"], target["objectType"])
    if action == PICK_PUT:
        if held_object_type(metadata) is None:
            target = _nearest_visible(
                metadata,
                TASK_OBJECT_TYPES,
                lambda obj: obj.get("pickupable") and not obj.get("isPickedUp"),
            )
            if target is None:
                return NoTarget(f"no {'/'.join(TASK_OBJECT_TYPES)} is visible to pick up")
            return ThorAction("PickupObject", target["objectId"], target["objectType"])
        target = _nearest_visible(metadata, TASK_RECEPTACLE_TYPES, lambda obj: obj.get("receptacle"))
        if target is None:
            return NoTarget(f"no {'/'.join(TASK_RECEPTACLE_TYPES)} is visible to put into")
        return ThorAction("PutObject", target["objectId"], target["objectType"])
    raise ValueError(f"action {action!r} is not one of the {NUM_ACTIONS} actions 0..{NUM_ACTIONS - 1}")
