"""Shortest-path moves over a maze's wall map, for the SynPo network's ``map_routes`` option
(not the paper's; gridworld only; needs ``maze_map``).

The encoder learns routes through the mazes it was trained on; read through a map, those routes
do not carry over to a new layout (results/transfer.md). This layer plans instead of learning to:
from the map channel (`rllib_synpo.networks.maze_maps`: cells past one half are walls) and the
treasures the newest frame shows, a breadth-first search from each colour's treasure finds how
far the agent and the cells next to it are from it, and the layer reports, for every colour
and every move, whether the move brings the agent
closer to that colour's treasure (+1), leaves it where it is (0: a wall, or no treasure of that
colour reachable) or takes it away (-1). Nothing in it is learnt and no gradient flows through
it; the network learns how much each colour's moves weigh for each pair (a basis of its own,
read by alpha and beta as Theta is). On a maze it never saw, the layer is right wherever the map
is.
"""

from __future__ import annotations

import torch
from synpo_envs.gridworld.constants import (
    ACTION_DELTAS,
    GRID_SIZE,
    MOVE_ACTIONS,
    NUM_CELLS,
    NUM_COLOURS,
    RGB_CHANNELS,
)
from torch import nn

from rllib_synpo.networks.encoders import PIXEL_SCALE
from rllib_synpo.networks.frames import agent_cells, treasure_cells

UNREACHABLE = float(NUM_CELLS)  # longer than any path on the grid
ROUTE_FEATURES = NUM_COLOURS * len(MOVE_ACTIONS)  # one per (colour, move)
_BITS = 2 ** torch.arange(GRID_SIZE, dtype=torch.int32)  # a grid row as the bits of one integer
_STEPS_PER_CHECK = 4  # search steps between two checks of whether the search can stop


def _row_bits(cells: torch.Tensor) -> torch.Tensor:
    """(..., H, W) bool -> (..., H) int32: bit j of row i set where cell (i, j) is."""
    return (cells.int() * _BITS.to(cells.device)).sum(-1, dtype=torch.int32)


def distances_to(targets: torch.Tensor, walls: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
    """(N, C, Q): the number of moves from each of ``cells`` (N, Q) (flat indices; -1 for off
    the grid) to the nearest cell of ``targets`` (N, C, H, W) in each channel, through the cells
    ``walls`` (N, H, W) leaves free (a target is never a wall); `UNREACHABLE` where no path leads.
    A breadth-first search from the targets, each grid row a bit set: a step is a few shifts, and
    a cell's distance is the number of steps it stayed unreached. It stops once the first of
    ``cells`` is reached and one step more (all the others are then as far as they will be), or
    once the search covers all it can; both are checked every `_STEPS_PER_CHECK` steps (the steps
    past the stop change nothing)."""
    free = _row_bits(~walls)[:, None] | _row_bits(targets)  # (N, C, H)
    reached = _row_bits(targets)
    rows = cells.clamp(min=0).div(GRID_SIZE, rounding_mode="floor")[:, None].expand(-1, targets.shape[1], -1)
    shifts = (cells.clamp(min=0) % GRID_SIZE)[:, None].expand_as(rows)

    def reached_bits() -> torch.Tensor:  # (N, C, Q) int32: 1 where the cell is reached
        return (reached.gather(2, rows) >> shifts) & 1

    found = reached_bits()
    unreached_steps = 1 - found
    step = 0
    while step < NUM_CELLS:  # a path visits each cell once at most
        before = reached
        for _ in range(_STEPS_PER_CHECK):
            grown = reached | (reached << 1) | (reached >> 1)
            grown[..., 1:] |= reached[..., :-1]
            grown[..., :-1] |= reached[..., 1:]
            reached = grown & free
            found = reached_bits()
            unreached_steps += 1 - found
        step += _STEPS_PER_CHECK
        stalled = (reached == before).all(-1)  # (N, C): this search covers all it can
        first_found = found[..., 0].bool()
        farthest_first = unreached_steps[..., 0].masked_fill(~first_found, 0).max()
        if (first_found | stalled).all() and step > farthest_first:
            break
    found = found.bool() & (cells >= 0)[:, None]
    return unreached_steps.float().masked_fill(~found, UNREACHABLE)


class MapRoutes(nn.Module):
    """(N, C, H, W) encoder input, the map its last channel -> (N, `ROUTE_FEATURES`) the progress
    each move makes towards each colour's treasure, colour-major."""

    def __init__(self) -> None:
        super().__init__()
        rows = [round(int(ACTION_DELTAS[move]) / GRID_SIZE) for move in MOVE_ACTIONS]
        moves = [(r, int(ACTION_DELTAS[move]) - r * GRID_SIZE) for r, move in zip(rows, MOVE_ACTIONS)]
        self.register_buffer("moves", torch.tensor(moves), persistent=False)

    @torch.no_grad()
    def forward(self, encoder_input: torch.Tensor) -> torch.Tensor:
        newest = encoder_input[:, -1 - RGB_CHANNELS : -1]  # (N, 3, H, W) the newest frame
        walls = encoder_input[:, -1] > PIXEL_SCALE / 2
        treasures = treasure_cells(newest)  # (N, colours, H, W)
        agent = agent_cells(newest).flatten(1)  # (N, H * W)
        here = agent.float().argmax(1)
        row, col = here.div(GRID_SIZE, rounding_mode="floor")[:, None], (here % GRID_SIZE)[:, None]
        next_row, next_col = row + self.moves[:, 0], col + self.moves[:, 1]
        inside = (next_row >= 0) & (next_row < GRID_SIZE) & (next_col >= 0) & (next_col < GRID_SIZE)
        cells = torch.cat([here[:, None], torch.where(inside, next_row * GRID_SIZE + next_col, -1)], dim=1)
        dist = distances_to(treasures, walls, cells)  # (N, colours, 1 + moves)
        d_here, d_next = dist[..., :1], dist[..., 1:]
        d_next = torch.where(d_next >= UNREACHABLE, d_here, d_next)  # a wall: the agent stays
        progress = (d_here - d_next).clamp(-1, 1)
        progress = progress.masked_fill(d_here >= UNREACHABLE, 0.0)  # no treasure of that colour to go to
        progress = progress * agent.any(1)[:, None, None]  # no agent in the frame: nothing to say
        return progress.flatten(1)
