"""A wall map per maze, learnt from what the agent's window shows, for the SynPo network's
``maze_map`` option (not the paper's; gridworld only).

Each environment gets a second embedding row beside e_env: one wall logit per grid cell. It
learns by the ``maze_map_loss`` term alone, a binary cross-entropy against the walls and floor
that the newest frame's window shows (cells outside the window, and cells under a treasure or
the agent, carry no label), so a maze's row becomes the walls its states have shown. The
encoder reads the map's probabilities as one more input channel, through a stop-gradient: the
policy loss never shapes the map. The channel is a sharpened probability (`MAP_SHARPNESS`): a
cell whose logit is past a few tenths reads as wall or floor whatever the logit's size, so the
encoder sees the same kind of map from a row trained under weight decay (small logits) and from a
new maze's row adapted without it (logits that keep growing). With ``env_dropout`` a hidden
state keeps its maze's map (only its identity is hidden), so the policy for an unknown maze
learns to route by the map; with ``hidden_env_symmetries`` the map turns with the frames. A new
maze's row, learnt by adaptation from the walls of its demonstrations, then tells the network
where that maze's doors are (results/transfer.md).
"""

from __future__ import annotations

import torch
from synpo_envs.gridworld.constants import FLOOR_RGB, GRID_SIZE, RGB_CHANNELS, WALL_RGB
from torch import nn

from rllib_synpo.losses import UNLABELLED_CELL
from rllib_synpo.networks.encoders import PIXEL_SCALE

# The factor on a wall logit before the channel's sigmoid: |logit| >= 0.4 reads as >= 98% sure.
MAP_SHARPNESS = 10.0


def maze_map_table(num_envs: int) -> nn.Embedding:
    """The per-maze wall maps: one row of GRID_SIZE * GRID_SIZE wall logits per environment,
    starting at 0 (a probability of one half)."""
    table = nn.Embedding(num_envs, GRID_SIZE * GRID_SIZE)
    nn.init.zeros_(table.weight)
    return table


class MazeMapReader(nn.Module):
    """What the encoder and the loss read: a map as an input channel, and the walls a frame
    shows."""

    def __init__(self, obs_shape: tuple[int, ...]) -> None:
        super().__init__()
        if (
            len(obs_shape) != 3
            or tuple(obs_shape[1:]) != (GRID_SIZE, GRID_SIZE)
            or obs_shape[0] % RGB_CHANNELS
        ):
            raise ValueError(
                f"maze_map reads the gridworld's stacked {GRID_SIZE} x {GRID_SIZE} RGB frames; got "
                f"observations of shape {tuple(obs_shape)}"
            )
        self.register_buffer("wall_rgb", torch.tensor(WALL_RGB, dtype=torch.uint8), persistent=False)
        self.register_buffer("floor_rgb", torch.tensor(FLOOR_RGB, dtype=torch.uint8), persistent=False)

    def with_map(self, obs: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """``obs`` (N, C, H, W) with the maps' sharpened wall probabilities (detached, in pixel
        units) as one more channel: the encoder's input. Logits 0 (a maze the map knows nothing
        of) read as one half."""
        walls = torch.sigmoid(MAP_SHARPNESS * logits.detach()) * PIXEL_SCALE
        walls = walls.reshape(-1, 1, GRID_SIZE, GRID_SIZE)
        return torch.cat([obs.float(), walls], dim=1)

    def shown_walls(self, obs: torch.Tensor) -> torch.Tensor:
        """(N, GRID_SIZE * GRID_SIZE): 1 where the newest frame shows a wall, 0 where it shows
        floor, `UNLABELLED_CELL` elsewhere."""
        newest = obs[:, -RGB_CHANNELS:].permute(0, 2, 3, 1).reshape(len(obs), -1, RGB_CHANNELS)
        wall = (newest == self.wall_rgb).all(-1)
        floor = (newest == self.floor_rgb).all(-1)
        labels = torch.full(wall.shape, UNLABELLED_CELL, device=obs.device)
        return labels.masked_fill(floor, 0.0).masked_fill(wall, 1.0)
