"""Every constant and encoding of the SynPo gridworld, in one place.

Grid cells are addressed either as (row, col) or as a flat index ``row * GRID_SIZE + col``;
the environments use flat indices internally because a move is then a single addition.
"""

from __future__ import annotations

import numpy as np

GRID_SIZE = 16
NUM_CELLS = GRID_SIZE * GRID_SIZE

# --- Maze layout (every built-in maze is 3 x 3 rooms of 4 x 4 cells) -------------------------
ROOMS_PER_SIDE = 3
ROOM_SIZE = 4
# Rows/cols 0, 5, 10 and 15 are walls; room i spans cells 1 + 5 i .. 4 + 5 i.
ROOM_STRIDE = ROOM_SIZE + 1

WALL_CHAR = "#"
FLOOR_CHAR = " "
START_CHAR = "@"
MAZE_CHARS = (WALL_CHAR, FLOOR_CHAR, START_CHAR)

# --- Actions ----------------------------------------------------------------------------------
UP, DOWN, LEFT, RIGHT, PICK_UP = range(5)
NUM_ACTIONS = 5
ACTION_NAMES = ("up", "down", "left", "right", "pick-up")
MOVE_ACTIONS = (UP, DOWN, LEFT, RIGHT)  # also the expert's tie-break order
# Change of the flat cell index per action (pick-up does not move).
ACTION_DELTAS = np.array([-GRID_SIZE, GRID_SIZE, -1, 1, 0], dtype=np.int64)

# --- Treasures and tasks ----------------------------------------------------------------------
COLOUR_LETTERS = "ABCDE"
COLOUR_NAMES = ("red", "blue", "green", "orange", "purple")
NUM_COLOURS = len(COLOUR_LETTERS)
# The 20 tasks, "pick X, then Y", in the original release's order (tasks 0-9 use each colour
# twice as first and twice as second).
TASK_NAMES = [
    "AB",
    "BC",
    "CD",
    "DE",
    "EA",
    "AC",
    "BD",
    "CE",
    "DA",
    "EB",
    "AD",
    "BE",
    "CA",
    "DB",
    "EC",
    "AE",
    "BA",
    "CB",
    "DC",
    "ED",
]
NUM_TASKS = len(TASK_NAMES)
# TASK_COLOURS[task] = (first colour, second colour) as colour indices.
TASK_COLOURS = np.array(
    [[COLOUR_LETTERS.index(name[0]), COLOUR_LETTERS.index(name[1])] for name in TASK_NAMES],
    dtype=np.int64,
)
TREASURES_PER_TASK = TASK_COLOURS.shape[1]

# --- Rewards and episode length ---------------------------------------------------------------
DEFAULT_REWARDS = {
    "step": -0.01,  # every step
    "wall": -0.01,  # extra, for bumping into a wall (the agent stays)
    "correct": 1.0,  # extra, for picking the task's next treasure
    "complete": 10.0,  # extra, for picking the task's last treasure (the episode ends)
    "wrong": -10.0,  # extra, for picking any other treasure (the episode ends as a failure)
}
DEFAULT_MAX_STEPS = 300

# --- Observation ------------------------------------------------------------------------------
DEFAULT_WINDOW = 1  # walls/floor visible in the (2l+1) x (2l+1) window; 0 is the "blind" agent
DEFAULT_FRAME_STACK = 4
RGB_CHANNELS = 3
BLACK = (0, 0, 0)  # cells outside the window
WALL_RGB = (96, 96, 96)
FLOOR_RGB = (200, 200, 200)
AGENT_RGB = (255, 255, 255)
AGENT_MARK = 255  # the agent's cell in the optional 4th (agent) channel
TREASURE_RGB = np.array(
    [(230, 25, 25), (30, 60, 230), (25, 190, 40), (255, 140, 0), (150, 40, 200)], dtype=np.uint8
)
