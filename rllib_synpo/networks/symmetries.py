"""The 8 symmetries of the square gridworld (its rotations and mirror images) acting on stacked
frames and on the gridworld's actions, for the SynPo network's ``hidden_env_symmetries`` option
(not the paper's).

With that option a training state whose maze ``env_dropout`` hides is seen under a random
symmetry and its state-action features are mapped back to the original actions: the policy for
an unknown maze learns from rotated and mirrored copies of the training states, data
augmentation of the training mazes (their grid of rooms is symmetric, so each copy is a maze of
the same family) meant to give that policy a way to navigate rather than the routes of the
training mazes (results/transfer.md). States whose maze is known are never transformed.
"""

from __future__ import annotations

import torch
from synpo_envs.gridworld.constants import ACTION_DELTAS, GRID_SIZE, NUM_ACTIONS
from torch import nn

NUM_SYMMETRIES = 8  # 4 rotations, each with and without a mirror image; 0 is the identity


def transform(frames: torch.Tensor, symmetry: int) -> torch.Tensor:
    """``frames`` (..., H, W) under ``symmetry`` (0-7): a rotation by ``symmetry % 4`` quarter
    turns, mirrored left-right from 4 on."""
    turned = torch.rot90(frames, symmetry % 4, dims=(-2, -1))
    return turned.flip(-1) if symmetry >= 4 else turned


def action_permutations() -> torch.Tensor:
    """(NUM_SYMMETRIES, NUM_ACTIONS): row s maps each action to the action that does the same
    move in the maze seen under symmetry s (picking up maps to itself)."""
    cells = torch.arange(GRID_SIZE * GRID_SIZE).reshape(GRID_SIZE, GRID_SIZE)
    centre = (GRID_SIZE // 2) * GRID_SIZE + GRID_SIZE // 2  # every move from it stays inside
    deltas = [int(delta) for delta in ACTION_DELTAS]
    rows = []
    for symmetry in range(NUM_SYMMETRIES):
        moved = transform(cells, symmetry).flatten()
        where = torch.argsort(moved)  # where[c]: the flat index cell c lands on
        rows.append([deltas.index(int(where[centre + delta] - where[centre])) for delta in deltas])
    return torch.tensor(rows)


class HiddenEnvSymmetries(nn.Module):
    """Draws a symmetry per hidden row, transforms those rows' frames, and maps their
    state-action features back to the original actions."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int) -> None:
        super().__init__()
        if (
            len(obs_shape) != 3
            or tuple(obs_shape[1:]) != (GRID_SIZE, GRID_SIZE)
            or num_actions != NUM_ACTIONS
        ):
            raise ValueError(
                f"hidden_env_symmetries transforms the gridworld's {GRID_SIZE} x {GRID_SIZE} frames and "
                f"{NUM_ACTIONS} actions; got observations of shape {tuple(obs_shape)} and {num_actions} "
                "actions"
            )
        self.register_buffer("permutations", action_permutations(), persistent=False)

    def draw(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N,) a symmetry per row: uniform over the 8 where ``hidden`` (from torch's seeded
        generator), the identity elsewhere."""
        drawn = torch.randint(NUM_SYMMETRIES, hidden.shape, device=hidden.device)
        return torch.where(hidden, drawn, torch.zeros_like(drawn))

    def frames(self, obs: torch.Tensor, symmetry: torch.Tensor) -> torch.Tensor:
        """Each row of ``obs`` (N, C, H, W) under its symmetry."""
        out = obs.clone()
        for s in symmetry.unique().tolist():
            if s:
                rows = symmetry == s
                out[rows] = transform(obs[rows], s)
        return out

    def features_back(self, sa_features: torch.Tensor, symmetry: torch.Tensor) -> torch.Tensor:
        """(N, A, K) features of the transformed states, indexed by the original actions."""
        index = self.permutations[symmetry]  # (N, A)
        return sa_features.gather(1, index[:, :, None].expand(-1, -1, sa_features.shape[-1]))
