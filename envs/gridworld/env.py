"""`GridWorld`: one episode of the SynPo gridworld at a time (gymnasium API)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from synpo_envs.gridworld.constants import (
    COLOUR_LETTERS,
    DEFAULT_FRAME_STACK,
    DEFAULT_MAX_STEPS,
    DEFAULT_WINDOW,
    GRID_SIZE,
    NUM_ACTIONS,
    TASK_COLOURS,
    TASK_NAMES,
)
from synpo_envs.gridworld.core import GridBatch, GridSpec, Pair
from synpo_envs.gridworld.drawing import ansi_map, full_map_rgb

RESET_OPTIONS = ("pair", "agent_pos", "treasure_pos")
_ONLY = np.zeros(1, dtype=np.int64)  # the single episode slot


def observation_space(spec: GridSpec) -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0, 255, spec.obs_shape, dtype=np.uint8),
            "env_id": gym.spaces.Discrete(spec.num_envs),
            "task_id": gym.spaces.Discrete(spec.num_tasks),
        }
    )


class GridWorld(gym.Env):
    """The SynPo gridworld (Hu, Chen, Zhu and Sha, NeurIPS 2018).

    ## Description
    A 16 x 16 maze (by default one of the 20 built-in 3 x 3 room mazes; an environment id
    selects it) holds five treasures, one of each colour A red, B blue, C green, D orange,
    E purple. A task (one of the 20 ordered colour pairs ``AB BC ... ED``) asks the agent to pick
    up the first colour's treasure and then the second's. Every reset places the five treasures
    on distinct floor cells and the agent on any floor cell, uniformly, and draws an
    (env_id, task_id) pair from ``pairs``; ``absent_treasures=p`` (not the paper's: for varied
    training data) leaves each treasure outside the task out with probability p.
    ``reset(options={"pair": (e, t)})`` forces the pair;
    adding ``"agent_pos": (r, c)`` and ``"treasure_pos": [(r, c)] * 5`` (colours A-E) fixes the
    layout too.

    ## Action space
    ``Discrete(5)``: 0 up (row - 1), 1 down, 2 left (col - 1), 3 right, 4 pick-up.

    ## Observation
    ``Dict(obs=Box(0, 255, (3 * frame_stack, 16, 16), uint8), env_id=Discrete(num mazes),
    task_id=Discrete(20))``. ``obs`` stacks the last ``frame_stack`` RGB frames, oldest first,
    zeros before the first. A frame shows all remaining treasures, walls and floor only inside
    the (2l+1) x (2l+1) window around the agent (``window=l``; 0 is the paper's blind agent),
    black elsewhere, and the agent's own cell in the agent colour (hiding a treasure under it).
    ``agent_channel=True`` (not the paper's) keeps the cell's colour and marks the agent in a
    fourth channel per frame: ``obs`` is then (4 * frame_stack, 16, 16).

    ## Rewards
    -0.01 per step; -0.01 more for bumping into a wall (the agent stays); +1 more for picking the
    task's next treasure, +10 more when that completes the task; -10 more for picking any other
    treasure. Pick-up on an empty cell costs just the step. ``reward={...}`` overrides terms
    (keys ``step wall correct complete wrong``).

    ## Termination
    Terminated when the task is completed (``info["success"]``) or a wrong treasure is picked;
    truncated after ``max_steps`` (300) steps.

    ``info`` carries ``env_id``, ``task_id``, ``success`` and ``expert_action`` (the optimal
    action for the returned observation). The unwrapped env exposes ``walls``, ``agent_pos``,
    ``treasure_pos``, ``task`` and ``expert_action(epsilon=0.0)`` for planning and checks.

    ## Registered ids
    ``SynPoGridWorld-v0`` (``gymnasium.make_vec`` gives `BatchedGridWorld`).
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 10}

    def __init__(
        self,
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
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}; expected one of {self.metadata['render_modes']}")
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
        self.render_mode = render_mode
        self.observation_space = observation_space(self.grid_spec)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self._state = GridBatch(self.grid_spec, 1)
        self._done = True

    # --- gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        pair, agent_pos, treasure_pos = (options.pop(k, None) for k in RESET_OPTIONS)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; expected some of {RESET_OPTIONS}")
        if pair is not None:
            pair = self.grid_spec.check_pair(pair)
        if (agent_pos is None) != (treasure_pos is None):
            raise ValueError("reset options agent_pos and treasure_pos go together")
        if agent_pos is not None:
            if pair is None:
                raise ValueError("reset options agent_pos/treasure_pos need a 'pair' too")
            layout = self.grid_spec.fixed_layout(pair, agent_pos, treasure_pos)
        else:
            layout = self.grid_spec.sample_layout(self.np_random, pair)
        self._state.reset_episodes(_ONLY, [layout])
        self._done = False
        return self._observation(), self._info(success=False)

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        if not (isinstance(action, (int, np.integer)) and 0 <= action < NUM_ACTIONS):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        reward, terminated, truncated, success = self._state.step(np.array([action]))
        self._done = bool(terminated[0] or truncated[0])
        return (
            self._observation(),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            self._info(success=bool(success[0])),
        )

    def render(self):
        if self.render_mode == "rgb_array":
            return full_map_rgb(self.walls, self.agent_pos, self.treasure_pos)
        if self.render_mode == "ansi":
            return ansi_map(self.walls, self.agent_pos, self.treasure_pos, self.task)
        return None

    # --- state for planning and checks ----------------------------------------------------
    @property
    def walls(self) -> np.ndarray:
        return self.grid_spec.mazes[self._state.env_id[0]].walls

    @property
    def agent_pos(self) -> tuple[int, int]:
        return divmod(int(self._state.agent[0]), GRID_SIZE)

    @property
    def treasure_pos(self) -> np.ndarray:
        """(5, 2) row/col of each colour's treasure, -1 once picked."""
        cells = self._state.treasures[0]
        pos = np.stack(np.divmod(cells, GRID_SIZE), axis=1)
        pos[cells < 0] = -1
        return pos

    @property
    def task(self) -> tuple[str, str]:
        """The ordered colour pair, e.g. ('A', 'B')."""
        first, second = TASK_COLOURS[self._state.task_id[0]]
        return COLOUR_LETTERS[first], COLOUR_LETTERS[second]

    @property
    def pair(self) -> Pair:
        return int(self._state.env_id[0]), int(self._state.task_id[0])

    def expert_action(self, epsilon: float = 0.0) -> int:
        """The optimal action; with probability ``epsilon`` a uniformly random one instead
        (the paper's perturbed expert), drawn from the env's seeded generator."""
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        if epsilon > 0.0 and self.np_random.random() < epsilon:
            return int(self.np_random.integers(NUM_ACTIONS))
        return int(self._state.expert_actions()[0])

    def _observation(self) -> dict[str, Any]:
        return {
            "obs": self._state.obs[0].copy(),
            "env_id": int(self._state.env_id[0]),
            "task_id": int(self._state.task_id[0]),
        }

    def _info(self, success: bool) -> dict[str, Any]:
        env_id, task_id = self.pair
        return {
            "env_id": env_id,
            "task_id": task_id,
            "task": TASK_NAMES[task_id],
            "success": success,
            "expert_action": int(self._state.expert_actions()[0]),
        }
