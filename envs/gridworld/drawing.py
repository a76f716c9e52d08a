"""Pictures of the gridworld for people: a full-map RGB image, a text map, PNG files.

These show everything (the whole maze and every treasure); the agent's partial view is the
observation itself, see `observation_rgb`.
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np
from synpo_envs.gridworld.constants import (
    AGENT_RGB,
    COLOUR_LETTERS,
    FLOOR_CHAR,
    FLOOR_RGB,
    RGB_CHANNELS,
    TREASURE_RGB,
    WALL_CHAR,
    WALL_RGB,
)

TILE_PIXELS = 16
AGENT_CHAR = "*"


def _upscale(image: np.ndarray, tile: int) -> np.ndarray:
    return np.repeat(np.repeat(image, tile, axis=0), tile, axis=1)


def full_map_rgb(
    walls: np.ndarray, agent_pos, treasure_pos: np.ndarray, tile: int = TILE_PIXELS
) -> np.ndarray:
    """(16 tile, 16 tile, 3) uint8 image of the whole maze; the agent is drawn as a white
    square inset in its cell, so a treasure under it stays visible."""
    image = np.where(walls[..., None], WALL_RGB, FLOOR_RGB).astype(np.uint8)
    for colour, (row, col) in enumerate(treasure_pos):
        if row >= 0:
            image[row, col] = TREASURE_RGB[colour]
    image = _upscale(image, tile)
    row, col = agent_pos
    inset = tile // 4
    image[row * tile + inset : (row + 1) * tile - inset, col * tile + inset : (col + 1) * tile - inset] = (
        AGENT_RGB
    )
    return image


def observation_rgb(obs: np.ndarray, channels: int = RGB_CHANNELS, tile: int = TILE_PIXELS) -> np.ndarray:
    """The newest frame of a stacked (C k, 16, 16) observation as an upscaled RGB image."""
    frame = np.moveaxis(obs[-channels : len(obs) - channels + RGB_CHANNELS], 0, -1)
    return _upscale(frame, tile)


def ansi_map(walls: np.ndarray, agent_pos, treasure_pos: np.ndarray, task=None) -> str:
    """Text map: ``#`` wall, letters for treasures, ``*`` the agent (lower-case letter when the
    agent stands on a treasure)."""
    grid = [[WALL_CHAR if w else FLOOR_CHAR for w in row] for row in walls]
    for colour, (row, col) in enumerate(treasure_pos):
        if row >= 0:
            grid[row][col] = COLOUR_LETTERS[colour]
    row, col = agent_pos
    under = grid[row][col]
    grid[row][col] = under.lower() if under in COLOUR_LETTERS else AGENT_CHAR
    text = "\n".join("".join(line) for line in grid)
    if task is not None:
        text += f"\ntask: pick {task[0]}, then {task[1]}"
    return text


def write_png(path: str | os.PathLike, image: np.ndarray) -> None:
    """Writes an (H, W, 3) uint8 image as PNG with the standard library only."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    if image.ndim != 3 or image.shape[2] != RGB_CHANNELS:
        raise ValueError(f"expected an (H, W, 3) image, got shape {image.shape}")
    height, width, _ = image.shape
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    with open(path, "wb") as file:
        file.write(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
        )
