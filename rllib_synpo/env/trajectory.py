"""`Trajectory`, one expert episode of one pair stored compactly, and turning RLlib episodes of
`SynPoPairsEnv` (or `rllib_synpo.env.thor_pair_env.ThorPairsEnv`) into compact `Trajectory`
records (on the env runner, so only one frame per step travels to the driver)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


@dataclass
class Trajectory:
    """One episode of one (env, task) pair: ``frames[t]`` is the newest frame of observation t."""

    frames: np.ndarray  # (L, C, ...) the newest C rows of each stacked observation: (L, C, H, W) uint8 images
    env_id: int
    task_id: int
    expert_action: np.ndarray  # (L,) the label at observation t
    action: np.ndarray  # (L,) the action executed at t
    reward: np.ndarray  # (L,) the reward it earned
    task_labels: np.ndarray | None = None  # (L, T) int8 expert actions for every task, -1 none
    # Observation entries kept per step as they are, not stacked (THOR's "held"), by name.
    per_step: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.expert_action)

    @property
    def nbytes(self) -> int:
        arrays = (
            self.frames,
            self.expert_action,
            self.action,
            self.reward,
            self.task_labels,
            *(self.per_step or {}).values(),
        )
        return sum(a.nbytes for a in arrays if a is not None)

    def stacked_obs(self, frame_stack: int) -> np.ndarray:
        """(L, frame_stack * C, ...): observation t stacks frames t-k+1..t, zeros before 0."""
        length, channels, *rest = self.frames.shape
        padded = np.concatenate(
            [np.zeros((frame_stack - 1, channels, *rest), self.frames.dtype), self.frames]
        )
        windows = sliding_window_view(padded, frame_stack, axis=0)  # (L, C, ..., k)
        return np.ascontiguousarray(np.moveaxis(windows, -1, 1)).reshape(
            length, frame_stack * channels, *rest
        )

    def stacked_obs_at(self, step: int, frame_stack: int) -> np.ndarray:
        """Observation ``step`` alone: (frame_stack * C, ...), zeros before frame 0."""
        channels, *rest = self.frames.shape[1:]
        stack = np.zeros((frame_stack, channels, *rest), self.frames.dtype)
        first = max(0, step - frame_stack + 1)
        stack[frame_stack - (step + 1 - first) :] = self.frames[first : step + 1]
        return stack.reshape(frame_stack * channels, *rest)


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
    layout = (
        frame_channels if isinstance(frame_channels, FrameLayout) else FrameLayout(channels=frame_channels)
    )
    trajectories = []
    for agent_episode in episode.agent_episodes.values():
        length = len(agent_episode)
        if length == 0:
            continue
        observations = agent_episode.get_observations(slice(0, length))
        infos = agent_episode.get_infos(slice(0, length + 1))
        obs = (
            observations[layout.key]
            if isinstance(observations, dict)
            else np.stack([o[layout.key] for o in observations])
        )
        env_id = (
            observations["env_id"] if isinstance(observations, dict) else [o["env_id"] for o in observations]
        )
        task_id = (
            observations["task_id"]
            if isinstance(observations, dict)
            else [o["task_id"] for o in observations]
        )
        trajectories.append(
            Trajectory(
                frames=np.ascontiguousarray(np.asarray(obs)[:, -layout.channels :], dtype=layout.dtype),
                env_id=int(np.asarray(env_id)[0]),
                task_id=int(np.asarray(task_id)[0]),
                expert_action=np.array([info["expert_action"] for info in infos[:length]], np.int8),
                action=np.array([info["executed_action"] for info in infos[1:]], np.int8),
                reward=np.asarray(agent_episode.get_rewards(slice(0, length)), np.float32),
                task_labels=np.stack([info["task_labels"] for info in infos[:length]])
                if "task_labels" in infos[0]
                else None,
                per_step={key: np.asarray(_column(observations, key), np.int64) for key in layout.per_step}
                or None,
            )
        )
    return trajectories


def collect_trajectories(
    env_runner, num_episodes: int, frame_channels: int | FrameLayout
) -> list[Trajectory]:
    """Samples ``num_episodes`` multi-agent episodes on an env runner whose env plays the expert
    (actions proposed by RLlib are ignored by the env, so no forward pass is spent on them)."""
    episodes = env_runner.sample(num_episodes=num_episodes, random_actions=True)
    return [t for episode in episodes for t in episode_to_trajectories(episode, frame_channels)]
