"""The SynPo gridworld: 20 mazes x 20 two-treasure tasks, an optimal expert, a batched form."""

from synpo_envs.gridworld.batched import BatchedGridWorld
from synpo_envs.gridworld.env import GridWorld
from synpo_envs.gridworld.mazes import (
    Maze,
    MazeFormatError,
    builtin_mazes,
    generate_mazes,
    load_maze,
    load_mazes,
    parse_maze,
)

__all__ = [
    "BatchedGridWorld",
    "GridWorld",
    "Maze",
    "MazeFormatError",
    "builtin_mazes",
    "generate_mazes",
    "load_maze",
    "load_mazes",
    "parse_maze",
]
