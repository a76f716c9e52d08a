"""The gridworld's rules, vectorized over N episodes: the single source of truth for both
`GridWorld` (N = 1) and `BatchedGridWorld`.

State lives in flat numpy arrays (one entry per episode), positions are flat cell indices, and
every step, render and expert query is a handful of whole-array operations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from synpo_envs.checks import is_int
from synpo_envs.gridworld.constants import (
    ACTION_DELTAS,
    AGENT_MARK,
    AGENT_RGB,
    DEFAULT_FRAME_STACK,
    DEFAULT_MAX_STEPS,
    DEFAULT_REWARDS,
    DEFAULT_WINDOW,
    FLOOR_RGB,
    GRID_SIZE,
    NUM_CELLS,
    NUM_COLOURS,
    NUM_TASKS,
    PICK_UP,
    RGB_CHANNELS,
    TASK_COLOURS,
    TREASURE_RGB,
    TREASURES_PER_TASK,
    WALL_RGB,
)
from synpo_envs.gridworld.expert import next_action_table
from synpo_envs.gridworld.mazes import Maze, resolve_mazes

# Rendering writes cells that must not be drawn (picked treasures, window cells beyond the grid)
# to this extra cell, which is then dropped; that keeps every draw a single unmasked assignment.
_DISCARD_CELL = NUM_CELLS
_LAYOUT_DRAWS = 1 + NUM_COLOURS + 1  # pair, treasure cells, agent cell
Pair = tuple[int, int]


@dataclass(frozen=True)
class Rewards:
    """Reward terms; see `DEFAULT_REWARDS` for their meaning."""

    step: float
    wall: float
    correct: float
    complete: float
    wrong: float

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, float] | None) -> Rewards:
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(DEFAULT_REWARDS))
        if unknown:
            raise ValueError(f"unknown reward key(s) {unknown}; expected some of {sorted(DEFAULT_REWARDS)}")
        values = {**DEFAULT_REWARDS, **overrides}
        for key, value in values.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"reward {key!r} must be a finite number, got {value!r}")
        return cls(**{key: float(value) for key, value in values.items()})


@dataclass(frozen=True)
class Layout:
    """Where an episode starts: its pair, the five treasure cells (by colour) and the agent."""

    env_id: int
    task_id: int
    treasures: np.ndarray  # (NUM_COLOURS,) flat cells
    agent: int


class GridSpec:
    """Everything fixed across episodes: mazes, pairs, observation and reward settings, and the
    per-maze tables derived from them. Built once and shared by all episodes of an env."""

    def __init__(
        self,
        *,
        mazes=None,
        pairs: Sequence[Pair] | None = None,
        window: int = DEFAULT_WINDOW,
        frame_stack: int = DEFAULT_FRAME_STACK,
        max_steps: int = DEFAULT_MAX_STEPS,
        reward: Mapping[str, float] | None = None,
        use_maze_start: bool = False,
        agent_channel: bool = False,
        absent_treasures: float = 0.0,
    ) -> None:
        self.mazes: list[Maze] = resolve_mazes(mazes)
        self.num_envs = len(self.mazes)
        self.num_tasks = NUM_TASKS
        _check_int("window", window, 0, GRID_SIZE - 1)
        _check_int("frame_stack", frame_stack, 1, None)
        _check_int("max_steps", max_steps, 1, None)
        self.window = window
        self.frame_stack = frame_stack
        self.max_steps = max_steps
        self.rewards = Rewards.from_overrides(reward)
        self.use_maze_start = use_maze_start
        # Not the paper's (0): each treasure outside the episode's task is left out of the start
        # with this probability, so training data shows every maze with varied treasure sets.
        if (
            isinstance(absent_treasures, bool)
            or not isinstance(absent_treasures, (int, float))
            or not 0 <= absent_treasures < 1
        ):
            raise ValueError(f"absent_treasures must be a probability in [0, 1), got {absent_treasures!r}")
        self.absent_treasures = float(absent_treasures)
        if pairs is None:
            pairs = [(e, t) for e in range(self.num_envs) for t in range(self.num_tasks)]
        self.pairs = np.array([self.check_pair(p) for p in pairs], dtype=np.int64).reshape(-1, 2)
        if len(self.pairs) == 0:
            raise ValueError("pairs is empty; give at least one (env_id, task_id)")
        # The paper draws the agent over its cell; agent_channel=True keeps the cell's colour
        # (a treasure under the agent stays visible) and marks the agent in a 4th channel.
        self.agent_channel = bool(agent_channel)
        self.frame_channels = RGB_CHANNELS + int(self.agent_channel)
        self.obs_shape = (self.frame_channels * frame_stack, GRID_SIZE, GRID_SIZE)

        self.walls = np.stack([m.walls.ravel() for m in self.mazes])  # (M, NUM_CELLS)
        self.free_cells = [m.free_cells for m in self.mazes]
        self._next_action: np.ndarray | None = None
        self.view_frames = _view_frames(self.walls, window, self.agent_channel)

    def check_pair(self, pair) -> Pair:
        try:
            env_id, task_id = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"a pair must be (env_id, task_id), got {pair!r}") from None
        if not (0 <= env_id < self.num_envs and 0 <= task_id < self.num_tasks):
            raise ValueError(
                f"pair {tuple(pair)!r} out of range: env_id must be in [0, {self.num_envs}) "
                f"and task_id in [0, {self.num_tasks})"
            )
        return env_id, task_id

    @property
    def next_action(self) -> np.ndarray:
        """(M, target cell, agent cell) expert actions, built on first use (~20 ms per maze)."""
        if self._next_action is None:
            self._next_action = np.stack([next_action_table(m) for m in self.mazes])
        return self._next_action

    def task_expert_actions(
        self, env_id: np.ndarray, agent: np.ndarray, treasures: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The expert's action for every task at the given states (N, T), and whether the state
        is possible for that task (its second treasure still there). For relabelling data."""
        first = treasures[:, TASK_COLOURS[:, 0]]
        second = treasures[:, TASK_COLOURS[:, 1]]
        target = np.where(first >= 0, first, second)
        actions = self.next_action[env_id[:, None], np.maximum(target, 0), agent[:, None]]
        return actions.astype(np.int64), second >= 0

    def sample_layout(self, rng: np.random.Generator, pair: Pair | None = None) -> Layout:
        """Draws a start: the pair (unless given), 5 distinct treasure cells, the agent's cell
        (any floor cell, possibly under a treasure, or the maze's ``@`` with use_maze_start).
        Single and batched envs both call this, so the same seed gives the same episodes."""
        draws = rng.random(_LAYOUT_DRAWS)  # one generator call: resets are on the hot path
        if pair is None:
            env_id, task_id = self.pairs[int(draws[0] * len(self.pairs))]
        else:
            env_id, task_id = pair
        free = self.free_cells[env_id]
        chosen: list[int] = []  # distinct indices into `free`, drawn without replacement
        for k in range(NUM_COLOURS):
            index = int(draws[1 + k] * (len(free) - k))  # the index-th of the cells left
            for taken in sorted(chosen):
                index += index >= taken
            chosen.append(index)
        treasures = free[chosen]
        if self.absent_treasures > 0:  # drawn only then: the paper's setting keeps its stream
            absent = rng.random(NUM_COLOURS) < self.absent_treasures
            absent[TASK_COLOURS[task_id]] = False
            treasures = np.where(absent, -1, treasures)
        start = self.mazes[env_id].start
        if self.use_maze_start and start is not None:
            agent = start[0] * GRID_SIZE + start[1]
        else:
            agent = free[int(draws[-1] * len(free))]
        return Layout(int(env_id), int(task_id), treasures, int(agent))

    def fixed_layout(self, pair: Pair, agent_pos, treasure_pos) -> Layout:
        """A layout given by hand: agent (row, col) and the five treasures' (row, col)
        (colour order A-E); every cell must be floor and treasures distinct."""
        env_id, task_id = pair
        walls = self.mazes[env_id].walls
        cells = []
        for label, pos in [("agent_pos", agent_pos)] + [
            (f"treasure_pos[{k}]", p) for k, p in enumerate(treasure_pos)
        ]:
            try:
                row, col = (int(v) for v in pos)
            except (TypeError, ValueError):
                raise ValueError(f"{label} must be (row, col), got {pos!r}") from None
            if not (0 <= row < GRID_SIZE and 0 <= col < GRID_SIZE) or walls[row, col]:
                raise ValueError(f"{label}={pos!r} is not a floor cell of maze {env_id}")
            cells.append(row * GRID_SIZE + col)
        if len(cells) != 1 + NUM_COLOURS or len(set(cells[1:])) != NUM_COLOURS:
            raise ValueError(f"treasure_pos must be {NUM_COLOURS} distinct cells, got {treasure_pos!r}")
        return Layout(env_id, task_id, np.array(cells[1:], dtype=np.int64), cells[0])


def _check_int(name: str, value, low: int, high: int | None) -> None:
    if not is_int(value) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")


def _view_frames(walls: np.ndarray, window: int, agent_channel: bool) -> np.ndarray:
    """(M, NUM_CELLS, C, NUM_CELLS + 1) uint8: for every maze and agent cell, the frame before
    treasures are drawn (walls and floor inside the window, black elsewhere, the agent), plus a
    discard cell. A few MB for 20 mazes; it turns drawing into one gather."""
    rows, cols = np.divmod(np.arange(NUM_CELLS), GRID_SIZE)
    near = (np.abs(rows[:, None] - rows[None, :]) <= window) & (
        np.abs(cols[:, None] - cols[None, :]) <= window
    )
    channels = RGB_CHANNELS + int(agent_channel)
    frames = np.zeros((len(walls), NUM_CELLS, channels, NUM_CELLS + 1), dtype=np.uint8)
    for channel in range(RGB_CHANNELS):
        colour = np.where(walls, WALL_RGB[channel], FLOOR_RGB[channel])  # (M, NUM_CELLS)
        frames[:, :, channel, :NUM_CELLS] = np.where(near[None], colour[:, None, :], 0)
    agent = np.arange(NUM_CELLS)
    if agent_channel:
        frames[:, agent, RGB_CHANNELS, agent] = AGENT_MARK
    else:
        frames[:, agent, :, agent] = AGENT_RGB
    return frames


class GridBatch:
    """The state of N episodes, their stacked observations, and the vectorized rules."""

    def __init__(self, spec: GridSpec, size: int) -> None:
        self.spec = spec
        self.size = size
        self.env_id = np.zeros(size, dtype=np.int64)
        self.task_id = np.zeros(size, dtype=np.int64)
        self.agent = np.zeros(size, dtype=np.int64)
        self.treasures = np.full((size, NUM_COLOURS), -1, dtype=np.int64)
        self.stage = np.zeros(size, dtype=np.int64)  # task treasures picked so far
        self.steps = np.zeros(size, dtype=np.int64)
        self.episode_return = np.zeros(size, dtype=np.float64)
        self.obs = np.zeros((size, *spec.obs_shape), dtype=np.uint8)
        self._all = np.arange(size)

    def reset_episodes(self, rows: np.ndarray, layouts: Sequence[Layout]) -> None:
        """Starts new episodes in the given slots from their layouts."""
        self.env_id[rows] = [layout.env_id for layout in layouts]
        self.task_id[rows] = [layout.task_id for layout in layouts]
        self.agent[rows] = [layout.agent for layout in layouts]
        self.treasures[rows] = [layout.treasures for layout in layouts]
        self.stage[rows] = 0
        self.steps[rows] = 0
        self.episode_return[rows] = 0.0
        self.obs[rows] = 0
        self._draw(rows)

    def step(
        self, actions: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Applies one action per episode; returns (reward, terminated, truncated, success).
        With ``rows`` (distinct indices), only those episodes step: the others stay exactly as
        they are (no step counted, no frame drawn) and get reward 0, neither terminated nor
        truncated."""
        if rows is None:
            return self._step(actions, slice(None), self.size)
        results = self._step(actions[rows], rows, len(rows))
        outputs = (np.zeros(self.size), *(np.zeros(self.size, dtype=bool) for _ in range(3)))
        for output, result in zip(outputs, results):
            output[rows] = result
        return outputs

    def _step(self, actions: np.ndarray, rows: slice | np.ndarray, count: int):
        """`step` of the episodes ``rows`` (all of them, or an index array of ``count``)."""
        rewards = self.spec.rewards
        agent = self.agent[rows]
        moved_to = agent + ACTION_DELTAS[actions]
        bumped = self.spec.walls[self.env_id[rows], moved_to]
        self.agent[rows] = np.where(bumped, agent, moved_to)
        reward = rewards.step + rewards.wall * bumped
        success = np.zeros(count, dtype=bool)
        terminated = np.zeros(count, dtype=bool)

        # Pick-ups are rare, so their rules run on that subset only.
        picks = np.flatnonzero(actions == PICK_UP)  # positions among the stepped episodes
        if len(picks):
            episodes = picks if isinstance(rows, slice) else rows[picks]
            on_treasure = self.treasures[episodes] == self.agent[episodes, None]
            found = on_treasure.any(axis=1)
            picks, episodes, colour = picks[found], episodes[found], on_treasure[found].argmax(axis=1)
            self.treasures[episodes, colour] = -1
            correct = colour == TASK_COLOURS[self.task_id[episodes], self.stage[episodes]]
            self.stage[episodes] += correct
            done_task = correct & (self.stage[episodes] == TREASURES_PER_TASK)
            success[picks] = done_task
            terminated[picks] = done_task | ~correct
            reward[picks] += np.where(correct, rewards.correct, rewards.wrong) + rewards.complete * done_task

        self.steps[rows] += 1
        self.episode_return[rows] += reward
        truncated = ~terminated & (self.steps[rows] >= self.spec.max_steps)
        channels = self.spec.frame_channels
        self.obs[rows, :-channels] = self.obs[rows, channels:]
        self._draw(self._all if isinstance(rows, slice) else rows)
        return reward, terminated, truncated, success

    def expert_actions(self) -> np.ndarray:
        """The optimal action of every episode (for finished ones: meaningless but valid)."""
        colour = TASK_COLOURS[self.task_id, np.minimum(self.stage, TREASURES_PER_TASK - 1)]
        target = self.treasures[self._all, colour]
        return self.spec.next_action[self.env_id, np.maximum(target, 0), self.agent]

    def _draw(self, rows: np.ndarray) -> None:
        """Renders the newest frame of the given episodes into the last channels of ``obs``."""
        agent = self.agent[rows]
        frames = self.spec.view_frames[self.env_id[rows], agent]  # window and agent
        treasures = self.treasures[rows]  # remaining treasures are always visible ...
        hidden = (treasures < 0) | ((not self.spec.agent_channel) & (treasures == agent[:, None]))
        treasures = np.where(hidden, _DISCARD_CELL, treasures)  # ... unless under the agent
        frames[np.arange(len(rows))[:, None], :RGB_CHANNELS, treasures] = TREASURE_RGB
        channels = self.spec.frame_channels
        self.obs[rows, -channels:] = frames[..., :NUM_CELLS].reshape(
            len(rows), channels, GRID_SIZE, GRID_SIZE
        )
