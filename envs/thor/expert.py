"""The expert of the THOR kitchens: a planner over the scene, replanned at every step.

It uses only what THOR 5.0 reports: ``GetReachablePositions`` (where the agent can stand) and
``event.metadata`` (the agent's position, heading and camera horizon; every object's type,
position, ``visible``, ``pickupable``, ``isPickedUp``, ``openable``, ``isOpen``,
``receptacle`` and ``parentReceptacles``; the inventory; ``cameraPosition``, ``fov`` and the
screen size where THOR sends them).

**Plan.** Empty hand: pick up an object of the task's type; if every such object is shut in a
closed Fridge/Microwave, open that first. Holding it: open the task's receptacle if it is a
closed Fridge/Microwave, then put the object in. Each stage is one interaction as the env maps
it (`synpo_envs.thor.actions.plan_action`: the *nearest visible* task object or receptacle), so
it is done from a pose where a wanted object is that nearest one. Poses are (reachable x, z;
heading 0/90/180/270; camera horizon -30..60 in steps of 30); a breadth-first search over the
agent's navigation actions (move ahead, turn left/right, look up/down) finds the fewest steps to
the nearest such pose.

**Which poses qualify** is predicted from geometry: a wanted object counts as seen when its 3-D
distance from the camera is within ``visibility_distance`` and it lies inside the field of view
(horizontal and vertical) by `VIEW_MARGIN_DEGREES`, after `DISTANCE_MARGIN` metres; a distractor
(another object the interaction could hit) counts as seen on a looser test (horizontal distance
and heading only, with the margins the other way), and the pose qualifies only if no distractor
is nearer. Objects inside a closed openable receptacle are unseen.

**Closed loop.** At every step the expert first asks the env's own action mapping, on the
actual metadata, whether the interaction would hit a wanted object now; if so it acts. A pose
predicted to qualify that the metadata contradicts (THOR's occlusion, object extents), an
interaction that fails there and a move that fails are remembered for the episode and the
search avoids them, so the expert never repeats a failure. Under random perturbations it just
plans again from wherever the agent is.

The stand-in player's visibility rule is the looser test without margins, so on it every
predicted pose really qualifies; on real THOR the closed loop absorbs the difference.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from synpo_envs.thor.actions import ThorAction, held_object_type, plan_action
from synpo_envs.thor.constants import (
    DEFAULT_GRID_SIZE,
    DEFAULT_VISIBILITY_DISTANCE,
    LOOK_DOWN,
    LOOK_UP,
    MOVE_AHEAD,
    OPEN_CLOSE,
    PICK_PUT,
    TASK_OBJECT_TYPES,
    TASK_RECEPTACLE_TYPES,
    TURN_LEFT,
    TURN_RIGHT,
)

# --- THOR 5.0's default agent -----------------------------------------------------------------
ROTATION_STEP = 90  # degrees per RotateLeft/RotateRight
HEADINGS = 4  # 0, 90, 180, 270 degrees; heading 0 faces +z, 90 faces +x
HORIZON_STEP = 30  # degrees per LookUp/LookDown
HORIZONS = (-30, 0, 30, 60)  # camera horizons the agent can reach (positive looks down)
DEFAULT_FIELD_OF_VIEW = 90.0  # degrees, vertical (THOR's default camera)
DEFAULT_CAMERA_HEIGHT = 0.675  # metres above the agent's position y, when no cameraPosition
# --- the visibility prediction ----------------------------------------------------------------
VIEW_MARGIN_DEGREES = 5.0
DISTANCE_MARGIN = 0.1  # metres
POSITION_SCALE = 1000  # positions are compared in millimetres
DISTANCE_QUANTUM = 1e-6  # metres: distances are compared after rounding to this
# Search order of the navigation actions: the first shortest plan in this order is taken.
NAVIGATION = (MOVE_AHEAD, TURN_LEFT, TURN_RIGHT, LOOK_UP, LOOK_DOWN)
OPENABLE_TASK_TYPES = ("Fridge", "Microwave")  # the task receptacles that open


class NoPlanError(RuntimeError):
    """The task cannot be completed from here (its object is shut away where the agent's
    actions cannot open, or every pose that could work has failed)."""


@dataclass(frozen=True)
class Stage:
    """The next interaction: ``action`` (OPEN_CLOSE or PICK_PUT) on one of ``targets``."""

    action: int
    thor_action: str  # what the env must map ``action`` to: OpenObject, PickupObject, PutObject
    targets: frozenset[str]  # object ids that would do
    holding: str | None  # the held type when planned (poses that failed are kept per stage)

    def hits(self, planned: Any) -> bool:
        return (
            isinstance(planned, ThorAction)
            and planned.name == self.thor_action
            and planned.object_id in self.targets
        )


def _closed_parents(
    obj: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    parents = [by_id.get(parent) for parent in obj.get("parentReceptacles") or ()]
    return [p for p in parents if p is not None and p.get("openable") and not p.get("isOpen")]


def next_stage(metadata: Mapping[str, Any], task_types: tuple[str, str]) -> Stage:
    """The task's next interaction given THOR's metadata (raises `NoPlanError` if none)."""
    object_type, receptacle_type = task_types
    objects = metadata["objects"]
    by_id = {obj["objectId"]: obj for obj in objects}
    held = held_object_type(metadata)
    if held is None:
        wanted = [
            o
            for o in objects
            if o["objectType"] == object_type and o.get("pickupable") and not o.get("isPickedUp")
        ]
        free = [o["objectId"] for o in wanted if not _closed_parents(o, by_id)]
        if free:
            return Stage(PICK_PUT, "PickupObject", frozenset(free), held)
        openers = set()
        for obj in wanted:
            shut = _closed_parents(obj, by_id)
            if all(p["objectType"] in OPENABLE_TASK_TYPES for p in shut):
                openers.update(p["objectId"] for p in shut)
        if openers:
            return Stage(OPEN_CLOSE, "OpenObject", frozenset(openers), held)
        raise NoPlanError(f"every {object_type} is shut inside a receptacle the agent cannot open")
    if held != object_type:
        raise NoPlanError(f"the agent holds a {held}, not the task's {object_type}")
    receptacles = [o for o in objects if o["objectType"] == receptacle_type and o.get("receptacle")]
    usable = [r["objectId"] for r in receptacles if not r.get("openable") or r.get("isOpen")]
    if usable:
        return Stage(PICK_PUT, "PutObject", frozenset(usable), held)
    closed = [r["objectId"] for r in receptacles if r["objectType"] in OPENABLE_TASK_TYPES]
    if closed:
        return Stage(OPEN_CLOSE, "OpenObject", frozenset(closed), held)
    raise NoPlanError(f"the kitchen has no {receptacle_type} to put into")


def _candidates(stage: Stage, metadata: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every object the env's interaction could target (`plan_action`'s pool), minus those shut
    away (unseen)."""
    by_id = {obj["objectId"]: obj for obj in metadata["objects"]}
    if stage.action == OPEN_CLOSE:
        pool = [
            o for o in metadata["objects"] if o["objectType"] in TASK_RECEPTACLE_TYPES and o.get("openable")
        ]
    elif stage.holding is None:
        pool = [
            o
            for o in metadata["objects"]
            if o["objectType"] in TASK_OBJECT_TYPES and o.get("pickupable") and not o.get("isPickedUp")
        ]
    else:
        pool = [
            o for o in metadata["objects"] if o["objectType"] in TASK_RECEPTACLE_TYPES and o.get("receptacle")
        ]
    return sorted((o for o in pool if not _closed_parents(o, by_id)), key=lambda o: o["objectId"])


class ThorExpert:
    """Closed-loop planner expert for one `ThorKitchen` episode at a time.

    Per episode: `reset` with the reachable positions and the task's (object, receptacle)
    types; per step: `act` on the latest metadata (the action to take), then `record` the
    action that was executed and whether it succeeded (``info["action_success"]``).
    """

    def __init__(
        self,
        *,
        grid_size: float = DEFAULT_GRID_SIZE,
        visibility_distance: float = DEFAULT_VISIBILITY_DISTANCE,
    ) -> None:
        for name, value in (("grid_size", grid_size), ("visibility_distance", visibility_distance)):
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.grid_size = float(grid_size)
        self.visibility_distance = float(visibility_distance)
        self.task_types: tuple[str, str] = ("", "")
        self._positions = np.zeros((0, 2))
        self._moves = np.zeros((0, HEADINGS), np.int64)
        self._index: dict[tuple[int, int], int] = {}
        self._blocked_moves: set[tuple[int, int]] = set()  # (position, heading) MoveAhead failed
        self._blocked_looks: set[tuple[tuple[int, int, int], int]] = set()  # (state, look action)
        self._failed_poses: set[tuple[Stage, tuple[int, int, int]]] = set()
        self._last: tuple[tuple[int, int, int], Stage, int] | None = None

    @classmethod
    def for_env(cls, env) -> ThorExpert:
        """An expert with a `ThorKitchen`'s grid size and visibility distance."""
        options = env.launch_options
        return cls(grid_size=options.grid_size, visibility_distance=options.visibility_distance)

    def reset(self, reachable: Sequence[tuple[float, float]], task_types: tuple[str, str]) -> None:
        """A new episode: the (x, z) positions the agent can stand on and the task's THOR types."""
        if not reachable:
            raise NoPlanError("no reachable position to plan over")
        self.task_types = tuple(task_types)
        self._positions = np.array(sorted(reachable), dtype=float)
        keys = [self._key(x, z) for x, z in self._positions]
        self._index = {key: i for i, key in enumerate(keys)}
        step = round(self.grid_size * POSITION_SCALE)
        offsets = [
            (
                round(math.sin(math.radians(h * ROTATION_STEP))),
                round(math.cos(math.radians(h * ROTATION_STEP))),
            )
            for h in range(HEADINGS)
        ]
        self._moves = np.array(
            [
                [self._index.get((kx + dx * step, kz + dz * step), -1) for dx, dz in offsets]
                for kx, kz in keys
            ],
            np.int64,
        )
        self._blocked_moves.clear()
        self._blocked_looks.clear()
        self._failed_poses.clear()
        self._last = None

    def reset_for_env(self, env) -> None:
        """`reset` from a `ThorKitchen` that has just been reset."""
        self.reset(env.reachable_positions(), env.task_types)

    # --- acting ---------------------------------------------------------------------------------
    def act(self, metadata: Mapping[str, Any]) -> int:
        """The action to take now (raises `NoPlanError` when the task cannot be completed)."""
        stage = next_stage(metadata, self.task_types)
        state = self._state(metadata)
        if (stage, state) not in self._failed_poses and stage.hits(plan_action(stage.action, metadata)):
            action = stage.action
        else:
            goals = self._goal_poses(stage, metadata)
            if goals[state]:
                # Predicted to work here, but the metadata says otherwise: never try it again.
                self._failed_poses.add((stage, state))
                goals[state] = False
            action = self._first_step(state, goals)
        self._last = (state, stage, action)
        return action

    def record(self, action: int, success: bool) -> None:
        """What happened to the last step: a failed move or interaction the expert chose is
        avoided for the rest of the episode."""
        if self._last is None or success:
            return
        state, stage, chosen = self._last
        if action == MOVE_AHEAD:
            self._blocked_moves.add((state[0], state[1]))
        elif action in (LOOK_UP, LOOK_DOWN):
            self._blocked_looks.add((state, action))
        elif action == chosen == stage.action:
            self._failed_poses.add((stage, state))

    # --- internals -----------------------------------------------------------------------------
    @staticmethod
    def _key(x: float, z: float) -> tuple[int, int]:
        return round(x * POSITION_SCALE), round(z * POSITION_SCALE)

    def _state(self, metadata: Mapping[str, Any]) -> tuple[int, int, int]:
        agent = metadata["agent"]
        x, z = agent["position"]["x"], agent["position"]["z"]
        position = self._index.get(self._key(x, z))
        if position is None:  # off the grid by a rounding error: the nearest reachable position
            distances = np.hypot(self._positions[:, 0] - x, self._positions[:, 1] - z)
            position = int(distances.argmin())
            if distances[position] > self.grid_size / 2:
                raise NoPlanError(f"the agent at ({x:.3f}, {z:.3f}) is not near any reachable position")
        heading = round(agent["rotation"]["y"] / ROTATION_STEP) % HEADINGS
        horizon = min(range(len(HORIZONS)), key=lambda h: abs(HORIZONS[h] - agent.get("cameraHorizon", 0.0)))
        return position, heading, horizon

    def _camera_height(self, metadata: Mapping[str, Any]) -> float:
        camera = metadata.get("cameraPosition")
        if camera:
            return float(camera["y"])
        return float(metadata["agent"]["position"]["y"]) + DEFAULT_CAMERA_HEIGHT

    @staticmethod
    def _half_fields_of_view(metadata: Mapping[str, Any]) -> tuple[float, float]:
        """(horizontal, vertical) half fields of view in degrees."""
        vertical = float(metadata.get("fov") or DEFAULT_FIELD_OF_VIEW)
        width, height = metadata.get("screenWidth") or 1, metadata.get("screenHeight") or 1
        horizontal = 2 * math.degrees(math.atan(math.tan(math.radians(vertical / 2)) * width / height))
        return horizontal / 2, vertical / 2

    def _goal_poses(self, stage: Stage, metadata: Mapping[str, Any]) -> np.ndarray:
        """(positions, headings, horizons) bool: poses from which the interaction is predicted to
        hit one of the stage's targets."""
        pool = _candidates(stage, metadata)
        goals = np.zeros((len(self._positions), HEADINGS, len(HORIZONS)), bool)
        if not any(o["objectId"] in stage.targets for o in pool):
            return goals
        half_h, half_v = self._half_fields_of_view(metadata)
        camera_y = self._camera_height(metadata)
        xyz = np.array([[o["position"]["x"], o["position"]["y"], o["position"]["z"]] for o in pool])
        dx = xyz[:, None, 0] - self._positions[None, :, 0]  # (objects, positions)
        dz = xyz[:, None, 2] - self._positions[None, :, 1]
        flat = np.hypot(dx, dz)
        drop = camera_y - xyz[:, 1:2]
        bearing = np.degrees(np.arctan2(dx, dz))[..., None] - ROTATION_STEP * np.arange(HEADINGS)  # (O, P, H)
        off_axis = np.abs((bearing + 180.0) % 360.0 - 180.0)
        pitch = np.degrees(np.arctan2(drop, flat))[..., None] - np.array(HORIZONS)  # (O, P, horizons)
        loose = (flat <= self.visibility_distance + DISTANCE_MARGIN)[..., None] & (
            off_axis <= half_h + VIEW_MARGIN_DEGREES
        )
        strict = (
            (np.hypot(flat, drop) <= self.visibility_distance - DISTANCE_MARGIN)[..., None, None]
            & (off_axis <= half_h - VIEW_MARGIN_DEGREES)[..., None]
            & (np.abs(pitch) <= half_v - VIEW_MARGIN_DEGREES)[:, :, None, :]
        )
        # The env takes the nearest visible candidate, ties broken by id (pool is id-sorted).
        rank = np.round(flat / DISTANCE_QUANTUM).astype(np.int64) * len(pool) + np.arange(len(pool))[:, None]
        nearest = np.where(loose, rank[..., None], np.iinfo(np.int64).max).argmin(axis=0)  # (P, H)
        is_target = np.array([o["objectId"] in stage.targets for o in pool])
        index = np.broadcast_to(nearest[None, ..., None], (1, *strict.shape[1:]))
        chosen_strict = np.take_along_axis(strict, index, axis=0)[0]  # (P, H, horizons)
        goals[:] = is_target[nearest][..., None] & chosen_strict
        for failed_stage, (p, h, v) in self._failed_poses:
            if failed_stage == stage:
                goals[p, h, v] = False
        return goals

    def _neighbour(self, state: tuple[int, int, int], action: int) -> tuple[int, int, int] | None:
        position, heading, horizon = state
        if action == MOVE_AHEAD:
            target = int(self._moves[position, heading])
            if target < 0 or (position, heading) in self._blocked_moves:
                return None
            return target, heading, horizon
        if action in (TURN_LEFT, TURN_RIGHT):
            return position, (heading + (1 if action == TURN_RIGHT else -1)) % HEADINGS, horizon
        if (state, action) in self._blocked_looks:
            return None
        horizon += 1 if action == LOOK_DOWN else -1
        return (position, heading, horizon) if 0 <= horizon < len(HORIZONS) else None

    def _first_step(self, start: tuple[int, int, int], goals: np.ndarray) -> int:
        """The first navigation action of a shortest path from ``start`` to a goal pose."""
        first: dict[tuple[int, int, int], int] = {start: -1}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            for action in NAVIGATION:
                nxt = self._neighbour(state, action)
                if nxt is None or nxt in first:
                    continue
                first[nxt] = action if first[state] < 0 else first[state]
                if goals[nxt]:
                    return first[nxt]
                queue.append(nxt)
        raise NoPlanError(f"no reachable pose is predicted to reach the targets of {self.task_types}")
