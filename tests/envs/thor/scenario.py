"""Scripted situations in the stand-in kitchen (FloorPlan1, default placement), shared by the
tests. Positions are stand-in cells; see standin_player.LAYOUT."""

from __future__ import annotations

from synpo_envs.thor.constants import (
    LOOK_UP,
    MOVE_AHEAD,
    OPEN_CLOSE,
    PICK_PUT,
    TASK_NAMES,
    TURN_LEFT,
    TURN_RIGHT,
)

from tests.envs.thor import standin_player as standin

FRAME_PIXELS = 32  # small frames keep the stand-in and the featurizer fast
FEATURE_DIM = 8
GRID = standin.DEFAULT_GRID_SIZE  # cells -> metres (the env's default grid size too)


def pose(x: int, z: int, rotation: int, horizon: int = 0) -> dict:
    """A reset ``start_pose`` at stand-in cell (x, z)."""
    return {"x": x * GRID, "z": z * GRID, "rotation": rotation, "horizon": horizon}


def pair(task: str, env_id: int = 0) -> tuple[int, int]:
    return env_id, TASK_NAMES.index(task)


# Facing the island from the south: the Apple (2, 2) is the nearest visible task object (the
# Mug is visible too, the Knife is nearer than the Mug but not a task object); the island blocks
# moving ahead.
AT_ISLAND = pose(2, 1, 0)
# Facing south from the same cell: no object in view.
FACING_NOTHING = pose(2, 1, 180)
# From AT_ISLAND to (0, 5) facing the Fridge (0, 6), the only task receptacle then in view.
TO_FRIDGE = (TURN_LEFT, MOVE_AHEAD, MOVE_AHEAD, TURN_RIGHT) + (MOVE_AHEAD,) * 4
APPLE_TO_FRIDGE = (PICK_PUT, *TO_FRIDGE, OPEN_CLOSE, PICK_PUT)
BLOCKED_MOVE = MOVE_AHEAD  # from AT_ISLAND
LOOK_UP_TWICE = (LOOK_UP, LOOK_UP)  # the second passes the -30 degree limit
