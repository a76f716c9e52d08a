"""Whole expert trajectories, stored compactly: one uint8 frame per step (not the stacked
observation), rebuilt into stacks only when a batch is sampled.

RLlib's episode replay buffers keep every (stacked) observation, four times the memory for the
paper's 20,000-trajectory replay (about 2 GB instead of ~0.5 GB), hence this small buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


@dataclass
class Trajectory:
    """One episode of one (env, task) pair: ``frames[t]`` is the newest frame of observation t."""

    frames: np.ndarray  # (L, C, H, W) uint8
    env_id: int
    task_id: int
    expert_action: np.ndarray  # (L,) the label at observation t
    action: np.ndarray  # (L,) the action executed at t
    reward: np.ndarray  # (L,) the reward it earned
    task_labels: np.ndarray | None = None  # (L, T) int8 expert actions for every task, -1 none

    def __len__(self) -> int:
        return len(self.expert_action)

    @property
    def nbytes(self) -> int:
        arrays = (self.frames, self.expert_action, self.action, self.reward, self.task_labels)
        return sum(a.nbytes for a in arrays if a is not None)

    def stacked_obs(self, frame_stack: int) -> np.ndarray:
        """(L, frame_stack * C, H, W): observation t stacks frames t-k+1..t, zeros before 0."""
        length, channels, height, width = self.frames.shape
        padded = np.concatenate([np.zeros((frame_stack - 1, channels, height, width), np.uint8), self.frames])
        windows = sliding_window_view(padded, frame_stack, axis=0)  # (L, C, H, W, k)
        return np.ascontiguousarray(np.moveaxis(windows, -1, 1)).reshape(length, frame_stack * channels, height, width)


class TrajectoryReplay:
    """A FIFO of at most ``capacity`` trajectories, sampled uniformly with a seeded generator."""

    def __init__(self, capacity: int, frame_stack: int, seed: int | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.frame_stack = frame_stack
        self._items: list[Trajectory] = []
        self._next = 0
        self.added = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def num_steps(self) -> int:
        return sum(len(t) for t in self._items)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._items)

    def add(self, trajectories: list[Trajectory]) -> None:
        for trajectory in trajectories:
            if len(self._items) < self.capacity:
                self._items.append(trajectory)
            else:
                self._items[self._next] = trajectory
            self._next = (self._next + 1) % self.capacity
            self.added += 1

    def sample(self, num_trajectories: int) -> dict[str, np.ndarray]:
        """Every step of ``num_trajectories`` trajectories drawn uniformly (with replacement)."""
        if not self._items:
            raise ValueError("the replay is empty")
        chosen = [self._items[i] for i in self.rng.integers(len(self._items), size=num_trajectories)]
        batch = {
            "obs": np.concatenate([t.stacked_obs(self.frame_stack) for t in chosen]),
            "env_id": np.concatenate([np.full(len(t), t.env_id, np.int64) for t in chosen]),
            "task_id": np.concatenate([np.full(len(t), t.task_id, np.int64) for t in chosen]),
        }
        for name in ("expert_action", "action"):
            batch[name] = np.concatenate([getattr(t, name) for t in chosen]).astype(np.int64)
        batch["reward"] = np.concatenate([t.reward for t in chosen]).astype(np.float32)
        if all(t.task_labels is not None for t in chosen):
            batch["task_labels"] = np.concatenate([t.task_labels for t in chosen]).astype(np.int64)
        return batch

    def get_state(self) -> dict:
        return {"items": self._items, "next": self._next, "added": self.added, "rng": self.rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        self._items, self._next, self.added = list(state["items"]), state["next"], state["added"]
        self.rng.bit_generator.state = state["rng"]
