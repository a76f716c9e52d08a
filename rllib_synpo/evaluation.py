"""Batched greedy evaluation on the gridworld: success rate, return and first-pick accuracy per
(environment, task) pair. Plain numpy/torch; any policy given as a function of observations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import NUM_CELLS

from rllib_synpo.heap import release_free_heap

Pair = tuple[int, int]
PolicyFn = Callable[[dict[str, np.ndarray]], np.ndarray]
DEFAULT_MAX_BATCH = 4096  # episodes stepped together (memory: ~3 KB of observation each)


@dataclass
class PairResults:
    """Per-pair results of an evaluation (arrays aligned with ``pairs``)."""

    pairs: list[Pair]
    episodes: np.ndarray  # episodes run per pair
    successes: np.ndarray  # successful episodes per pair
    returns: np.ndarray  # summed episode returns per pair
    first_pick_correct: np.ndarray  # episodes whose first pick-up was the task's first colour
    picked: np.ndarray  # episodes with at least one pick-up of a treasure

    @property
    def success_rate(self) -> np.ndarray:
        return self.successes / np.maximum(self.episodes, 1)

    def summary(self, mask: Sequence[bool] | None = None) -> dict[str, float]:
        keep = np.ones(len(self.pairs), bool) if mask is None else np.asarray(mask, bool)
        episodes = self.episodes[keep].sum()
        if not keep.any():
            return {"avg_success_rate": None, "avg_return": None, "first_pick_accuracy": None, "pairs": 0}
        return {
            "avg_success_rate": float(self.success_rate[keep].mean()),
            "avg_return": float(self.returns[keep].sum() / episodes),
            "first_pick_accuracy": float(self.first_pick_correct[keep].sum() / max(self.picked[keep].sum(), 1)),
            "pairs": int(keep.sum()),
        }


def evaluate(
    policy: PolicyFn,
    pairs: Sequence[Pair],
    episodes_per_pair: int,
    *,
    seed: int = 0,
    max_batch: int = DEFAULT_MAX_BATCH,
    env_kwargs: dict | None = None,
    deterministic: bool | None = None,
) -> PairResults:
    """Runs ``episodes_per_pair`` episodes of every pair with randomized starts (seeded) and the
    given policy; steps all unfinished episodes of a chunk together.

    ``deterministic`` (None: the policy's own ``deterministic`` attribute, which `torch_policy`
    sets for greedy policies): the policy is a function of the observation alone, so an
    episode that comes back to an earlier state, observation included, repeats that loop until
    its step limit; it is then ended at once as the failure it would be, with the return of
    the repeated steps (`LoopDetector`). The results are those of running it out; a weak policy
    evaluates several times faster (up to near-ties of the logits that a different batch
    could break differently)."""
    if deterministic is None:
        deterministic = bool(getattr(policy, "deterministic", False))
    if episodes_per_pair < 1:
        raise ValueError(f"episodes_per_pair must be >= 1, got {episodes_per_pair}")
    pairs = [tuple(map(int, p)) for p in pairs]
    jobs = np.repeat(np.arange(len(pairs)), episodes_per_pair)
    results = PairResults(
        pairs=pairs,
        episodes=np.zeros(len(pairs), np.int64),
        successes=np.zeros(len(pairs), np.int64),
        returns=np.zeros(len(pairs)),
        first_pick_correct=np.zeros(len(pairs), np.int64),
        picked=np.zeros(len(pairs), np.int64),
    )
    for chunk_index, start in enumerate(range(0, len(jobs), max_batch)):
        chunk = jobs[start : start + max_batch]
        chunk_seed = seed + chunk_index * max_batch
        _run_chunk(policy, [pairs[j] for j in chunk], chunk, results, chunk_seed, env_kwargs or {}, deterministic)
    # The chunks' large arrays are free now; without this, a training run's periodic
    # evaluations grow its heap (rllib_synpo.heap).
    release_free_heap()
    return results


class LoopDetector:
    """Finds episodes of a deterministic policy that have entered a loop.

    What the policy sees is a function of the last ``frame_stack`` states (agent cell; the
    treasures and the task stage only change at a pick-up), and the next state a function of
    the state and the action. So when the last ``frame_stack`` agent cells since the latest
    treasure change repeat an earlier such window, the episode repeats the steps in between
    until it is truncated: no pick-up can happen on the way. Each window is coded as one integer
    (base `NUM_CELLS`); with a frame stack too long for 63 bits the detector stays off.
    """

    def __init__(self, env: BatchedGridWorld) -> None:
        spec, state = env.grid_spec, env.state
        size = len(state.agent)
        self.window, self.max_steps = spec.frame_stack, spec.max_steps
        self.enabled = NUM_CELLS**self.window < 2**62
        self.codes = np.full((size, self.max_steps + 1), -1, np.int64)  # window code after step t, -1: none
        self.rewards = np.zeros((size, self.max_steps + 1))  # reward of the step into state t
        self.cells = np.repeat(state.agent[:, None].astype(np.int64), self.window, axis=1)
        self.treasures = state.treasures.copy()
        self.since = np.zeros(size, np.int64)  # state index of the latest reset or treasure change
        self.place = NUM_CELLS ** np.arange(self.window, dtype=np.int64)
        self.t = 0

    def step(self, env: BatchedGridWorld, rows: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """After step ``t`` of the still running episodes ``rows``: those that are looping, and
        the return each would collect over its remaining steps."""
        self.t += 1
        t, state = self.t, env.state
        if not self.enabled or t >= self.max_steps or not len(rows):
            return rows[:0], np.zeros(0)
        changed = (state.treasures[rows] != self.treasures[rows]).any(axis=1)
        self.treasures[rows] = state.treasures[rows]
        self.since[rows[changed]] = t
        self.cells[rows] = np.concatenate([self.cells[rows, 1:], state.agent[rows, None]], axis=1)
        self.rewards[rows, t] = reward[rows]
        first_full = self.since[rows] + self.window - 1  # first state index with a whole window since
        code = np.where(t >= first_full, self.cells[rows] @ self.place, -1)
        earlier = (self.codes[rows, :t] == code[:, None]) & (np.arange(t) >= first_full[:, None]) & (code[:, None] >= 0)
        self.codes[rows, t] = code
        looping = earlier.any(axis=1)
        rows, start = rows[looping], earlier[looping].argmax(axis=1)
        remaining = []
        for row, s in zip(rows, start):  # few at a time
            cycle = self.rewards[row, s + 1 : t + 1]
            laps, rest = divmod(self.max_steps - t, len(cycle))
            remaining.append(laps * cycle.sum() + cycle[:rest].sum())
        return rows, np.asarray(remaining, float)


def _run_chunk(policy: PolicyFn, chunk_pairs, chunk, results: PairResults, seed: int, env_kwargs: dict, deterministic: bool) -> None:
    env = BatchedGridWorld(len(chunk), copy=False, **env_kwargs)
    obs, _ = env.reset(seed=seed, options={"pairs": chunk_pairs})
    loops = LoopDetector(env) if deterministic else None
    active = np.ones(len(chunk), bool)
    first_pick = np.zeros(len(chunk), np.int8)  # 0 none yet, 1 correct, -1 wrong
    actions = np.zeros(len(chunk), np.int64)

    def finish(rows: np.ndarray, success: np.ndarray, returns: np.ndarray) -> None:
        for row, won, value in zip(rows, success, returns):
            pair = chunk[row]
            results.episodes[pair] += 1
            results.successes[pair] += bool(won)
            results.returns[pair] += value
            results.first_pick_correct[pair] += first_pick[row] == 1
            results.picked[pair] += first_pick[row] != 0
        active[rows] = False

    while active.any():
        rows = np.flatnonzero(active)
        actions[:] = 0
        actions[rows] = policy({key: value[rows] for key, value in obs.items()})
        obs, reward, terminated, truncated, info = env.step(actions)
        correct_pick = reward > env.grid_spec.rewards.correct / 2
        wrong_pick = terminated & ~info["success"]
        undecided = active & (first_pick == 0)
        first_pick[undecided & correct_pick] = 1
        first_pick[undecided & wrong_pick & ~correct_pick] = -1
        done = np.flatnonzero(active & (terminated | truncated))
        finish(done, info["success"][done], info["episode_return"][done])
        if loops is not None:
            looping, remaining = loops.step(env, np.flatnonzero(active), reward)
            finish(looping, np.zeros(len(looping), bool), env.state.episode_return[looping] + remaining)


def torch_greedy_policy(network: torch.nn.Module, device: str | torch.device = "cpu", batch: int = 2048) -> PolicyFn:
    """Greedy actions of a `SynPoNetwork`-like module (forward(obs, env_id, task_id).logits)."""
    return torch_policy(network, sample=False, device=device, batch=batch)


def torch_policy(network: torch.nn.Module, *, sample: bool, seed: int = 0, device: str | torch.device = "cpu", batch: int = 2048) -> PolicyFn:
    """Actions of a `SynPoNetwork`-like module: the most likely (``sample=False``) or drawn from
    the policy's softmax with a seeded generator (``sample=True``)."""
    generator = torch.Generator(device=device).manual_seed(seed)

    @torch.no_grad()
    def act(obs: dict[str, np.ndarray]) -> np.ndarray:
        was_training = network.training
        network.eval()
        out = []
        for start in range(0, len(obs["obs"]), batch):
            part = {key: torch.as_tensor(value[start : start + batch], device=device) for key, value in obs.items()}
            logits = network(part["obs"], part["env_id"], part["task_id"]).logits
            if sample:
                actions = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(-1)
            else:
                actions = logits.argmax(-1)
            out.append(actions.cpu().numpy())
        network.train(was_training)
        return np.concatenate(out)

    act.deterministic = not sample  # greedy: `evaluate` may end looping episodes early
    return act
