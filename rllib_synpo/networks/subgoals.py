"""The treasure colour a gridworld task goes for next (its *subgoal*), read from the observation,
and an embedding of it for the SynPo network's ``subgoal_embedding`` option (not the paper's).

A task "pick X, then Y" goes for X while X lies in the maze and for Y once X is picked (picking
any other treasure ends the episode), so the subgoal is a function of the task and of which
treasures remain. Every remaining treasure is drawn in every frame, except the one under the
agent, which the previous frame shows at the cell the agent now stands on. A unit that embeds
the subgoal beside the task lets "go for X in maze m" learnt from any seen task of m (X first or
second) serve an unseen task of m that goes for X first.
"""

from __future__ import annotations

import torch
from synpo_envs.gridworld.constants import (
    NUM_COLOURS,
    NUM_TASKS,
    RGB_CHANNELS,
    TASK_COLOURS,
)
from torch import nn

from rllib_synpo.networks.frames import agent_cells, treasure_cells

SUBGOAL_MODES = ("none", "add", "replace")  # "none": the paper's network


def read_remaining_colours(obs: torch.Tensor) -> torch.Tensor:
    """(N, NUM_COLOURS) bool: whether each treasure colour still lies in the maze, from a stack
    of RGB frames (N, 3 k, H, W), oldest first (the gridworld's observation without
    ``agent_channel``)."""
    newest = obs[:, -RGB_CHANNELS:]
    remaining = treasure_cells(newest).flatten(2).any(dim=-1)
    if obs.shape[1] >= 2 * RGB_CHANNELS:  # the treasure under the agent, from the frame before
        previous = obs[:, -2 * RGB_CHANNELS : -RGB_CHANNELS]
        under_agent = treasure_cells(previous) & agent_cells(newest)[:, None]
        remaining |= under_agent.flatten(2).any(dim=-1)
    return remaining


class SubgoalEmbedding(nn.Module):
    """One embedding row per treasure colour, and each task's two colours (first, second)."""

    def __init__(self, num_tasks: int, embedding_dim: int, obs_shape: tuple[int, ...]) -> None:
        super().__init__()
        if num_tasks != NUM_TASKS or len(obs_shape) != 3 or obs_shape[0] % RGB_CHANNELS:
            raise ValueError(
                f"subgoal_embedding reads the gridworld's {NUM_TASKS} tasks and stacked RGB frames "
                f"(without agent_channel); got {num_tasks} tasks and observations of shape {tuple(obs_shape)}"
            )
        self.table = nn.Embedding(NUM_COLOURS, embedding_dim)
        self.register_buffer("task_colours", torch.as_tensor(TASK_COLOURS), persistent=False)

    def phases(self, task_id: torch.Tensor, remaining: torch.Tensor) -> torch.Tensor:
        """0 where the task's first colour remains (it goes for it), else 1; ``task_id`` (N,) or
        (N, T) against ``remaining`` (N, NUM_COLOURS)."""
        first = self.task_colours[task_id, 0]
        rows = remaining if task_id.dim() == 1 else remaining[:, None].expand(*task_id.shape, -1)
        return (~rows.gather(-1, first.unsqueeze(-1)).squeeze(-1)).long()

    def colours(self, task_id: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        return self.task_colours[task_id, phase]
