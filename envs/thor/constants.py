"""Every constant of the SynPo AI2-THOR kitchens, in one place.

Names on the left are the paper's; THOR's own names (object types, action names) are spelled
out here once so the rest of the package never guesses them.
"""

from __future__ import annotations

# --- Kitchens ---------------------------------------------------------------------------------
# The 19 kitchens of the paper (THOR 5 has kitchens FloorPlan1-30; the paper used this subset).
# An environment id is an index into this tuple (or into the ``kitchens`` the env is given).
PAPER_KITCHENS = tuple(
    f"FloorPlan{n}" for n in (1, 2, 3, 4, 5, 6, 8, 9, 11, 12, 18, 20, 22, 23, 24, 25, 27, 28, 30)
)
THOR_KITCHEN_NUMBERS = range(1, 31)  # every kitchen scene a THOR 5 build has
THOR_KITCHENS = tuple(f"FloorPlan{n}" for n in THOR_KITCHEN_NUMBERS)

# --- Tasks: "pick up object X and put it in receptacle Y" -------------------------------------
# The paper's object and receptacle names.  "Container" is kept so task ids match the paper,
# but no THOR >= 1.0 kitchen has such an object: its tasks are reported unavailable, never
# mapped onto another type.
TASK_OBJECTS = ("Container", "Lettuce", "Mug", "Tomato", "Plate", "Apple", "Bowl")
TASK_RECEPTACLES = ("Fridge", "Microwave", "Sink")
# The THOR object type behind each paper name, where they differ: THOR models a sink as a
# "Sink" (the counter fixture, not a receptacle) holding a "SinkBasin" (the receptacle).
THOR_TYPE_OF = {"Sink": "SinkBasin"}
TASK_OBJECT_TYPES = tuple(THOR_TYPE_OF.get(name, name) for name in TASK_OBJECTS)
TASK_RECEPTACLE_TYPES = tuple(THOR_TYPE_OF.get(name, name) for name in TASK_RECEPTACLES)
# Task id -> (object index, receptacle index), object-major: task 3k+r is object k into r.
TASKS = tuple((obj, rec) for obj in range(len(TASK_OBJECTS)) for rec in range(len(TASK_RECEPTACLES)))
TASK_NAMES = tuple(f"{TASK_OBJECTS[obj]}->{TASK_RECEPTACLES[rec]}" for obj, rec in TASKS)
NUM_TASKS = len(TASKS)
NUM_HELD_VALUES = 1 + len(TASK_OBJECTS)  # observation "held": 0 nothing, 1 + object index

# --- Actions ----------------------------------------------------------------------------------
MOVE_AHEAD, TURN_LEFT, TURN_RIGHT, LOOK_UP, LOOK_DOWN, OPEN_CLOSE, PICK_PUT = range(7)
NUM_ACTIONS = 7
ACTION_NAMES = (
    "move ahead",
    "turn left",
    "turn right",
    "look up",
    "look down",
    "open/close",
    "pick up/put down",
)
# THOR 5.0 action per navigation action (the interaction actions need a target object).
NAVIGATION_THOR_ACTIONS = {
    MOVE_AHEAD: "MoveAhead",
    TURN_LEFT: "RotateLeft",
    TURN_RIGHT: "RotateRight",
    LOOK_UP: "LookUp",
    LOOK_DOWN: "LookDown",
}

# --- Rewards and episode length ---------------------------------------------------------------
DEFAULT_REWARDS = {
    "step": -0.01,  # every step
    "invalid": -0.01,  # extra, when THOR reports the action failed or it has no visible target
    "correct": 1.0,  # extra, for picking up an object of the task's type
    "complete": 10.0,  # extra, for putting it into the task's receptacle (the episode ends)
    "wrong": -10.0,  # extra, for picking up another task object or putting into another
    # task receptacle (the episode ends as a failure)
}
DEFAULT_MAX_STEPS = 300

# --- Observation ------------------------------------------------------------------------------
DEFAULT_FRAME_STACK = 4
DEFAULT_FRAME_SIZE = 224  # THOR renders width x height; 224 is the ImageNet CNNs' input size

# --- Episode start ----------------------------------------------------------------------------
START_ROTATIONS = (0, 90, 180, 270)  # degrees about y, drawn uniformly
START_HORIZON = 0  # camera pitch in degrees (0 = level)
# THOR's C# randomSeed is a 32-bit signed int.
MAX_SPAWN_SEED = 2**31 - 1
SPAWN_ATTEMPTS = 3  # InitialRandomSpawn seeds tried before an episode start is given up
START_POSE_ATTEMPTS = 5  # reachable positions tried before an episode start is given up
# InitialRandomSpawn arguments: keep every object visible from somewhere, place it resting.
SPAWN_ARGUMENTS = {"forceVisible": True, "numPlacementAttempts": 5, "placeStationary": True}

# --- Controller -------------------------------------------------------------------------------
DEFAULT_GRID_SIZE = 0.25  # metres per MoveAhead
DEFAULT_VISIBILITY_DISTANCE = 1.5  # metres; THOR's default interaction range
DEFAULT_SERVER_TIMEOUT = 100.0  # seconds THOR may take per action (ai2thor's default)
DEFAULT_SERVER_START_TIMEOUT = 300.0  # seconds the player may take to start (ai2thor's default)
PLATFORMS = ("auto", "Linux64", "CloudRendering")
