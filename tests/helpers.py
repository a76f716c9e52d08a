"""Shared test helpers."""

from collections import deque

import numpy as np


def bfs_distances(walls: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Shortest-path lengths from ``start`` on a wall map (independent of the package's tables)."""
    dist = np.full(walls.shape, -1, dtype=int)
    dist[start] = 0
    queue = deque([start])
    while queue:
        row, col = queue.popleft()
        for nrow, ncol in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
            if not walls[nrow, ncol] and dist[nrow, ncol] < 0:
                dist[nrow, ncol] = dist[row, col] + 1
                queue.append((nrow, ncol))
    return dist
