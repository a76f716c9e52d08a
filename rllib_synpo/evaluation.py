"""Evaluation on the gridworld: success rate, return and first-pick accuracy per (environment,
task) pair, from batched episodes of any policy given as a function of observations (plain
numpy/torch), and the evaluation of a checkpoint that ``rllib evaluate`` writes:
``success_matrix.csv`` (E x T success rate, NaN where not evaluated), ``summary.json`` (AvgSR,
average return and first-pick accuracy on seen and unseen pairs, and on the unseen pairs split by
whether a seen task of their maze starts with their first colour, `SUMMARY_PARTS`) and
``heatmap.png`` (seen pairs boxed, as in the paper's figures)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import NUM_CELLS
from synpo_envs.splits import PAIR_SUBSETS, Split, pair_subsets

from rllib_synpo.checkpoint import HEATMAP_FILE, MATRIX_FILE, SUMMARY_FILE, find_checkpoint, load_checkpoint
from rllib_synpo.utils.denormals import flush_denormals_where_wanted
from rllib_synpo.utils.heap import release_free_heap

Pair = tuple[int, int]
PolicyFn = Callable[[dict[str, np.ndarray]], np.ndarray]
PAIR_SETS = ("seen", "unseen", "all")
SUMMARY_PARTS = PAIR_SUBSETS  # the summary's pair sets (`synpo_envs.splits.pair_subsets`)
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
            "first_pick_accuracy": float(
                self.first_pick_correct[keep].sum() / max(self.picked[keep].sum(), 1)
            ),
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
    flush_denormals_where_wanted()
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
        _run_chunk(
            policy, [pairs[j] for j in chunk], chunk, results, chunk_seed, env_kwargs or {}, deterministic
        )
    # The chunks' large arrays are free now; without this, a training run's periodic
    # evaluations grow its heap (rllib_synpo.utils.heap).
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

    def step(
        self, env: BatchedGridWorld, rows: np.ndarray, reward: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
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
        earlier = (
            (self.codes[rows, :t] == code[:, None])
            & (np.arange(t) >= first_full[:, None])
            & (code[:, None] >= 0)
        )
        self.codes[rows, t] = code
        looping = earlier.any(axis=1)
        rows, start = rows[looping], earlier[looping].argmax(axis=1)
        remaining = []
        for row, s in zip(rows, start):  # few at a time
            cycle = self.rewards[row, s + 1 : t + 1]
            laps, rest = divmod(self.max_steps - t, len(cycle))
            remaining.append(laps * cycle.sum() + cycle[:rest].sum())
        return rows, np.asarray(remaining, float)


def _run_chunk(
    policy: PolicyFn,
    chunk_pairs: list[Pair],
    chunk: np.ndarray,
    results: PairResults,
    seed: int,
    env_kwargs: dict,
    deterministic: bool,
) -> None:
    """One episode per slot, all slots stepped together until each has ended: slot i plays
    ``chunk_pairs[i]``, whose index in ``results`` is ``chunk[i]``; adds the outcomes there."""
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


def torch_greedy_policy(
    network: torch.nn.Module, device: str | torch.device = "cpu", batch: int = 2048
) -> PolicyFn:
    """Greedy actions of a `SynPoNetwork`-like module (forward(obs, env_id, task_id).logits)."""
    return torch_policy(network, sample=False, device=device, batch=batch)


def torch_policy(
    network: torch.nn.Module,
    *,
    sample: bool,
    seed: int = 0,
    device: str | torch.device = "cpu",
    batch: int = 2048,
) -> PolicyFn:
    """Actions of a `SynPoNetwork`-like module: the most likely (``sample=False``) or drawn from
    the policy's softmax with a seeded generator (``sample=True``)."""
    generator = torch.Generator(device=device).manual_seed(seed)

    @torch.no_grad()
    def act(obs: dict[str, np.ndarray]) -> np.ndarray:
        was_training = network.training
        network.eval()
        out = []
        for start in range(0, len(obs["obs"]), batch):
            part = {
                key: torch.as_tensor(value[start : start + batch], device=device)
                for key, value in obs.items()
            }
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


def is_evaluated(out: Path, checkpoint: Path, settings: dict) -> bool:
    """Whether ``out`` already holds an evaluation of ``checkpoint`` with these ``settings``
    (episodes per pair, pairs, seed, policy), so a study's evaluation can resume."""
    summary_path = out / SUMMARY_FILE
    if not summary_path.is_file():
        return False
    try:
        summary = json.loads(summary_path.read_text())
    except json.JSONDecodeError:
        return False
    return summary.get("checkpoint") == str(checkpoint) and all(
        summary.get(k) == v for k, v in settings.items()
    )


def select_pairs(split: Split, which: str) -> list[tuple[int, int]]:
    if which not in PAIR_SETS:
        raise ValueError(f"--pairs {which!r}; expected one of {PAIR_SETS}")
    return list({"seen": split.seen, "unseen": split.unseen, "all": split.all_pairs}[which])


def summarize(results: PairResults, split: Split) -> dict:
    """The results' `PairResults.summary` on each of `SUMMARY_PARTS`, and the episodes per pair."""
    rows = tuple(np.array(results.pairs, dtype=np.int64).reshape(-1, 2).T)
    masks = pair_subsets(split.seen_mask())
    return {part: results.summary(masks[part][rows]) for part in SUMMARY_PARTS} | {
        "episodes_per_pair": int(results.episodes.max()) if len(results.episodes) else 0,
    }


def flat_summary(results: PairResults, split: Split) -> dict[str, float]:
    """`summarize` as one level of ``seen_...``/``unseen_...`` keys (RLlib results, CSV rows)."""
    summary = summarize(results, split)
    return {f"{part}_{key}": value for part in SUMMARY_PARTS for key, value in summary[part].items()}


def greedy_summary(
    net, split: Split, episodes_per_pair: int, *, seed: int, gridworld: dict
) -> dict[str, float]:
    """`flat_summary` of ``net``'s greedy policy on every pair of ``split`` (the periodic
    evaluation of `SynPo` and `SynPoPPO`, under RLlib's ``evaluation/``)."""
    results = evaluate(
        torch_greedy_policy(net), split.all_pairs, episodes_per_pair, seed=seed, env_kwargs=gridworld
    )
    return flat_summary(results, split)


def success_matrix(results: PairResults, split: Split) -> np.ndarray:
    matrix = np.full((split.num_envs, split.num_tasks), np.nan)
    for (env_id, task_id), rate in zip(results.pairs, results.success_rate):
        matrix[env_id, task_id] = rate
    return matrix


def write_heatmap(matrix: np.ndarray, split: Split, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(7, 6))
    image = ax.imshow(100 * matrix, vmin=0, vmax=100, cmap="viridis")
    for env_id, task_id in split.seen:
        ax.add_patch(Rectangle((task_id - 0.5, env_id - 0.5), 1, 1, fill=False, edgecolor="white", lw=1.2))
    ax.set(xlabel="task", ylabel="environment", title=title)
    fig.colorbar(image, ax=ax, label="success rate (%), seen pairs boxed")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def evaluate_checkpoint(
    checkpoint: str | Path,
    *,
    episodes_per_pair: int = 100,
    pairs: str = "all",
    out: str | Path = "evaluation",
    seed: int = 0,
    sample: bool = False,
) -> dict:
    import pandas as pd

    flush_denormals_where_wanted()  # before loading starts torch's threads
    net, split, gridworld = load_checkpoint(checkpoint)
    start = time.perf_counter()
    policy = torch_policy(net, sample=sample, seed=seed)
    results = evaluate(policy, select_pairs(split, pairs), episodes_per_pair, seed=seed, env_kwargs=gridworld)
    summary = summarize(results, split) | {
        "policy": "sampled" if sample else "greedy",
        "pair_set": pairs,
        "checkpoint": str(find_checkpoint(checkpoint)),
        "seconds": time.perf_counter() - start,
        "seed": seed,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    matrix = success_matrix(results, split)
    pd.DataFrame(
        matrix,
        index=pd.Index(range(split.num_envs), name="env_id"),
        columns=[f"task_{t}" for t in range(split.num_tasks)],
    ).to_csv(out / MATRIX_FILE)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1))
    title = ", ".join(
        f"{part} AvgSR {100 * summary[part]['avg_success_rate']:.1f}%"
        for part in ("seen", "unseen")
        if summary[part]["pairs"]
    )
    write_heatmap(matrix, split, out / HEATMAP_FILE, title)
    return summary
