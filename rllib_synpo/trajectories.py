"""Turning RLlib episodes of `SynPoPairsEnv` (or `rllib_synpo.thor.pair_env.ThorPairsEnv`)
into compact `Trajectory` records (on the env runner, so only one frame per step travels to
the driver)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rllib_synpo.replay import Trajectory


@dataclass(frozen=True)
class FrameLayout:
    """How a step's record is cut from an observation: the newest ``channels`` rows of the
    stacked entry ``key`` (a stack of ``frame_stack`` frames), stored as ``dtype``, and the
    entries named in ``per_step`` kept as they are. The defaults are the gridworld's RGB stack;
    THOR's is ``FrameLayout("features", 1, frame_stack, np.float32, ("held",))``."""

    key: str = "obs"
    channels: int = 3
    frame_stack: int = 4
    dtype: type = np.uint8
    per_step: tuple[str, ...] = ()


def _column(observations, key: str):
    return observations[key] if isinstance(observations, dict) else [o[key] for o in observations]


def episode_to_trajectories(episode, frame_channels: int | FrameLayout) -> list[Trajectory]:
    """One `Trajectory` per agent (pair slot) of a finished `MultiAgentEpisode`; an int
    ``frame_channels`` is the gridworld layout with that many channels per frame."""
    layout = frame_channels if isinstance(frame_channels, FrameLayout) else FrameLayout(channels=frame_channels)
    trajectories = []
    for agent_episode in episode.agent_episodes.values():
        length = len(agent_episode)
        if length == 0:
            continue
        observations = agent_episode.get_observations(slice(0, length))
        infos = agent_episode.get_infos(slice(0, length + 1))
        obs = observations[layout.key] if isinstance(observations, dict) else np.stack([o[layout.key] for o in observations])
        env_id = observations["env_id"] if isinstance(observations, dict) else [o["env_id"] for o in observations]
        task_id = observations["task_id"] if isinstance(observations, dict) else [o["task_id"] for o in observations]
        trajectories.append(
            Trajectory(
                frames=np.ascontiguousarray(np.asarray(obs)[:, -layout.channels:], dtype=layout.dtype),
                env_id=int(np.asarray(env_id)[0]),
                task_id=int(np.asarray(task_id)[0]),
                expert_action=np.array([info["expert_action"] for info in infos[:length]], np.int8),
                action=np.array([info["executed_action"] for info in infos[1:]], np.int8),
                reward=np.asarray(agent_episode.get_rewards(slice(0, length)), np.float32),
                task_labels=np.stack([info["task_labels"] for info in infos[:length]]) if "task_labels" in infos[0] else None,
                per_step={key: np.asarray(_column(observations, key), np.int64) for key in layout.per_step} or None,
            )
        )
    return trajectories


def collect_trajectories(env_runner, num_episodes: int, frame_channels: int | FrameLayout) -> list[Trajectory]:
    """Samples ``num_episodes`` multi-agent episodes on an env runner whose env plays the expert
    (actions proposed by RLlib are ignored by the env, so no forward pass is spent on them)."""
    episodes = env_runner.sample(num_episodes=num_episodes, random_actions=True)
    return [t for episode in episodes for t in episode_to_trajectories(episode, frame_channels)]
