"""The optimal expert: all-pairs shortest-path tables, built once per maze.

Treasures are not obstacles and the task fixes the order of its two treasures, so the shortest
path through the remaining task treasures always heads for the task's next treasure: the expert
moves to a neighbour one step closer to it (ties broken in the order up, down, left, right) and
picks it up once there. The whole policy is one table lookup ``next_action[target, agent]``.
"""

from __future__ import annotations

import numpy as np
from synpo_envs.gridworld.constants import (
    ACTION_DELTAS,
    MOVE_ACTIONS,
    NUM_CELLS,
    PICK_UP,
)
from synpo_envs.gridworld.mazes import Maze

UNREACHABLE = np.iinfo(np.int16).max


def distance_table(maze: Maze) -> np.ndarray:
    """``dist[a, b]``: shortest-path length between flat cells a and b (UNREACHABLE for walls).

    Breadth-first search from every cell at once: each sweep extends all frontiers by one step.
    """
    free = ~maze.walls.ravel()
    dist = np.full((NUM_CELLS, NUM_CELLS), UNREACHABLE, dtype=np.int16)
    cells = np.flatnonzero(free)
    dist[cells, cells] = 0
    reached = np.zeros((NUM_CELLS, NUM_CELLS), dtype=bool)
    reached[cells, cells] = True
    frontier = reached.copy()
    step = 0
    while frontier.any():
        step += 1
        grown = np.zeros_like(frontier)
        for delta in ACTION_DELTAS[list(MOVE_ACTIONS)]:
            # Mazes have a wall border, so a shift never wraps from one free cell to another.
            if delta > 0:
                grown[:, delta:] |= frontier[:, :-delta]
            else:
                grown[:, :delta] |= frontier[:, -delta:]
        frontier = grown & free[None, :] & ~reached
        reached |= frontier
        dist[frontier] = step
    return dist


def next_action_table(maze: Maze, dist: np.ndarray | None = None) -> np.ndarray:
    """``table[target, agent]``: the expert's action at ``agent`` heading for ``target``."""
    if dist is None:
        dist = distance_table(maze)
    table = np.full((NUM_CELLS, NUM_CELLS), PICK_UP, dtype=np.uint8)
    decided = np.eye(NUM_CELLS, dtype=bool)  # on the target: pick it up
    agents = np.arange(NUM_CELLS)
    for action in MOVE_ACTIONS:
        neighbours = np.clip(agents + ACTION_DELTAS[action], 0, NUM_CELLS - 1)
        closer = dist[:, neighbours].astype(np.int32) == dist.astype(np.int32) - 1
        choose = closer & ~decided
        table[choose] = action
        decided |= choose
    return table
