"""`ThorPairsEnv`: the THOR kitchens as an RLlib ``MultiAgentEnv`` whose agents are pair slots.

The THOR counterpart of `rllib_synpo.env.pair_env.SynPoPairsEnv`: each agent ``slot_i`` plays its
own `ThorKitchen` episode (its own THOR player) on a (kitchen, task) pair drawn from this env
runner's share of ``pairs``; all slots map to the one shared SynPo module. One multi-agent
episode is one THOR episode per slot; it ends when every slot is done.

``behaviour="expert"`` executes the planner expert's action (`synpo_envs.thor.expert`), replaced
by a random action with probability ``expert_epsilon``, whatever the module proposed (imitation
data); ``behaviour="policy"`` executes the module's actions. Every ``info`` carries
``expert_action``, the expert's action for the observation returned with it (-1 for an
episode's last observation, and in policy mode where the expert has no plan), and every step's
``executed_action`` and ``success``.

Episodes the expert cannot complete from the start (the task's object is shut in a cabinet, or
hidden behind nearer task objects from every pose) are redrawn in expert mode, up to
`MAX_EXPERT_REDRAWS` times; an expert that loses its plan mid-episode (a random move made the
task impossible, or every predicted pose failed on a real build) truncates that slot, with
``info["expert_gave_up"]``.

Config (``env_config``): ``num_slots``, ``pairs`` (default: every pair of the kitchens),
``behaviour``, ``expert_epsilon``, ``seed``, ``relabel`` (only False: relabelling needs the
expert's action for every task at a state, which is gridworld-only for now) and ``thor``: the
`ThorKitchen` keyword options (``kitchens``, ``featurizer``, ``featurizer_options``,
``frame_stack``, ``max_steps``, ``local_executable_path``, ``x_display``, ...). Where ``thor``
names no ``local_executable_path`` (``x_display``), the environment variable
``SYNPO_THOR_EXECUTABLE`` (``SYNPO_THOR_X_DISPLAY``) supplies it, so one experiment file runs
on any machine's build.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from synpo_envs.thor import ThorKitchen
from synpo_envs.thor.constants import (
    DEFAULT_FRAME_STACK,
    NUM_ACTIONS,
    NUM_TASKS,
    PAPER_KITCHENS,
)
from synpo_envs.thor.expert import NoPlanError, ThorExpert

from rllib_synpo.env.pair_env import SEED_STRIDE, ResetSeeds, pair_env_options, shard_pairs, slot_count
from rllib_synpo.env.trajectory import FrameLayout

THOR_PAIRS_ENV_NAME = "synpo_thor_pairs"  # the name it is registered under with Ray Tune
THOR_ENV_CONFIG_KEYS = {"num_slots", "pairs", "behaviour", "expert_epsilon", "seed", "thor", "relabel"}
DEFAULT_NUM_SLOTS = 4  # each slot runs its own THOR player
MAX_EXPERT_REDRAWS = 20
NO_LABEL = -1
# Environment variables that supply the THOR build where the config names none.
THOR_EXECUTABLE_ENV = "SYNPO_THOR_EXECUTABLE"
THOR_X_DISPLAY_ENV = "SYNPO_THOR_X_DISPLAY"
ENV_OPTIONS = {"local_executable_path": THOR_EXECUTABLE_ENV, "x_display": THOR_X_DISPLAY_ENV}


def thor_options(thor: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `ThorKitchen` options of an env_config's ``thor`` entry, with the build path and
    display taken from `THOR_EXECUTABLE_ENV` / `THOR_X_DISPLAY_ENV` where not given."""
    options = dict(thor or {})
    if "pairs" in options:
        raise ValueError(
            "give the pairs as env_config['pairs'] (or the algorithm's split), not inside 'thor'"
        )
    for option, variable in ENV_OPTIONS.items():
        if options.get(option) is None and os.environ.get(variable):
            options[option] = os.environ[variable]
    return options


# What a THOR build path must name, as the errors word it.
THOR_EXECUTABLE_EXPECTED = "expected the path of a THOR 5.0 player executable (no spaces or quotes in it)"


def check_thor_executable(thor: Mapping[str, Any] | None) -> None:
    """Raises ValueError, naming the setting it came from, when the THOR build that
    `thor_options` picks (``local_executable_path``, else `THOR_EXECUTABLE_ENV`) is not a file
    the player can be launched from on this machine; no build named is left to `ThorKitchen`."""
    given = dict(thor or {}).get("local_executable_path")
    path = thor_options(thor).get("local_executable_path")
    if path is None:
        return
    source = "env_config.thor.local_executable_path" if given is not None else THOR_EXECUTABLE_ENV
    problem = _executable_problem(os.path.abspath(os.path.expanduser(os.fspath(path))))
    if problem:
        raise ValueError(f"{source} {os.fspath(path)!r} {problem}: {THOR_EXECUTABLE_EXPECTED}")


def _executable_problem(path: str) -> str | None:
    """What keeps ai2thor from launching the player at the absolute ``path``, or None."""
    if not os.path.exists(path):
        return "does not exist"
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return "is not an executable file (chmod +x it)"
    if shlex.split(path) != [path]:  # ai2thor shlex-splits the player's command line
        return "contains spaces or quotes, which ai2thor cannot launch"
    return None


def num_kitchens(env_config: Mapping[str, Any]) -> int:
    """How many kitchens (environment ids) an env_config's ``thor`` entry uses."""
    return len((env_config.get("thor") or {}).get("kitchens") or PAPER_KITCHENS)


def thor_frame_layout(env_config: Mapping[str, Any]) -> FrameLayout:
    """What the SynPo replay keeps per step: the newest feature row (1, D) float32 of
    ``features`` and the ``held`` id."""
    stack = int((env_config.get("thor") or {}).get("frame_stack", DEFAULT_FRAME_STACK))
    return FrameLayout(key="features", channels=1, frame_stack=stack, dtype=np.float32, per_step=("held",))


def _slot_seed(seed: int, slot: int) -> int:
    return int(np.random.SeedSequence([seed, slot]).generate_state(1)[0])


class ThorPairsEnv(MultiAgentEnv):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        config, worker_index, num_workers, self.behaviour, self.epsilon = pair_env_options(
            config, THOR_ENV_CONFIG_KEYS, "ThorPairsEnv"
        )
        if config.get("relabel"):
            raise ValueError("relabel (relabel_seen_tasks) is gridworld-only; set it to False for THOR")
        num_slots = slot_count(config, DEFAULT_NUM_SLOTS)
        options = thor_options(config.get("thor"))
        pairs = config.get("pairs")
        if pairs is None:
            pairs = [(e, t) for e in range(num_kitchens(config)) for t in range(NUM_TASKS)]
        self.pairs = shard_pairs([tuple(map(int, p)) for p in pairs], worker_index, num_workers)
        self.kitchens = [ThorKitchen(pairs=self.pairs, **options) for _ in range(num_slots)]
        self.experts = [ThorExpert.for_env(env) for env in self.kitchens]
        self.agents = self.possible_agents = [f"slot_{i}" for i in range(num_slots)]
        self.observation_spaces = {a: env.observation_space for a, env in zip(self.agents, self.kitchens)}
        self.action_spaces = {a: env.action_space for a, env in zip(self.agents, self.kitchens)}
        seed = config.get("seed")
        seed = None if seed is None else int(seed) + SEED_STRIDE * worker_index  # runners differ
        self._seeds = ResetSeeds(seed)
        self._rng = np.random.default_rng(seed)
        self._active = np.zeros(num_slots, bool)
        self._expert = np.full(num_slots, NO_LABEL, np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Seeds the slots the first time a seed is given (or from ``env_config["seed"]``); the
        same seed again continues the streams (RLlib re-sends its seed at every sample)."""
        if options:
            raise ValueError(f"ThorPairsEnv.reset takes no options, got {sorted(options)}")
        seed = self._seeds.fresh(seed)
        if seed is not None:
            self._rng = np.random.default_rng([seed, len(self.agents)])
        obs, infos = {}, {}
        for i, agent in enumerate(self.agents):
            obs[agent] = self._reset_slot(i, None if seed is None else _slot_seed(seed, i))
            infos[agent] = {"expert_action": int(self._expert[i])}
        self._active[:] = True
        return obs, infos

    def step(self, action_dict: dict[str, Any]):
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for i in np.flatnonzero(self._active):
            agent = self.agents[i]
            action = self._action(i, agent, action_dict)
            obs[agent], rewards[agent], terms[agent], truncs[agent], info = self.kitchens[i].step(action)
            self.experts[i].record(action, info["action_success"])
            gave_up = False
            if not (terms[agent] or truncs[agent]):
                gave_up = not self._plan(i)
                truncs[agent] = gave_up and self.behaviour == "expert"
            done = terms[agent] or truncs[agent]
            infos[agent] = {
                "expert_action": NO_LABEL if done else int(self._expert[i]),
                "executed_action": int(action),
                "success": bool(info["success"]),
            }
            if gave_up:
                infos[agent]["expert_gave_up"] = True
            self._active[i] = not done
        terms["__all__"] = not self._active.any()
        truncs["__all__"] = False
        return obs, rewards, terms, truncs, infos

    def close(self) -> None:
        for env in self.kitchens:
            env.close()

    # --- internals ----------------------------------------------------------------------------
    def _reset_slot(self, slot: int, seed: int | None) -> dict[str, Any]:
        env, expert = self.kitchens[slot], self.experts[slot]
        for _ in range(MAX_EXPERT_REDRAWS + 1):
            observation, _ = env.reset(seed=seed)
            seed = None  # a redraw continues the slot's stream
            expert.reset_for_env(env)
            if self._plan(slot) or self.behaviour == "policy":
                return observation
        raise NoPlanError(
            f"the THOR expert found no plan in {MAX_EXPERT_REDRAWS + 1} episodes in a row (last: "
            f"{env.kitchen}, {env.task_types[0]} -> {env.task_types[1]}); check the kitchens and pairs"
        )

    def _plan(self, slot: int) -> bool:
        """The expert's action for the slot's current observation; False when it has none."""
        try:
            self._expert[slot] = self.experts[slot].act(self.kitchens[slot].thor_metadata)
        except NoPlanError:
            self._expert[slot] = NO_LABEL
            return False
        return True

    def _action(self, slot: int, agent: str, action_dict: Mapping[str, Any]) -> int:
        if self.behaviour == "policy":
            if agent not in action_dict:
                raise ValueError(f"no action for active agent {agent!r}")
            return int(action_dict[agent])
        if self.epsilon > 0 and self._rng.random() < self.epsilon:
            return int(self._rng.integers(NUM_ACTIONS))
        return int(self._expert[slot])
