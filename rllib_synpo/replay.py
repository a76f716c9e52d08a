"""Whole expert trajectories, stored compactly: one frame per step (not the stacked
observation), rebuilt into stacks only when a batch is sampled. A frame is the gridworld's uint8
image (C, H, W) or THOR's newest feature row (1, D) float32; any dtype and trailing shape work.

RLlib's episode replay buffers keep every (stacked) observation, four times the memory for the
paper's 20,000-trajectory replay (about 2 GB instead of ~0.5 GB), hence this small buffer. Its
steps live in preallocated arrays used as a ring (not one small array per trajectory and
column), so a batch is gathered from them with a few vectorized reads.
"""

from __future__ import annotations

import numpy as np

from rllib_synpo.env.trajectory import Trajectory
from rllib_synpo.losses import EPISODE_END, NO_TRANSITION

INITIAL_STEP_ROWS = 4096  # rows of the step arrays before the first growth
GROWTH = 1.25  # the step arrays' size when they grow, as a multiple of the rows they must hold
TRAJECTORY_FIELDS = ("frames", "expert_action", "action", "reward", "task_labels")


class TrajectoryReplay:
    """A FIFO of at most ``capacity`` trajectories, sampled uniformly with a seeded generator.

    Each stored trajectory occupies a contiguous run of rows in the step arrays (one row per
    step: frame, labels, reward, ...), written in arrival order around a ring; the arrays grow
    only when the live trajectories and a new one no longer fit. Trajectory slots
    ``0..capacity-1`` are reused in FIFO order, and a slot's row run is where its steps are."""

    def __init__(self, capacity: int, frame_stack: int, seed: int | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.frame_stack = frame_stack
        # Per trajectory slot: where its steps start, how many there are, its pair.
        self._starts = np.zeros(capacity, np.int64)
        self._lengths = np.zeros(capacity, np.int64)
        self._env_ids = np.zeros(capacity, np.int64)
        self._task_ids = np.zeros(capacity, np.int64)
        self._count = 0
        self._next = 0  # the slot the next trajectory goes to (the oldest one's, once full)
        self._head = 0  # the row after the newest trajectory's steps
        self._steps: dict[str, np.ndarray] = {}  # step arrays by column, allocated on the first add
        self._per_step_keys: tuple[str, ...] = ()
        self.added = 0
        self.steps_added = 0  # lifetime env steps stored (drives learning-rate schedules)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._count

    @property
    def num_steps(self) -> int:
        return int(self._lengths[: self._count].sum())

    @property
    def nbytes(self) -> int:
        """Bytes of the stored steps (the step arrays' rows that hold them)."""
        return self.num_steps * sum(column[0].nbytes for column in self._steps.values())

    def add(self, trajectories: list[Trajectory]) -> None:
        for trajectory in trajectories:
            columns = self._checked_columns(trajectory)
            slot, length = self._next, len(trajectory)
            # Once full, the new trajectory replaces the oldest, in its slot.
            live = self._count - (self._count == self.capacity)
            start = self._place(length, live)
            for name, values in columns.items():
                self._steps[name][start : start + length] = values
            self._starts[slot], self._lengths[slot] = start, length
            self._env_ids[slot], self._task_ids[slot] = trajectory.env_id, trajectory.task_id
            self._head = start + length
            self._count = live + 1
            self._next = (slot + 1) % self.capacity
            self.added += 1
            self.steps_added += length

    def trajectories(self) -> list[Trajectory]:
        """The stored trajectories (copies), in slot order."""
        return [self._trajectory(slot) for slot in range(self._count)]

    def sample(self, num_trajectories: int) -> dict[str, np.ndarray]:
        """Every step of ``num_trajectories`` trajectories drawn uniformly (with replacement)."""
        if not self._count:
            raise ValueError("the replay is empty")
        chosen = self.rng.integers(self._count, size=num_trajectories)
        lengths = self._lengths[chosen]
        which, steps = np.repeat(chosen, lengths), _offsets_within(lengths)
        batch = self._batch(which, steps)
        # Row of each step's successor in this batch, -1 at a trajectory's last step (SF's TD term).
        rows = np.arange(len(which))
        batch["next_row"] = np.where(np.isin(rows, np.cumsum(lengths) - 1), EPISODE_END, rows + 1)
        return batch

    def sample_states(self, num_states: int, successors: bool = False) -> dict[str, np.ndarray]:
        """``num_states`` single steps drawn uniformly over every stored step (with
        replacement): independent states rather than whole correlated trajectories, which
        learns faster per state (results/learning_efficiency.md). With ``successors`` each
        drawn step's next step (if any) is appended and ``next_row`` points to it (`EPISODE_END`
        at a trajectory's end, `NO_TRANSITION` on the appended rows), for losses over
        transitions (SF's TD term)."""
        if not self._count:
            raise ValueError("the replay is empty")
        lengths = self._lengths[: self._count]
        ends = np.cumsum(lengths)
        flat = self.rng.integers(ends[-1], size=num_states)
        which = np.searchsorted(ends, flat, side="right")
        steps = flat - (ends[which] - lengths[which])
        next_row = np.full(num_states, EPISODE_END)
        if successors:
            has_next = steps + 1 < lengths[which]
            next_row[has_next] = num_states + np.arange(int(has_next.sum()))
            which, steps = (
                np.concatenate([which, which[has_next]]),
                np.concatenate([steps, steps[has_next] + 1]),
            )
        batch = self._batch(which, steps)
        if successors:  # the appended successors take no part in transition losses
            batch["next_row"] = np.concatenate([next_row, np.full(len(steps) - num_states, NO_TRANSITION)])
        return batch

    def _batch(self, slots: np.ndarray, steps: np.ndarray) -> dict[str, np.ndarray]:
        """The batch columns of step ``steps[i]`` of the trajectory in slot ``slots[i]``."""
        rows = self._starts[slots] + steps
        batch = {
            "obs": self._stacked_frames(rows, steps),
            "env_id": self._env_ids[slots],
            "task_id": self._task_ids[slots],
        }
        for name in ("expert_action", "action", "task_labels", *self._per_step_keys):
            if name in self._steps:
                batch[name] = self._steps[name][rows].astype(np.int64)
        batch["reward"] = self._steps["reward"][rows].astype(np.float32)
        return batch

    def _stacked_frames(self, rows: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """(N, frame_stack * C, ...): each row's frame stacked after its frame_stack - 1
        predecessors in its trajectory (zeros before the trajectory's first frame)."""
        back = np.arange(self.frame_stack - 1, -1, -1)  # oldest frame first
        valid = steps[:, None] >= back
        frames = self._steps["frames"][np.where(valid, rows[:, None] - back, 0)]  # (N, k, C, ...)
        frames[~valid] = 0
        return frames.reshape(len(rows), -1, *frames.shape[3:])

    def _columns_of(self, trajectory: Trajectory) -> dict[str, np.ndarray]:
        columns = {
            name: getattr(trajectory, name)
            for name in TRAJECTORY_FIELDS
            if getattr(trajectory, name) is not None
        }
        return {**columns, **(trajectory.per_step or {})}

    def _checked_columns(self, trajectory: Trajectory) -> dict[str, np.ndarray]:
        """The trajectory's step columns; the first trajectory's allocate the step arrays, later
        ones must match them."""
        columns = self._columns_of(trajectory)
        if not self._steps:
            self._per_step_keys = tuple(trajectory.per_step or ())
            self._steps = {name: _empty_rows(INITIAL_STEP_ROWS, v) for name, v in columns.items()}
            return columns
        layout = {name: (v.shape[1:], v.dtype) for name, v in columns.items()}
        expected = {name: (v.shape[1:], v.dtype) for name, v in self._steps.items()}
        if layout != expected:
            raise ValueError(f"a trajectory with columns {layout} does not fit this replay's {expected}")
        return columns

    def _place(self, length: int, live: int) -> int:
        """The first row of a free run of ``length`` rows after the ``live`` newest
        trajectories' runs (the arrays grow when there is none)."""
        size = len(self._steps["frames"])
        if live == 0:
            return 0 if length <= size else self._grow(length, live)
        tail = int(self._starts[(self._next - live) % self.capacity])  # the oldest live run's start
        if self._head > tail:  # live rows are [tail, head): free after them, then before them
            if self._head + length <= size:
                return self._head
            if length <= tail:
                return 0
        elif self._head + length <= tail:  # wrapped: free rows are [head, tail)
            return self._head
        return self._grow(length, live)

    def _grow(self, length: int, live: int) -> int:
        """Enlarges the step arrays to `GROWTH` times the ``live`` newest runs and the new one
        (that slack keeps the ring from growing again when lengths vary), moving the live runs
        to their start in FIFO order; returns the row after them."""
        slots = (self._next - live + np.arange(live)) % self.capacity
        lengths = self._lengths[slots]
        total = int(lengths.sum())
        size = max(int(GROWTH * (total + length)) + length, INITIAL_STEP_ROWS)
        rows = self._rows_of(slots)
        moved = {name: _empty_rows(size, column) for name, column in self._steps.items()}
        for name, column in self._steps.items():
            moved[name][:total] = column[rows]
        self._starts[slots] = np.cumsum(lengths) - lengths
        self._steps, self._head = moved, total
        return total

    def _trajectory(self, slot: int) -> Trajectory:
        rows = slice(int(self._starts[slot]), int(self._starts[slot] + self._lengths[slot]))
        steps = {name: column[rows].copy() for name, column in self._steps.items()}
        return Trajectory(
            frames=steps["frames"],
            env_id=int(self._env_ids[slot]),
            task_id=int(self._task_ids[slot]),
            expert_action=steps["expert_action"],
            action=steps["action"],
            reward=steps["reward"],
            task_labels=steps.get("task_labels"),
            per_step={key: steps[key] for key in self._per_step_keys} or None,
        )

    def get_state(self) -> dict:
        """The step arrays up to the last stored row (no copy), where each slot's steps are, the
        FIFO position and the generator."""
        count = self._count
        extent = int((self._starts + self._lengths)[:count].max()) if count else 0
        return {
            "starts": self._starts[:count].copy(),
            "lengths": self._lengths[:count].copy(),
            "env_ids": self._env_ids[:count].copy(),
            "task_ids": self._task_ids[:count].copy(),
            "steps": {name: column[:extent] for name, column in self._steps.items()},
            "per_step_keys": self._per_step_keys,
            "head": self._head,
            "next": self._next,
            "added": self.added,
            "steps_added": self.steps_added,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict) -> None:
        count = len(state["items"]) if "items" in state else len(state["lengths"])
        if count > self.capacity:
            raise ValueError(
                f"the restored replay holds {count} trajectories, more than this replay's capacity "
                f"{self.capacity}; resume with the replay_capacity it was saved with"
            )
        if "items" in state:  # an older checkpoint's list of `Trajectory`, in slot order
            self._add_in_fifo_order(state["items"], state["next"])
        else:
            self._starts[:count], self._lengths[:count] = state["starts"], state["lengths"]
            self._env_ids[:count], self._task_ids[:count] = state["env_ids"], state["task_ids"]
            self._lengths[count:] = 0
            self._steps = {}
            for name, values in state["steps"].items():
                self._steps[name] = _empty_rows(max(INITIAL_STEP_ROWS, int(GROWTH * len(values))), values)
                self._steps[name][: len(values)] = values
            self._per_step_keys = tuple(state["per_step_keys"])
            self._count, self._head = count, state["head"]
        self._next = state["next"] % self.capacity
        self.added, self.steps_added = state["added"], state["steps_added"]
        self.rng.bit_generator.state = state["rng"]

    def _add_in_fifo_order(self, items: list[Trajectory], next_slot: int) -> None:
        """Stores ``items[slot]`` in each slot, oldest first (slot ``next_slot`` once full)."""
        self._count, self._head, self._steps, self._lengths[:] = 0, 0, {}, 0
        oldest = next_slot % self.capacity if len(items) == self.capacity else 0
        for i in range(len(items)):
            self._next = (oldest + i) % self.capacity
            self.add([items[self._next]])

    def _rows_of(self, slots: np.ndarray) -> np.ndarray:
        """The step rows of the trajectories in ``slots``, one slot's after another's."""
        lengths = self._lengths[slots]
        return np.repeat(self._starts[slots], lengths) + _offsets_within(lengths)


def _empty_rows(rows: int, like: np.ndarray) -> np.ndarray:
    """An uninitialized step array of ``rows`` rows shaped and typed as ``like``'s."""
    return np.empty((rows, *like.shape[1:]), like.dtype)


def _offsets_within(lengths: np.ndarray) -> np.ndarray:
    """0..length-1 for each of ``lengths``, concatenated."""
    return np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
