"""Mazes: the ASCII file format, a loader with precise errors, and the room-maze generator.

File format: exactly ``GRID_SIZE`` lines of ``GRID_SIZE`` characters, ``#`` wall, space floor,
``@`` an optional default start (a floor cell). The border must be wall and all floor cells must
be connected, so that every task can be solved from every start.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from synpo_envs.gridworld.constants import (
    FLOOR_CHAR,
    GRID_SIZE,
    MAZE_CHARS,
    NUM_CELLS,
    NUM_COLOURS,
    ROOM_SIZE,
    ROOM_STRIDE,
    ROOMS_PER_SIDE,
    START_CHAR,
    WALL_CHAR,
)

NUM_BUILTIN_MAZES = 20
# The built-in mazes are `generate_mazes(NUM_BUILTIN_MAZES, seed=BUILTIN_SEED)`, shipped as files
# so they are identical on every machine and numpy version (a test checks the generator still
# reproduces them).
BUILTIN_SEED = 2018
BUILTIN_DIR = "maze_data"
MAZE_SUFFIX = ".txt"


class MazeFormatError(ValueError):
    """A maze file or string that does not follow the format; names source, line and column."""


class MazeFileNotFoundError(FileNotFoundError, MazeFormatError):
    """A maze file or folder that does not exist (both a `FileNotFoundError` and a
    `MazeFormatError`, so one ``except MazeFormatError`` reports every bad maze input)."""


# What a maze file holds, as the errors word it.
MAZE_FILE_EXPECTED = f"a maze file of {GRID_SIZE} lines of {GRID_SIZE} characters among {MAZE_CHARS!r}"


@dataclass(frozen=True, eq=False)
class Maze:
    """One maze: a ``GRID_SIZE`` x ``GRID_SIZE`` wall map and an optional default start."""

    walls: np.ndarray  # (GRID_SIZE, GRID_SIZE) bool
    start: tuple[int, int] | None = None
    name: str = "maze"
    free_cells: np.ndarray = field(init=False, repr=False)  # flat indices of floor cells

    def __post_init__(self) -> None:
        walls = np.asarray(self.walls, dtype=bool)
        walls.setflags(write=False)
        object.__setattr__(self, "walls", walls)
        free = np.flatnonzero(~walls.ravel())
        free.setflags(write=False)
        object.__setattr__(self, "free_cells", free)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Maze) and np.array_equal(self.walls, other.walls) and self.start == other.start
        )

    def __hash__(self) -> int:
        return hash((self.walls.tobytes(), self.start))

    def to_text(self) -> str:
        """The maze in the ASCII file format (with a trailing newline)."""
        rows = [[WALL_CHAR if w else FLOOR_CHAR for w in row] for row in self.walls]
        if self.start is not None:
            rows[self.start[0]][self.start[1]] = START_CHAR
        return "".join("".join(row) + "\n" for row in rows)


def parse_maze(text: str, source: str = "<string>", name: str | None = None) -> Maze:
    """Parses the ASCII format; raises `MazeFormatError` naming ``source``, line and column.
    The maze is named ``name`` (default: ``source``)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline
    lines = [line.rstrip("\r") for line in lines]
    if len(lines) != GRID_SIZE:
        raise MazeFormatError(f"{source}: expected {GRID_SIZE} lines, found {len(lines)}")
    start = None
    for row, line in enumerate(lines):
        if len(line) != GRID_SIZE:
            raise MazeFormatError(
                f"{source}, line {row + 1}: expected {GRID_SIZE} characters, found {len(line)}"
            )
        for col, char in enumerate(line):
            where = f"{source}, line {row + 1}, column {col + 1}"
            if char not in MAZE_CHARS:
                raise MazeFormatError(
                    f"{where}: unexpected character {char!r}; expected one of {MAZE_CHARS!r}"
                )
            on_border = row in (0, GRID_SIZE - 1) or col in (0, GRID_SIZE - 1)
            if on_border and char != WALL_CHAR:
                raise MazeFormatError(f"{where}: the border must be wall ({WALL_CHAR!r})")
            if char == START_CHAR:
                if start is not None:
                    raise MazeFormatError(f"{where}: a second start {START_CHAR!r}")
                start = (row, col)
    walls = np.array([[char == WALL_CHAR for char in line] for line in lines])
    maze = Maze(walls=walls, start=start, name=source if name is None else name)
    _check_playable(maze, source)
    return maze


def _check_playable(maze: Maze, source: str) -> None:
    if len(maze.free_cells) < NUM_COLOURS:
        raise MazeFormatError(
            f"{source}: {len(maze.free_cells)} floor cells; at least {NUM_COLOURS} are needed"
        )
    reached = _reachable(maze.walls, int(maze.free_cells[0]))
    unreached = np.setdiff1d(maze.free_cells, reached)
    if len(unreached):
        row, col = divmod(int(unreached[0]), GRID_SIZE)
        raise MazeFormatError(
            f"{source}, line {row + 1}, column {col + 1}: floor cell not connected to "
            f"line {maze.free_cells[0] // GRID_SIZE + 1}, column {maze.free_cells[0] % GRID_SIZE + 1}"
        )


def _reachable(walls: np.ndarray, origin: int) -> np.ndarray:
    free = ~walls.ravel()
    seen = np.zeros(NUM_CELLS, dtype=bool)
    seen[origin] = True
    frontier = [origin]
    while frontier:
        cell = frontier.pop()
        for nxt in (cell - GRID_SIZE, cell + GRID_SIZE, cell - 1, cell + 1):
            if 0 <= nxt < NUM_CELLS and free[nxt] and not seen[nxt]:
                seen[nxt] = True
                frontier.append(nxt)
    return np.flatnonzero(seen)


def load_maze(path: str | os.PathLike) -> Maze:
    """The maze of one file; its errors start with ``maze file '<path>'``."""
    path = Path(path)
    source = f"maze file {str(path)!r}"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        reason = f"is not UTF-8 text ({err.reason})"
        raise MazeFormatError(f"{source} {reason}: expected {MAZE_FILE_EXPECTED}") from None
    return parse_maze(text, source=source, name=str(path))


def load_mazes(source: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Maze]:
    """Mazes from a folder (every ``*.txt`` in name order) or from a list of files."""
    if isinstance(source, (str, os.PathLike)):
        paths = _folder_maze_files(Path(source))
    else:
        paths = _listed_maze_files(source)
    for path in paths:
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "does not exist"
            raise MazeFileNotFoundError(f"maze file {str(path)!r} {what}: expected {MAZE_FILE_EXPECTED}")
    return [load_maze(path) for path in paths]


def _folder_maze_files(folder: Path) -> list[Path]:
    """The ``*.txt`` files of a maze folder, in name order."""
    expected = f"expected a folder of *{MAZE_SUFFIX} maze files, or a list of maze files"
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise MazeFileNotFoundError(f"maze folder {str(folder)!r} {what}: {expected}")
    paths = sorted(folder.glob(f"*{MAZE_SUFFIX}"))
    if not paths:
        raise MazeFormatError(f"maze folder {str(folder)!r} has no *{MAZE_SUFFIX} files: {expected}")
    return paths


def _listed_maze_files(entries: Iterable[str | os.PathLike]) -> list[Path]:
    entries = list(entries)
    if not entries:
        raise MazeFormatError("an empty list of maze files: expected at least one maze file")
    for entry in entries:
        if not isinstance(entry, (str, os.PathLike)):
            raise MazeFormatError(f"maze file entry {entry!r}: expected the path of a maze file")
    return [Path(entry) for entry in entries]


MAZES_EXPECTED = (
    "expected a folder of maze files, a list of maze files or Mazes, {generated: {count: N, seed: S}}, "
    "or None (the built-in mazes)"
)
GENERATED_KEY = "generated"


def resolve_mazes(
    mazes: str | os.PathLike | Sequence[Maze | str | os.PathLike] | Mapping | None,
) -> list[Maze]:
    """The ``mazes=`` argument of the environments: None (built-ins), a folder, files, Mazes, or
    ``{"generated": {"count": N, "seed": S}}``: `generate_mazes` (a maze set that needs no file,
    the same on every machine of a cluster)."""
    if mazes is None:
        return builtin_mazes()
    if isinstance(mazes, (str, os.PathLike)):
        return load_mazes(mazes)
    if isinstance(mazes, Mapping):
        return _generated_mazes(mazes)
    if not isinstance(mazes, Iterable):
        raise MazeFormatError(f"mazes {mazes!r}: {MAZES_EXPECTED}")
    mazes = list(mazes)
    if mazes and all(isinstance(m, Maze) for m in mazes):
        return mazes
    if any(isinstance(m, Maze) for m in mazes):
        raise TypeError("mazes= mixes Maze objects and file paths; pass one kind")
    return load_mazes(mazes)


def _generated_mazes(spec: Mapping) -> list[Maze]:
    settings = spec.get(GENERATED_KEY) if set(spec) == {GENERATED_KEY} else None
    if not isinstance(settings, Mapping) or set(settings) != {"count", "seed"}:
        raise MazeFormatError(f"mazes {dict(spec)!r}: {MAZES_EXPECTED}")
    count, seed = settings["count"], settings["seed"]
    for key, value, least in (("count", count, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise MazeFormatError(f"mazes: generated {key} must be an integer >= {least}, got {value!r}")
    return list(_cached_generated_mazes(count, seed))


@functools.cache
def _cached_generated_mazes(count: int, seed: int) -> tuple[Maze, ...]:
    return tuple(generate_mazes(count, seed))


@functools.cache
def _builtin_mazes() -> tuple[Maze, ...]:
    folder = resources.files("synpo_envs.gridworld") / BUILTIN_DIR
    return tuple(
        parse_maze(folder.joinpath(builtin_maze_filename(i)).read_text(encoding="utf-8"), f"maze {i}")
        for i in range(NUM_BUILTIN_MAZES)
    )


def builtin_mazes() -> list[Maze]:
    """The 20 built-in mazes (environment ids 0-19)."""
    return list(_builtin_mazes())


def builtin_maze_filename(index: int) -> str:
    return f"maze_{index:02d}{MAZE_SUFFIX}"


# --- Generator --------------------------------------------------------------------------------
def _room_cells(index: int) -> range:
    first = 1 + ROOM_STRIDE * index
    return range(first, first + ROOM_SIZE)


def generate_maze(rng: np.random.Generator, name: str = "generated") -> Maze:
    """A 3 x 3 arrangement of 4 x 4 rooms joined by one-cell doors along a uniformly random
    spanning tree of the rooms (Aldous-Broder), each door at a random cell of the shared wall."""
    walls = np.ones((GRID_SIZE, GRID_SIZE), dtype=bool)
    for room_row in range(ROOMS_PER_SIDE):
        for room_col in range(ROOMS_PER_SIDE):
            rows, cols = _room_cells(room_row), _room_cells(room_col)
            walls[rows.start : rows.stop, cols.start : cols.stop] = False
    num_rooms = ROOMS_PER_SIDE * ROOMS_PER_SIDE
    visited = {0}
    room = 0
    while len(visited) < num_rooms:
        row, col = divmod(room, ROOMS_PER_SIDE)
        neighbours = [
            (row + dr, col + dc)
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
            if 0 <= row + dr < ROOMS_PER_SIDE and 0 <= col + dc < ROOMS_PER_SIDE
        ]
        nrow, ncol = neighbours[rng.integers(len(neighbours))]
        nxt = nrow * ROOMS_PER_SIDE + ncol
        if nxt not in visited:
            visited.add(nxt)
            offset = int(rng.integers(ROOM_SIZE))
            if nrow != row:  # a door in the horizontal wall line between the two rooms
                wall_row = ROOM_STRIDE * max(row, nrow)
                walls[wall_row, _room_cells(col)[offset]] = False
            else:  # a door in the vertical wall line
                wall_col = ROOM_STRIDE * max(col, ncol)
                walls[_room_cells(row)[offset], wall_col] = False
        room = nxt
    return Maze(walls=walls, name=name)


def generate_mazes(count: int, seed: int) -> list[Maze]:
    """``count`` distinct room mazes, the same for the same seed."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.Generator(np.random.PCG64(seed))
    mazes: list[Maze] = []
    while len(mazes) < count:
        maze = generate_maze(rng, name=f"generated {len(mazes)}")
        if maze not in mazes:
            mazes.append(maze)
    return mazes


def write_mazes(mazes: Sequence[Maze], folder: str | os.PathLike) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, maze in enumerate(mazes):
        path = folder / builtin_maze_filename(index)
        path.write_text(maze.to_text(), encoding="utf-8")
        paths.append(path)
    return paths
