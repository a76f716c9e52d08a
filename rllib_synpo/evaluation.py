"""Batched greedy evaluation on the gridworld: success rate, return and first-pick accuracy per
(environment, task) pair. Plain numpy/torch; any policy given as a function of observations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld

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
) -> PairResults:
    """Runs ``episodes_per_pair`` episodes of every pair with randomized starts (seeded) and the
    given policy; steps all unfinished episodes of a chunk together."""
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
        _run_chunk(policy, [pairs[j] for j in chunk], chunk, results, seed + chunk_index * max_batch, env_kwargs or {})
    return results


def _run_chunk(policy: PolicyFn, chunk_pairs, chunk, results: PairResults, seed: int, env_kwargs: dict) -> None:
    env = BatchedGridWorld(len(chunk), copy=False, **env_kwargs)
    obs, _ = env.reset(seed=seed, options={"pairs": chunk_pairs})
    active = np.ones(len(chunk), bool)
    first_pick = np.zeros(len(chunk), np.int8)  # 0 none yet, 1 correct, -1 wrong
    actions = np.zeros(len(chunk), np.int64)
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
        done = active & (terminated | truncated)
        for row in np.flatnonzero(done):
            pair = chunk[row]
            results.episodes[pair] += 1
            results.successes[pair] += bool(info["success"][row])
            results.returns[pair] += info["episode_return"][row]
            results.first_pick_correct[pair] += first_pick[row] == 1
            results.picked[pair] += first_pick[row] != 0
        active &= ~done


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

    return act
