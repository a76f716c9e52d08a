"""Built-in mazes, the generator, and the ASCII loader's errors."""

import numpy as np
import pytest
from synpo_envs.gridworld import (
    GridWorld,
    MazeFormatError,
    builtin_mazes,
    generate_mazes,
    load_mazes,
    parse_maze,
)
from synpo_envs.gridworld.mazes import BUILTIN_SEED, NUM_BUILTIN_MAZES, write_mazes

ROOM_LINES = (5, 10)


def test_builtin_mazes_are_what_the_generator_makes():
    assert builtin_mazes() == generate_mazes(NUM_BUILTIN_MAZES, BUILTIN_SEED)


def test_builtin_mazes_are_distinct_room_mazes():
    mazes = builtin_mazes()
    assert len({m.walls.tobytes() for m in mazes}) == NUM_BUILTIN_MAZES
    for maze in mazes:
        walls = maze.walls
        assert walls[0].all() and walls[-1].all() and walls[:, 0].all() and walls[:, -1].all()
        doors = sum(int((~walls[line, :]).sum() + (~walls[:, line]).sum()) for line in ROOM_LINES)
        assert doors == 8  # a spanning tree of 9 rooms
        rooms = np.delete(np.delete(walls, [0, 5, 10, 15], axis=0), [0, 5, 10, 15], axis=1)
        assert not rooms.any() and len(maze.free_cells) == 9 * 16 + 8


def test_text_round_trip_and_start(tmp_path):
    text = builtin_mazes()[4].to_text()
    text = text[: 17 * 2 + 3] + "@" + text[17 * 2 + 4 :]  # line 3, column 4
    maze = parse_maze(text)
    assert maze.start == (2, 3) and parse_maze(maze.to_text()) == maze
    path = tmp_path / "mine.txt"
    path.write_text(text)
    env = GridWorld(mazes=[path], use_maze_start=True)
    env.reset(seed=0)
    assert env.agent_pos == (2, 3) and env.observation_space["env_id"].n == 1


def test_user_maze_folder(tmp_path):
    write_mazes(generate_mazes(3, seed=7), tmp_path)
    mazes = load_mazes(tmp_path)
    assert len(mazes) == 3
    env = GridWorld(mazes=str(tmp_path))
    env.reset(seed=1)
    assert env.pair[0] < 3


def _lines():
    return builtin_mazes()[0].to_text().splitlines()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda lines: lines[:15], "expected 16 lines, found 15"),
        (lambda lines: lines[:3] + [lines[3][:15]] + lines[4:], "line 4: expected 16 characters, found 15"),
        (
            lambda lines: lines[:2] + [lines[2][:6] + "x" + lines[2][7:]] + lines[3:],
            "line 3, column 7: unexpected character 'x'",
        ),
        (lambda lines: [" " + lines[0][1:]] + lines[1:], "line 1, column 1: the border must be wall"),
        (lambda lines: lines[:1] + ["#@@" + lines[1][3:]] + lines[2:], "line 2, column 3: a second start"),
        (lambda lines: lines[:1] + ["#" + "#" * 14 + "#"] + lines[2:5] + ["#" * 16] * 11, "not connected"),
    ],
)
def test_malformed_maze_files_name_file_line_and_column(tmp_path, edit, message):
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(edit(_lines())) + "\n")
    with pytest.raises(MazeFormatError) as err:
        load_mazes([path])
    assert str(path) in str(err.value) and message in str(err.value)


def test_missing_maze_paths_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        load_mazes(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        GridWorld(mazes=[tmp_path / "gone.txt"])
    with pytest.raises(MazeFormatError, match="no \\*.txt files"):
        load_mazes(tmp_path)


def test_a_generated_maze_set_needs_no_file():
    from synpo_envs.gridworld.mazes import resolve_mazes

    assert resolve_mazes({"generated": {"count": NUM_BUILTIN_MAZES, "seed": BUILTIN_SEED}}) == builtin_mazes()
    other = resolve_mazes({"generated": {"count": 20, "seed": 2019}})
    assert other == generate_mazes(20, 2019) and not set(other) & set(builtin_mazes())
    env = GridWorld(mazes={"generated": {"count": 3, "seed": 2019}})
    assert env.observation_space["env_id"].n == 3


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"generated": {"count": 0, "seed": 1}}, "generated count must be an integer >= 1, got 0"),
        ({"generated": {"count": 2, "seed": -1}}, "generated seed must be an integer >= 0, got -1"),
        ({"generated": {"count": "20", "seed": 1}}, "generated count must be an integer >= 1, got '20'"),
        ({"generated": {"count": 2}}, r"\{generated: \{count: N, seed: S\}\}"),
        ({"random": 3}, r"mazes \{'random': 3\}: expected a folder"),
    ],
)
def test_bad_generated_maze_specs_are_named(spec, message):
    from synpo_envs.gridworld.mazes import resolve_mazes

    with pytest.raises(MazeFormatError, match=message):
        resolve_mazes(spec)
