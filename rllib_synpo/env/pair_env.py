"""`SynPoPairsEnv`: the gridworld as an RLlib ``MultiAgentEnv`` whose agents are pair slots.

Each agent ``slot_i`` plays its own gridworld episode on an (environment, task) pair drawn from
this env runner's share of the pairs; all slots map to the one shared SynPo module, so RLlib's
env runner batches the forward pass across pairs, and ``num_env_runners`` shards the pairs
between Ray workers (runner k of n takes pairs k-1, k-1+n, ...; a local-only setup takes all).
One multi-agent episode is one gridworld episode per slot; it ends when every slot is done.

``behaviour="expert"`` makes the env execute its optimal expert's action, perturbed to a random
one with probability ``expert_epsilon``, whatever the module proposed (imitation data);
``behaviour="policy"`` executes the module's actions (evaluation, PPO). Every ``info`` carries
``expert_action``, the expert's action for the observation returned with it (-1 for an
episode's last observation), and every step's ``executed_action``, the action that was run.
With ``relabel=True`` infos also carry ``task_labels``: the expert's action at that observation
for every task (-1 where the pair is not among ``pairs`` or the state is impossible for the task).
``play_expert_episode`` plays one such episode with whole-array steps and returns its
trajectories directly (what `ExpertEnvRunner.sample_trajectories` uses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium.vector import AutoresetMode
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import NUM_ACTIONS, NUM_TASKS
from synpo_envs.gridworld.mazes import resolve_mazes

from rllib_synpo.env.trajectory import FrameLayout, Trajectory
from rllib_synpo.utils.checks import POSITIVE_INT, check_settings

PAIRS_ENV_NAME = "synpo_pairs"  # the name it is registered under with Ray Tune
BEHAVIOURS = ("expert", "policy")
ENV_CONFIG_KEYS = {"num_slots", "pairs", "behaviour", "expert_epsilon", "seed", "gridworld", "relabel"}
DEFAULT_NUM_SLOTS = 16
SEED_STRIDE = 100_003


def slot_count(config: Mapping[str, Any], default: int = DEFAULT_NUM_SLOTS) -> int:
    """A pairs env config's ``num_slots`` (``default`` where unset); a ValueError unless it is an
    integer >= 1."""
    num_slots = config.get("num_slots", default)
    check_settings({"env_config num_slots": num_slots}, {POSITIVE_INT: ("env_config num_slots",)})
    return int(num_slots)


def shard_pairs(pairs: list, worker_index: int, num_workers: int) -> list:
    """The share of ``pairs`` of env runner ``worker_index`` (0 = local) among ``num_workers``."""
    if num_workers <= 0 or worker_index == 0:
        return list(pairs)
    share = list(pairs)[worker_index - 1 :: num_workers]
    return share or list(pairs)  # more runners than pairs: runners repeat pairs


class ResetSeeds:
    """Which seed a pairs env's ``reset`` applies: its configured seed at the first reset that
    gives none, and none for a seed it has already applied, because RLlib's env runner re-sends
    its seed at every ``sample(num_episodes=...)``, which should continue the streams, not
    replay them."""

    def __init__(self, configured: int | None) -> None:
        self._configured = configured
        self._last: int | None = None

    def fresh(self, seed: int | None) -> int | None:
        if seed is None:
            seed, self._configured = self._configured, None
        if seed is None or seed == self._last:
            return None
        self._last = seed
        return seed


class PairEnvOptions(NamedTuple):
    config: dict
    worker_index: int
    num_workers: int
    behaviour: str
    epsilon: float


def pair_env_options(config: dict | None, known_keys: set[str], env_name: str) -> PairEnvOptions:
    """The checked options every pairs env shares (RLlib passes an EnvContext: a dict that also
    knows which env runner builds the env)."""
    worker_index = int(getattr(config, "worker_index", 0))
    num_workers = int(getattr(config, "num_workers", 0))
    config = dict(config or {})
    unknown = sorted(set(config) - known_keys)
    if unknown:
        raise ValueError(f"unknown {env_name} config key(s) {unknown}; expected some of {sorted(known_keys)}")
    behaviour = config.get("behaviour", "expert")
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"behaviour {behaviour!r}; expected one of {BEHAVIOURS}")
    epsilon = float(config.get("expert_epsilon", 0.0))
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"expert_epsilon must be in [0, 1], got {epsilon!r}")
    return PairEnvOptions(config, worker_index, num_workers, behaviour, epsilon)


class SynPoPairsEnv(MultiAgentEnv):
    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        config, worker_index, num_workers, self.behaviour, self.epsilon = pair_env_options(
            config, ENV_CONFIG_KEYS, "SynPoPairsEnv"
        )
        num_slots = slot_count(config)
        gridworld = dict(config.get("gridworld", {}))
        pairs = config.get("pairs")
        if pairs is None:
            num_envs = len(resolve_mazes(gridworld.get("mazes")))
            pairs = [(e, t) for e in range(num_envs) for t in range(NUM_TASKS)]
        pairs = [tuple(p) for p in pairs]
        self.pairs = shard_pairs(pairs, worker_index, num_workers)
        # A slot plays one episode per multi-agent episode: finished slots wait, unreset.
        self.batched = BatchedGridWorld(
            num_slots, pairs=self.pairs, autoreset_mode=AutoresetMode.DISABLED, **gridworld
        )
        spec = self.batched.grid_spec
        self.relabel = bool(config.get("relabel", False))
        self._labelled = np.zeros((spec.num_envs, spec.num_tasks), bool)  # every pair of the config
        self._labelled[tuple(np.array(pairs).T)] = True
        self.agents = self.possible_agents = [f"slot_{i}" for i in range(num_slots)]
        self.observation_spaces = {a: self.batched.single_observation_space for a in self.agents}
        self.action_spaces = {a: self.batched.single_action_space for a in self.agents}
        seed = config.get("seed")
        seed = None if seed is None else int(seed) + SEED_STRIDE * worker_index  # runners differ
        self._seeds = ResetSeeds(seed)
        self._obs: dict[str, np.ndarray] = {}
        self._expert = np.zeros(num_slots, np.int64)
        self._rng = np.random.default_rng(seed)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Seeds the pair slots the first time a seed is given (or from ``env_config["seed"]``);
        the same seed given again continues the streams instead of replaying them, because
        RLlib's env runner re-sends its seed at every ``sample(num_episodes=...)``."""
        self._reset_slots(seed, options)
        infos = {a: {"expert_action": int(self._expert[i])} for i, a in enumerate(self.agents)}
        self._add_task_labels(infos, range(len(self.agents)))
        return self._agent_obs(np.arange(len(self.agents))), infos

    def step(self, action_dict: dict[str, Any]):
        actions = np.zeros(len(self.agents), np.int64)
        rows = np.flatnonzero(~self.batched.finished)
        for i in rows:
            agent = self.agents[i]
            if self.behaviour == "policy":
                if agent not in action_dict:
                    raise ValueError(f"no action for active agent {agent!r}")
                actions[i] = int(action_dict[agent])
        if self.behaviour == "expert":
            actions = self._perturbed_expert_actions()
        self._obs, reward, terminated, truncated, info = self.batched.step(actions)
        self._expert = info["expert_action"]
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for i in rows:
            agent = self.agents[i]
            done = bool(terminated[i] or truncated[i])
            rewards[agent] = float(reward[i])
            terms[agent] = bool(terminated[i])
            truncs[agent] = bool(truncated[i])
            obs[agent] = {k: v[i] for k, v in self._obs.items()}
            infos[agent] = {
                "expert_action": -1 if done else int(self._expert[i]),
                "executed_action": int(actions[i]),
                "success": bool(info["success"][i]),
            }
        finished = self.batched.finished
        self._add_task_labels(infos, [i for i in rows if not finished[i]])
        terms["__all__"] = bool(finished.all())
        truncs["__all__"] = False
        return obs, rewards, terms, truncs, infos

    def play_expert_episode(self, layout: FrameLayout, seed: int | None = None) -> list[Trajectory]:
        """One multi-agent episode in expert behaviour, as ``reset(seed=seed)`` and ``step`` play
        it (the same random draws, so the same records RLlib's env runner makes of them), but
        stepped without per-agent dicts: one `Trajectory` per slot, cut to ``layout``."""
        if self.behaviour != "expert":
            raise ValueError(
                f"play_expert_episode needs behaviour 'expert', this env's is {self.behaviour!r}"
            )
        self._reset_slots(seed, None)
        columns: dict[str, list[np.ndarray]] = {key: [] for key in (layout.key, *layout.per_step)}
        expert, executed, rewards, labels = [], [], [], []
        lengths = np.zeros(len(self.agents), np.int64)
        pairs = self._obs["env_id"].copy(), self._obs["task_id"].copy()
        while not (finished := self.batched.finished).all():
            columns[layout.key].append(self._obs[layout.key][:, -layout.channels :].astype(layout.dtype))
            for key in layout.per_step:
                columns[key].append(self._obs[key])
            expert.append(self._expert)
            if self.relabel:
                labels.append(self._task_labels())
            actions = self._perturbed_expert_actions()
            self._obs, reward, _, _, info = self.batched.step(actions)
            self._expert = info["expert_action"]
            executed.append(actions)
            rewards.append(reward)
            lengths += ~finished
        steps = {key: np.stack(values, axis=1) for key, values in columns.items()}  # (slot, step, ...)
        expert_actions, actions, reward = (np.stack(v, axis=1) for v in (expert, executed, rewards))
        task_labels = np.stack(labels, axis=1) if self.relabel else None
        return [
            Trajectory(
                frames=np.ascontiguousarray(steps[layout.key][i, :n]),
                env_id=int(pairs[0][i]),
                task_id=int(pairs[1][i]),
                expert_action=expert_actions[i, :n].astype(np.int8),
                action=actions[i, :n].astype(np.int8),
                reward=reward[i, :n].astype(np.float32),
                task_labels=None if task_labels is None else task_labels[i, :n].copy(),
                per_step={key: steps[key][i, :n].astype(np.int64) for key in layout.per_step} or None,
            )
            for i, n in enumerate(lengths)
        ]

    def _add_task_labels(self, infos: dict, rows) -> None:
        if not self.relabel:
            return
        labels = self._task_labels()
        for i in rows:
            infos[self.agents[i]]["task_labels"] = labels[i]

    def _task_labels(self) -> np.ndarray:
        """(num_slots, num_tasks) int8: every configured task's expert action at each slot's
        current state, -1 where the pair is not configured or the state is impossible for it."""
        state = self.batched.state
        labels, possible = self.batched.grid_spec.task_expert_actions(
            state.env_id, state.agent, state.treasures
        )
        return np.where(possible & self._labelled[state.env_id], labels, -1).astype(np.int8)

    def _reset_slots(self, seed: int | None, options: dict | None) -> None:
        seed = self._seeds.fresh(seed)
        self._obs, info = self.batched.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = np.random.default_rng([seed, len(self.agents)])
        self._expert = info["expert_action"]

    def _perturbed_expert_actions(self) -> np.ndarray:
        """The expert's actions, each replaced by a random one with probability ``epsilon``."""
        actions = self._expert.copy()
        if self.epsilon > 0:
            noisy = self._rng.random(len(actions)) < self.epsilon
            actions[noisy] = self._rng.integers(NUM_ACTIONS, size=int(noisy.sum()))
        return actions

    def _agent_obs(self, rows: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        return {self.agents[i]: {k: v[i] for k, v in self._obs.items()} for i in rows}
