"""``rllib evaluate``: success-rate matrices of SynPo checkpoints, without Ray.

For one checkpoint, or the newest checkpoint of each trial of an experiment folder, writes
``success_matrix.csv`` (E x T success rate, NaN where not evaluated), ``summary.json`` (AvgSR,
average return and first-pick accuracy on seen and unseen pairs) and ``heatmap.png`` (seen
pairs boxed, as in the paper's figures).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from synpo_envs.splits import Split

from rllib_synpo.checkpoint_files import (
    MATRIX_FILE,
    META_FILE,
    MODULE_COMPONENT,
    SUMMARY_FILE,
    TRIAL_EVALUATION,
    TRIAL_PARAMS,
    read_meta,
)
from rllib_synpo.evaluation import PairResults, evaluate, torch_greedy_policy, torch_policy

PAIR_SETS = ("seen", "unseen", "all")
__all__ = ["TRIAL_EVALUATION", "evaluate_checkpoint", "find_checkpoint", "greedy_summary", "trial_folders"]


class CheckpointError(ValueError):
    """A path that is not a SynPo checkpoint."""


def find_checkpoint(path: str | Path) -> Path:
    """``path`` itself when it is a SynPo checkpoint, else the newest checkpoint under it (an
    experiment or trial folder of ``rllib train file``); absolute, because RLlib reads a
    relative checkpoint path as a URI and fails."""
    path = Path(path).expanduser().resolve()
    if (path / META_FILE).is_file():
        return path
    found = sorted((p.parent for p in path.glob(f"**/{META_FILE}")), key=lambda p: (p / META_FILE).stat().st_mtime)
    if not found:
        raise CheckpointError(f"{path} is not a SynPo checkpoint and holds none (no {META_FILE} under it)")
    return found[-1]


def trial_folders(path: str | Path) -> list[Path]:
    """The Ray Tune trial folders at or under ``path`` (folders holding `TRIAL_PARAMS`), sorted."""
    path = Path(path).expanduser().resolve()
    if (path / TRIAL_PARAMS).is_file():
        return [path]
    return sorted(p.parent for p in path.glob(f"*/{TRIAL_PARAMS}"))


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
    return summary.get("checkpoint") == str(checkpoint) and all(summary.get(k) == v for k, v in settings.items())


def read_gridworld_checkpoint(checkpoint: str | Path):
    """(checkpoint folder, RLModule, split, gridworld kwargs) of a gridworld SynPo checkpoint
    (or the newest one under a folder); a THOR checkpoint is refused by name."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = find_checkpoint(checkpoint)
    meta = read_meta(path)
    if meta.get("env", "synpo_pairs") != "synpo_pairs":
        raise CheckpointError(f"{path} was trained on {meta['env']!r}; this command evaluates gridworld (synpo_pairs) checkpoints")
    module = RLModule.from_checkpoint(path / MODULE_COMPONENT)
    return path, module, Split.from_dict(meta["split"], source=str(path / META_FILE)), dict(meta.get("gridworld", {}))


def load_checkpoint(checkpoint: str | Path):
    """(network, split, gridworld kwargs) from an algorithm checkpoint folder."""
    _, module, split, gridworld = read_gridworld_checkpoint(checkpoint)
    return module.net, split, gridworld


def select_pairs(split: Split, which: str) -> list[tuple[int, int]]:
    if which not in PAIR_SETS:
        raise ValueError(f"--pairs {which!r}; expected one of {PAIR_SETS}")
    return list({"seen": split.seen, "unseen": split.unseen, "all": split.all_pairs}[which])


def summarize(results: PairResults, split: Split) -> dict:
    seen = [split.is_seen(p) for p in results.pairs]
    return {
        "seen": results.summary(seen),
        "unseen": results.summary([not s for s in seen]),
        "episodes_per_pair": int(results.episodes.max()) if len(results.episodes) else 0,
    }


def flat_summary(results: PairResults, split: Split) -> dict[str, float]:
    """`summarize` as one level of ``seen_...``/``unseen_...`` keys (RLlib results, CSV rows)."""
    summary = summarize(results, split)
    return {f"{part}_{key}": value for part in ("seen", "unseen") for key, value in summary[part].items()}


def greedy_summary(net, split: Split, episodes_per_pair: int, *, seed: int, gridworld: dict) -> dict[str, float]:
    """`flat_summary` of ``net``'s greedy policy on every pair of ``split`` (the periodic
    evaluation of `SynPo` and `SynPoPPO`, under RLlib's ``evaluation/``)."""
    results = evaluate(torch_greedy_policy(net), split.all_pairs, episodes_per_pair, seed=seed, env_kwargs=gridworld)
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


def evaluate_checkpoint(checkpoint: str | Path, *, episodes_per_pair: int = 100, pairs: str = "all", out: str | Path = "evaluation", seed: int = 0, sample: bool = False) -> dict:
    import pandas as pd

    net, split, gridworld = load_checkpoint(checkpoint)
    start = time.perf_counter()
    policy = torch_policy(net, sample=sample, seed=seed)
    results = evaluate(policy, select_pairs(split, pairs), episodes_per_pair, seed=seed, env_kwargs=gridworld)
    summary = summarize(results, split) | {
        "policy": "sampled" if sample else "greedy", "pair_set": pairs, "checkpoint": str(find_checkpoint(checkpoint)),
        "seconds": time.perf_counter() - start, "seed": seed,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    matrix = success_matrix(results, split)
    pd.DataFrame(matrix, index=pd.Index(range(split.num_envs), name="env_id"), columns=[f"task_{t}" for t in range(split.num_tasks)]).to_csv(out / MATRIX_FILE)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1))
    title = ", ".join(
        f"{part} AvgSR {100 * summary[part]['avg_success_rate']:.1f}%" for part in ("seen", "unseen") if summary[part]["pairs"]
    )
    write_heatmap(matrix, split, out / "heatmap.png", title)
    return summary
