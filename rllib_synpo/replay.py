"""Whole expert trajectories, stored compactly: one frame per step (not the stacked
observation), rebuilt into stacks only when a batch is sampled. A frame is the gridworld's uint8
image (C, H, W) or THOR's newest feature row (1, D) float32; any dtype and trailing shape work.

RLlib's episode replay buffers keep every (stacked) observation, four times the memory for the
paper's 20,000-trajectory replay (about 2 GB instead of ~0.5 GB), hence this small buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from rllib_synpo.losses import EPISODE_END, NO_TRANSITION


@dataclass
class Trajectory:
    """One episode of one (env, task) pair: ``frames[t]`` is the newest frame of observation t."""

    frames: np.ndarray  # (L, C, ...) the newest C rows of each stacked observation: (L, C, H, W) uint8 images
    env_id: int
    task_id: int
    expert_action: np.ndarray  # (L,) the label at observation t
    action: np.ndarray  # (L,) the action executed at t
    reward: np.ndarray  # (L,) the reward it earned
    task_labels: np.ndarray | None = None  # (L, T) int8 expert actions for every task, -1 none
    # Observation entries kept per step as they are, not stacked (THOR's "held"), by name.
    per_step: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.expert_action)

    @property
    def nbytes(self) -> int:
        arrays = (self.frames, self.expert_action, self.action, self.reward, self.task_labels, *(self.per_step or {}).values())
        return sum(a.nbytes for a in arrays if a is not None)

    def stacked_obs(self, frame_stack: int) -> np.ndarray:
        """(L, frame_stack * C, ...): observation t stacks frames t-k+1..t, zeros before 0."""
        length, channels, *rest = self.frames.shape
        padded = np.concatenate([np.zeros((frame_stack - 1, channels, *rest), self.frames.dtype), self.frames])
        windows = sliding_window_view(padded, frame_stack, axis=0)  # (L, C, ..., k)
        return np.ascontiguousarray(np.moveaxis(windows, -1, 1)).reshape(length, frame_stack * channels, *rest)


    def stacked_obs_at(self, step: int, frame_stack: int) -> np.ndarray:
        """Observation ``step`` alone: (frame_stack * C, ...), zeros before frame 0."""
        channels, *rest = self.frames.shape[1:]
        stack = np.zeros((frame_stack, channels, *rest), self.frames.dtype)
        first = max(0, step - frame_stack + 1)
        stack[frame_stack - (step + 1 - first):] = self.frames[first : step + 1]
        return stack.reshape(frame_stack * channels, *rest)


class TrajectoryReplay:
    """A FIFO of at most ``capacity`` trajectories, sampled uniformly with a seeded generator."""

    def __init__(self, capacity: int, frame_stack: int, seed: int | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.frame_stack = frame_stack
        self._items: list[Trajectory] = []
        # len() of each stored trajectory, kept beside them: state sampling needs every length,
        # and asking 20,000 trajectories for theirs took ~11 ms per learner update.
        self._lengths = np.zeros(capacity, np.int64)
        self._next = 0
        self.added = 0
        self.steps_added = 0  # lifetime env steps stored (drives learning-rate schedules)
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def num_steps(self) -> int:
        return int(self._lengths[: len(self._items)].sum())

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._items)

    def add(self, trajectories: list[Trajectory]) -> None:
        for trajectory in trajectories:
            if len(self._items) < self.capacity:
                self._items.append(trajectory)
            else:
                self._items[self._next] = trajectory
            self._lengths[self._next] = len(trajectory)
            self._next = (self._next + 1) % self.capacity
            self.added += 1
            self.steps_added += len(trajectory)

    def sample(self, num_trajectories: int) -> dict[str, np.ndarray]:
        """Every step of ``num_trajectories`` trajectories drawn uniformly (with replacement)."""
        if not self._items:
            raise ValueError("the replay is empty")
        chosen = [self._items[i] for i in self.rng.integers(len(self._items), size=num_trajectories)]
        batch = self._columns(chosen, [t.stacked_obs(self.frame_stack) for t in chosen], [slice(None)] * len(chosen))
        # Row of each step's successor in this batch, -1 at a trajectory's last step (SF's TD term).
        rows = np.arange(len(batch["reward"]))
        last = np.cumsum([len(t) for t in chosen]) - 1
        batch["next_row"] = np.where(np.isin(rows, last), EPISODE_END, rows + 1)
        return batch

    def sample_states(self, num_states: int, successors: bool = False) -> dict[str, np.ndarray]:
        """``num_states`` single steps drawn uniformly over every stored step (with
        replacement): independent states rather than whole correlated trajectories, which
        learns faster per state (results/learning_efficiency.md). With ``successors`` each
        drawn step's next step (if any) is appended and ``next_row`` points to it (`EPISODE_END`
        at a trajectory's end, `NO_TRANSITION` on the appended rows), for losses over
        transitions (SF's TD term)."""
        if not self._items:
            raise ValueError("the replay is empty")
        lengths = self._lengths[: len(self._items)]
        ends = np.cumsum(lengths)
        flat = self.rng.integers(ends[-1], size=num_states)
        which = np.searchsorted(ends, flat, side="right")
        steps = flat - (ends[which] - lengths[which])
        next_row = np.full(num_states, EPISODE_END)
        if successors:
            has_next = steps + 1 < lengths[which]
            next_row[has_next] = num_states + np.arange(int(has_next.sum()))
            which, steps = np.concatenate([which, which[has_next]]), np.concatenate([steps, steps[has_next] + 1])
        chosen = [self._items[i] for i in which]
        obs = [t.stacked_obs_at(int(step), self.frame_stack)[None] for t, step in zip(chosen, steps)]
        batch = self._columns(chosen, obs, [slice(int(s), int(s) + 1) for s in steps])
        if successors:  # the appended successors take no part in transition losses
            batch["next_row"] = np.concatenate([next_row, np.full(len(steps) - num_states, NO_TRANSITION)])
        return batch

    @staticmethod
    def _columns(chosen: list[Trajectory], obs: list[np.ndarray], rows: list[slice]) -> dict[str, np.ndarray]:
        """The batch columns of ``rows[i]`` of trajectory ``chosen[i]`` (observations given)."""
        counts = [len(o) for o in obs]
        batch = {
            "obs": np.concatenate(obs),
            "env_id": np.repeat([t.env_id for t in chosen], counts).astype(np.int64),
            "task_id": np.repeat([t.task_id for t in chosen], counts).astype(np.int64),
        }
        for name in ("expert_action", "action"):
            batch[name] = np.concatenate([getattr(t, name)[r] for t, r in zip(chosen, rows)]).astype(np.int64)
        batch["reward"] = np.concatenate([t.reward[r] for t, r in zip(chosen, rows)]).astype(np.float32)
        if all(t.task_labels is not None for t in chosen):
            batch["task_labels"] = np.concatenate([t.task_labels[r] for t, r in zip(chosen, rows)]).astype(np.int64)
        if chosen and all(t.per_step is not None for t in chosen):
            for key in chosen[0].per_step:
                batch[key] = np.concatenate([t.per_step[key][r] for t, r in zip(chosen, rows)])
        return batch

    def get_state(self) -> dict:
        return {
            "items": self._items, "next": self._next, "added": self.added, "steps_added": self.steps_added,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict) -> None:
        if len(state["items"]) > self.capacity:
            raise ValueError(
                f"the restored replay holds {len(state['items'])} trajectories, more than this replay's capacity "
                f"{self.capacity}; resume with the replay_capacity it was saved with"
            )
        self._items, self._next, self.added = list(state["items"]), state["next"], state["added"]
        self._lengths[:] = 0
        self._lengths[: len(self._items)] = [len(t) for t in self._items]
        self.steps_added = state["steps_added"]
        self.rng.bit_generator.state = state["rng"]
