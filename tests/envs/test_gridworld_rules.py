"""Rewards, termination and rendering, case by case, on hand-placed layouts."""

import numpy as np
import pytest
from synpo_envs.gridworld import GridWorld, builtin_mazes
from synpo_envs.gridworld.constants import (
    AGENT_RGB,
    DOWN,
    FLOOR_RGB,
    LEFT,
    PICK_UP,
    RIGHT,
    TASK_NAMES,
    TREASURE_RGB,
    UP,
    WALL_RGB,
)

MAZE = builtin_mazes()[0]
TASK_AB = TASK_NAMES.index("AB")
# In maze 0, (1, 1) is a room corner: walls above and left of it.
CORNER = (1, 1)
# Treasures A-E; A is right of the corner, B right of A.
TREASURES = [(1, 2), (1, 3), (3, 3), (4, 4), (2, 2)]


def _env(**kwargs):
    env = GridWorld(**kwargs)
    env.reset(seed=0, options={"pair": (0, TASK_AB), "agent_pos": CORNER, "treasure_pos": TREASURES})
    return env


def test_layout_is_as_placed():
    env = _env()
    assert not MAZE.walls[CORNER] and MAZE.walls[0, 1] and MAZE.walls[1, 0]
    assert env.agent_pos == CORNER
    assert env.treasure_pos.tolist() == [list(p) for p in TREASURES]
    assert env.task == ("A", "B")


def test_step_and_wall_bump():
    env = _env()
    _, reward, terminated, truncated, _ = env.step(DOWN)
    assert reward == pytest.approx(-0.01) and not terminated and not truncated
    assert env.agent_pos == (2, 1)
    env.step(UP)
    _, reward, *_ = env.step(UP)  # into the border wall
    assert reward == pytest.approx(-0.02) and env.agent_pos == CORNER
    _, reward, *_ = env.step(LEFT)
    assert reward == pytest.approx(-0.02) and env.agent_pos == CORNER


def test_pick_up_on_empty_cell_costs_one_step():
    _, reward, terminated, _, info = _env().step(PICK_UP)
    assert reward == pytest.approx(-0.01) and not terminated and not info["success"]


def test_correct_first_pick_then_final_pick():
    env = _env()
    env.step(RIGHT)
    _, reward, terminated, _, info = env.step(PICK_UP)
    assert reward == pytest.approx(0.99) and not terminated and not info["success"]
    assert env.treasure_pos[0].tolist() == [-1, -1]
    env.step(RIGHT)
    _, reward, terminated, truncated, info = env.step(PICK_UP)
    assert reward == pytest.approx(10.99) and terminated and not truncated and info["success"]


def test_second_colour_first_is_a_wrong_pick():
    env = _env()
    env.step(RIGHT)
    env.step(RIGHT)  # on B before A was picked
    _, reward, terminated, _, info = env.step(PICK_UP)
    assert reward == pytest.approx(-10.01) and terminated and not info["success"]


def test_other_colour_is_a_wrong_pick():
    env = _env()
    env.step(DOWN)
    env.step(RIGHT)  # on E at (2, 2)
    _, reward, terminated, _, _ = env.step(PICK_UP)
    assert reward == pytest.approx(-10.01) and terminated
    with pytest.raises(RuntimeError, match="reset"):
        env.step(UP)


def test_truncation_after_max_steps():
    env = _env(max_steps=3)
    for expected in (False, False, True):
        _, _, terminated, truncated, _ = env.step(UP)
        assert truncated is expected and not terminated


def test_reward_overrides():
    env = _env(reward={"step": 0.0, "correct": 5.0})
    env.step(RIGHT)
    assert env.step(PICK_UP)[1] == pytest.approx(5.0)


def _newest_frame(obs):
    return np.moveaxis(obs["obs"][-3:], 0, -1)  # (16, 16, 3)


@pytest.mark.parametrize("window", [0, 1, 2])
def test_rendering_rules(window):
    env = GridWorld(window=window)
    obs, _ = env.reset(seed=0, options={"pair": (0, 0), "agent_pos": (7, 7), "treasure_pos": TREASURES})
    frame = _newest_frame(obs)
    for colour, (row, col) in enumerate(TREASURES):  # visible wherever they are
        assert frame[row, col].tolist() == TREASURE_RGB[colour].tolist()
    assert frame[7, 7].tolist() == list(AGENT_RGB)
    for row in range(16):
        for col in range(16):
            if (row, col) in TREASURES or (row, col) == (7, 7):
                continue
            inside = abs(row - 7) <= window and abs(col - 7) <= window
            expected = (WALL_RGB if MAZE.walls[row, col] else FLOOR_RGB) if inside else (0, 0, 0)
            assert frame[row, col].tolist() == list(expected), (row, col)


def test_agent_hides_the_treasure_it_stands_on():
    env = _env()
    obs, *_ = env.step(RIGHT)
    assert _newest_frame(obs)[1, 2].tolist() == list(AGENT_RGB)


def test_frames_are_stacked_oldest_first_with_zeros_at_reset():
    env = _env()
    obs, _ = env.reset(seed=0, options={"pair": (0, 0), "agent_pos": CORNER, "treasure_pos": TREASURES})
    first = obs["obs"][-3:].copy()
    assert not obs["obs"][:-3].any()
    obs, *_ = env.step(DOWN)
    assert np.array_equal(obs["obs"][-6:-3], first) and not obs["obs"][:-6].any()
    after_down = obs["obs"][-3:].copy()
    for _ in range(3):
        obs, *_ = env.step(UP)
    assert np.array_equal(obs["obs"][:3], after_down)  # the oldest of four, in front
    assert not np.array_equal(after_down, first)


def test_bad_hand_layouts_are_named():
    env = GridWorld()
    with pytest.raises(ValueError, match="agent_pos"):
        env.reset(options={"pair": (0, 0), "agent_pos": (0, 0), "treasure_pos": TREASURES})
    with pytest.raises(ValueError, match="distinct"):
        env.reset(options={"pair": (0, 0), "agent_pos": CORNER, "treasure_pos": [(1, 2)] * 5})
    with pytest.raises(ValueError, match="together"):
        env.reset(options={"pair": (0, 0), "agent_pos": CORNER})


def test_agent_channel_variant_keeps_the_treasure_visible():
    env = _env(agent_channel=True, frame_stack=2)
    obs, *_ = env.step(RIGHT)  # onto A at (1, 2)
    assert obs["obs"].shape == (8, 16, 16)
    newest = obs["obs"][-4:]
    assert newest[:3, 1, 2].tolist() == TREASURE_RGB[0].tolist()
    assert newest[3, 1, 2] == 255 and newest[3].sum() == 255
    assert np.array_equal(newest[:3, 1, 1], FLOOR_RGB)  # the cell it left, plain floor


def test_absent_treasures_leave_out_only_colours_outside_the_task():
    from synpo_envs.gridworld import BatchedGridWorld
    from synpo_envs.gridworld.constants import TASK_COLOURS

    envs = BatchedGridWorld(512, absent_treasures=0.5)
    envs.reset(seed=1)
    present = envs.state.treasures >= 0
    in_task = np.zeros_like(present)
    in_task[np.arange(len(present))[:, None], TASK_COLOURS[envs.state.task_id]] = True
    assert present[in_task].all()  # the task's two treasures are always there
    share = 1 - present[~in_task].mean()
    assert 0.45 < share < 0.55  # 512 x 3 draws of p = 0.5
    expert = envs.grid_spec.task_expert_actions(envs.state.env_id, envs.state.agent, envs.state.treasures)
    assert expert[1][np.arange(512), envs.state.task_id].all()  # every start is possible for its task


def test_absent_treasures_draw_the_same_cells_and_default_to_none():
    from synpo_envs.gridworld.core import GridSpec

    paper, varied = GridSpec(), GridSpec(absent_treasures=0.9)
    for seed in range(20):
        full = paper.sample_layout(np.random.default_rng(seed))
        thinned = varied.sample_layout(np.random.default_rng(seed))
        assert (full.treasures >= 0).all() and full.agent == thinned.agent
        kept = thinned.treasures >= 0
        assert (thinned.treasures[kept] == full.treasures[kept]).all()
    for bad in (-0.1, 1.0, "0.5", True):
        with pytest.raises(ValueError, match="absent_treasures must be a probability in \\[0, 1\\), got"):
            GridSpec(absent_treasures=bad)
