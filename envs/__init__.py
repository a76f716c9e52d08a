"""SynPo environments (gymnasium only): importing this registers them with gymnasium."""

import gymnasium
from synpo_envs.gridworld import BatchedGridWorld, GridWorld

GRIDWORLD_ID = "SynPoGridWorld-v0"
THOR_ID = "SynPoThor-v0"

if GRIDWORLD_ID not in gymnasium.registry:
    gymnasium.register(
        id=GRIDWORLD_ID,
        entry_point="synpo_envs.gridworld:GridWorld",
        vector_entry_point="synpo_envs.gridworld:BatchedGridWorld",
        # The env counts its own steps (max_steps), so no TimeLimit wrapper is added.
        max_episode_steps=None,
    )

if THOR_ID not in gymnasium.registry:
    # Registering imports neither ai2thor nor torch; the player starts on the first reset().
    gymnasium.register(id=THOR_ID, entry_point="synpo_envs.thor:ThorKitchen", max_episode_steps=None)

__all__ = ["GRIDWORLD_ID", "THOR_ID", "BatchedGridWorld", "GridWorld"]
