"""`BatchedGridWorld`: N gridworld episodes stepped in lockstep with whole-array operations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from synpo_envs.checks import is_int
from synpo_envs.gridworld.constants import (
    DEFAULT_FRAME_STACK,
    DEFAULT_MAX_STEPS,
    DEFAULT_WINDOW,
    NUM_ACTIONS,
)
from synpo_envs.gridworld.core import GridBatch, GridSpec, Pair
from synpo_envs.gridworld.env import observation_space

# Perturbed expert actions draw from their own stream, so they never shift the episodes' streams.
_PERTURBATION_STREAM = 1


class BatchedGridWorld(VectorEnv):
    """``num_envs`` independent `GridWorld` episodes stepped together (gymnasium ``VectorEnv``).

    Same rules, spaces (batched) and constructor knobs as `GridWorld`. ``reset(seed=s)`` seeds
    episode slot i exactly like ``GridWorld().reset(seed=s + i)``, so slot i replays the single
    env's episodes for the same actions. Finished episodes reset in the same step
    (``metadata["autoreset_mode"] == SAME_STEP``, the default): the returned observation is the
    next episode's first, the finished one's last is in ``info["final_obs"]`` (masked by
    ``"_final_obs"``). With ``autoreset_mode=AutoresetMode.DISABLED`` nothing resets by itself:
    the returned observation of a finished episode is its last, and the caller starts new ones
    with ``reset(options={"reset_mask": mask})`` (or a full ``reset``); until then a finished
    slot ignores its actions and stays as it ended (its steps return reward 0, not terminated,
    not truncated), which is what an env whose slots play one episode each, like RLlib's
    multi-agent pairs env, wants: no draws or work for episodes it would discard.

    ``reset(options={"pairs": [(e, t)] * num_envs})`` pins slot i to pair i for all its episodes
    until the next reset (what evaluation per pair needs); otherwise every episode draws its pair
    from ``pairs``.

    ``step`` returns observations as a dict of arrays (``obs`` (N, 3 k, 16, 16) uint8, ``env_id``,
    ``task_id``) and ``info`` with arrays ``expert_action`` (for the returned observations),
    ``env_id``/``task_id``/``success`` of the step just taken, and ``episode_return`` /
    ``episode_length`` of finished episodes (masked by ``"_episode"``).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
    AUTORESET_MODES = (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)

    def __init__(
        self,
        num_envs: int,
        *,
        mazes=None,
        pairs: Sequence[Pair] | None = None,
        window: int = DEFAULT_WINDOW,
        frame_stack: int = DEFAULT_FRAME_STACK,
        max_steps: int = DEFAULT_MAX_STEPS,
        reward: Mapping[str, float] | None = None,
        use_maze_start: bool = False,
        agent_channel: bool = False,
        absent_treasures: float = 0.0,
        copy: bool = True,
        autoreset_mode: AutoresetMode = AutoresetMode.SAME_STEP,
    ) -> None:
        if not is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if autoreset_mode not in self.AUTORESET_MODES:
            names = [mode.name for mode in self.AUTORESET_MODES]
            raise ValueError(f"autoreset_mode must be one of {names}, got {autoreset_mode!r}")
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.num_envs = int(num_envs)
        self.grid_spec = GridSpec(
            mazes=mazes,
            pairs=pairs,
            window=window,
            frame_stack=frame_stack,
            max_steps=max_steps,
            reward=reward,
            use_maze_start=use_maze_start,
            agent_channel=agent_channel,
            absent_treasures=absent_treasures,
        )
        self.copy = copy  # False returns views of internal buffers that the next step overwrites
        self.single_observation_space = observation_space(self.grid_spec)
        self.single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._state = GridBatch(self.grid_spec, self.num_envs)
        self._finished = np.zeros(self.num_envs, dtype=bool)  # slots waiting for a reset (DISABLED)
        self._rngs: list[np.random.Generator] | None = None
        self._pinned: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        pinned = options.pop("pairs", None)
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; expected 'pairs' or 'reset_mask'")
        if mask is not None:
            return self._reset_masked(mask, seed, pinned)
        if seed is not None or self._rngs is None:
            seeds = [None] * self.num_envs if seed is None else [seed + i for i in range(self.num_envs)]
            self._rngs = [seeding.np_random(s)[0] for s in seeds]
            self._np_random = np.random.default_rng(None if seed is None else [seed, _PERTURBATION_STREAM])
        self._pinned = None if pinned is None else self._check_pinned(pinned)
        self._reset_slots(np.arange(self.num_envs))
        return self._observations(), {"expert_action": self._state.expert_actions()}

    def _reset_masked(self, mask, seed: int | None, pinned):
        """``reset(options={"reset_mask": mask})`` of the DISABLED autoreset mode: new episodes in
        the masked slots only (from their own streams; the others continue as they were)."""
        if self.metadata["autoreset_mode"] != AutoresetMode.DISABLED:
            raise ValueError("reset_mask needs autoreset_mode=AutoresetMode.DISABLED")
        mask = np.asarray(mask)
        if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
            raise ValueError(
                f"reset_mask must be {self.num_envs} booleans, got shape {mask.shape} dtype {mask.dtype}"
            )
        if seed is not None or pinned is not None or self._rngs is None:
            raise ValueError(
                "reset_mask resets slots of a started env: reset it fully first, without seed or pairs"
            )
        self._reset_slots(np.flatnonzero(mask))
        return self._observations(), {"expert_action": self._state.expert_actions()}

    def step(self, actions):
        actions = self._check_actions(actions)
        disabled = self.metadata["autoreset_mode"] == AutoresetMode.DISABLED
        # Without autoreset, finished slots wait as they ended: only the others step.
        rows = np.flatnonzero(~self._finished) if disabled and self._finished.any() else None
        state = self._state
        env_id, task_id = state.env_id.copy(), state.task_id.copy()
        reward, terminated, truncated, success = state.step(actions, rows)
        done = terminated | truncated
        if disabled:
            self._finished |= done
        info: dict[str, Any] = {"env_id": env_id, "task_id": task_id, "success": success}
        info["episode_return"] = np.where(done, state.episode_return, 0.0)
        info["episode_length"] = np.where(done, state.steps, 0)
        info["_episode"] = done
        finished = np.flatnonzero(done)
        if len(finished) and not disabled:
            final_obs = np.empty(self.num_envs, dtype=object)
            for index in finished:
                final_obs[index] = {
                    "obs": state.obs[index].copy(),
                    "env_id": int(env_id[index]),
                    "task_id": int(task_id[index]),
                }
            info["final_obs"], info["_final_obs"] = final_obs, done
            self._reset_slots(finished)
        info["expert_action"] = state.expert_actions()
        return self._observations(), reward, terminated, truncated, info

    def expert_actions(self, epsilon: float = 0.0) -> np.ndarray:
        """Optimal actions for the current observations; each replaced by a uniformly random
        action with probability ``epsilon`` (drawn from the env's seeded generator)."""
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        actions = self._state.expert_actions()
        if epsilon > 0.0:
            perturb = self.np_random.random(self.num_envs) < epsilon
            actions = np.where(perturb, self.np_random.integers(NUM_ACTIONS, size=self.num_envs), actions)
        return actions

    @property
    def finished(self) -> np.ndarray:
        """(num_envs,) bool, a copy: the slots whose episode has ended and that wait for a reset
        (only ever True with ``autoreset_mode=AutoresetMode.DISABLED``)."""
        return self._finished.copy()

    @property
    def state(self) -> GridBatch:
        """Read-only use: the raw state arrays (agent cells, treasure cells, stage, steps)."""
        return self._state

    def _reset_slots(self, rows: np.ndarray) -> None:
        pinned = self._pinned
        layouts = [
            self.grid_spec.sample_layout(self._rngs[i], None if pinned is None else tuple(pinned[i]))
            for i in rows
        ]
        self._state.reset_episodes(rows, layouts)
        self._finished[rows] = False

    def _observations(self) -> dict[str, np.ndarray]:
        state = self._state
        obs = {"obs": state.obs, "env_id": state.env_id, "task_id": state.task_id}
        return {key: value.copy() for key, value in obs.items()} if self.copy else obs

    def _check_pinned(self, pairs) -> np.ndarray:
        pairs = list(pairs)
        if len(pairs) != self.num_envs:
            raise ValueError(
                f"options['pairs'] has {len(pairs)} pairs; expected one per env ({self.num_envs})"
            )
        return np.array([self.grid_spec.check_pair(p) for p in pairs], dtype=np.int64)

    def _check_actions(self, actions) -> np.ndarray:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(
                f"actions must be {self.num_envs} integers, got shape {actions.shape} dtype {actions.dtype}"
            )
        if actions.min() < 0 or actions.max() >= NUM_ACTIONS:
            raise ValueError(
                f"actions must be in [0, {NUM_ACTIONS}), got values {np.unique(actions).tolist()}"
            )
        return actions.astype(np.int64, copy=False)
