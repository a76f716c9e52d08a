"""What one gridworld RGB frame (N, 3, H, W) shows: where each treasure colour and the agent are."""

from __future__ import annotations

import torch
from synpo_envs.gridworld.constants import AGENT_RGB, TREASURE_RGB


def treasure_cells(frame: torch.Tensor) -> torch.Tensor:
    """(N, NUM_COLOURS, H, W) bool: the cells showing each treasure colour."""
    colours = torch.as_tensor(TREASURE_RGB, dtype=torch.int16, device=frame.device)[:, :, None, None]
    return (frame.to(torch.int16)[:, None] == colours).all(dim=2)


def agent_cells(frame: torch.Tensor) -> torch.Tensor:
    """(N, H, W) bool: the cell showing the agent."""
    agent = torch.as_tensor(AGENT_RGB, dtype=torch.int16, device=frame.device)[:, None, None]
    return (frame.to(torch.int16) == agent).all(dim=1)
