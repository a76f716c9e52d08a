"""Training for a wall-clock budget with periodic greedy evaluation: the loop shared by
``benchmarks/learning_speed.py`` and ``python -m rllib_synpo.reproduce``.

Training time excludes evaluation time. Every ``eval_minutes`` of training the greedy policy
runs ``eval_episodes`` episodes on every evaluated pair; when the budget is spent,
``final_episodes`` (100 in the paper). The curve is written as CSV and PNG after every
evaluation, and the trained weights (``.pt``) at the end.

The project's best recipe so far (results/learning_efficiency.md), `best_recipe`: relabelled
seen tasks, the compact encoder with BatchNorm and a 1024-d state feature, the paper's loss
weights, unit-length embeddings into the coefficient functions and Adam weight decay 1e-4 (the
authors' code options ``--norm`` and ``--wd``), the product coefficient function
f(e_task) * g(e_env) (not the paper's), and a cosine learning-rate schedule over the budget
(`Budget` with ``lr_schedule="cosine"``); as benchmark flags: ``--relabel --feature-dim 1024
--lr-schedule cosine --normalize-embeddings --weight-decay 1e-4 --batch-norm --coefficients product``.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from synpo_envs.splits import Split

from rllib_synpo.direct import DirectConfig, DirectImitation
from rllib_synpo.evaluate import flat_summary
from rllib_synpo.evaluation import evaluate, torch_greedy_policy
from rllib_synpo.networks.factory import COEFFICIENT_NETWORKS

Pair = tuple[int, int]
LR_SCHEDULES = ("constant", "cosine")
DEFAULT_LR_FINAL = 0.02  # cosine: final learning rate as a fraction of the initial one
BEST_FEATURE_DIM = 1024
BEST_WEIGHT_DECAY = 1e-4  # the authors' --wd (findings 14-15, 17)
# SynPo and MTL only: the authors' --norm, and the product coefficient function (findings 25-26).
BEST_COEFFICIENT_OPTIONS = {"normalize_embeddings": True, "coefficient_function": "product"}
BEST_ENCODER_OPTIONS = {"batch_norm": True}  # finding 22; the compact encoder's option
EVAL_SEED_BASE = 10_000  # evaluation episodes are seeded 10,000 + updates so far
RECENT_STEPS = 200  # training statistics of a row: the mean over the last updates
HEARTBEAT_SECONDS = 60.0  # training seconds between `heartbeat` calls
TASK_ACCURACY_STATES = 8192  # stored states scored for every task of their env at each evaluation


def best_recipe(**overrides) -> DirectConfig:
    """The `DirectConfig` of the project's best recipe (with ``Budget(lr_schedule="cosine")``);
    networks without coefficient functions (the MLP, ModuleNet, SF baselines) get the rest of it,
    and another encoder than the compact one gets none of the compact encoder's options."""
    recipe = {"relabel_seen_tasks": True, "feature_dim": BEST_FEATURE_DIM, "weight_decay": BEST_WEIGHT_DECAY}
    if overrides.get("network", DirectConfig.network) in COEFFICIENT_NETWORKS:
        recipe["network_kwargs"] = dict(BEST_COEFFICIENT_OPTIONS)
    if overrides.get("encoder", DirectConfig.encoder) == DirectConfig.encoder:
        recipe["encoder_kwargs"] = dict(BEST_ENCODER_OPTIONS)
    return DirectConfig(**{**recipe, **overrides})


def scheduled_lr(lr: float, schedule: str, lr_final: float, progress: float) -> float:
    """The learning rate after ``progress`` (0..1, clipped above) of the training budget:
    ``lr`` throughout ("constant") or a cosine decay from ``lr`` to ``lr_final * lr``."""
    if schedule == "constant":
        return lr
    if schedule != "cosine":
        raise ValueError(f"unknown learning-rate schedule {schedule!r}; expected one of {LR_SCHEDULES}")
    cosine = 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
    return lr * (lr_final + (1 - lr_final) * cosine)


@dataclass(frozen=True)
class Budget:
    """How long to train and how to evaluate along the way."""

    minutes: float
    eval_minutes: float
    eval_episodes: int = 2
    final_episodes: int = 100
    lr_schedule: str = "constant"
    lr_final: float = DEFAULT_LR_FINAL

    def __post_init__(self) -> None:
        if not self.minutes >= 0:
            raise ValueError(f"minutes must be >= 0, got {self.minutes!r}")
        if not self.eval_minutes > 0:
            raise ValueError(f"eval_minutes must be > 0, got {self.eval_minutes!r}")
        if self.eval_episodes < 1 or self.final_episodes < 1:
            raise ValueError(f"episodes per pair must be >= 1, got {self.eval_episodes} and {self.final_episodes}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"unknown learning-rate schedule {self.lr_schedule!r}; expected one of {LR_SCHEDULES}")

    def with_minutes(self, minutes: float) -> Budget:
        return replace(self, minutes=minutes)


def percent(value: float | None) -> float:
    """100 x a rate; NaN where there is none (no pair of that kind was evaluated)."""
    return float("nan") if value is None else 100 * value


def print_row(row: dict) -> None:
    """One line per evaluation (the benchmark's progress output)."""
    seconds = row["train_minutes"] * 60
    print(
        f"[{row['train_minutes']:6.1f} min] updates {row['updates']:7d} states/s "
        f"{row['states'] / max(seconds, 1e-9):7.0f} acc {row.get('accuracy', float('nan')):.3f} "
        f"seen {percent(row['seen_avg_success_rate']):5.1f}% unseen {percent(row['unseen_avg_success_rate']):5.1f}% "
        f"first-pick {percent(row['seen_first_pick_accuracy']):5.1f}% step acc. seen/unseen tasks "
        f"{percent(row['seen_task_accuracy']):5.1f}/{percent(row['unseen_task_accuracy']):5.1f}% (eval {row['eval_seconds']:.0f} s, "
        f"{row['episodes_per_pair']}/pair)",
        flush=True,
    )


def evaluate_greedy(trainer: DirectImitation, split: Split, pairs: Sequence[Pair], episodes: int, seed: int) -> dict[str, float]:
    """Seen/unseen summary (`flat_summary`) of the trainer's greedy policy on ``pairs``."""
    results = evaluate(torch_greedy_policy(trainer.net, device=trainer.device), pairs, episodes, seed=seed, env_kwargs=trainer.config.env_kwargs)
    return flat_summary(results, split)


def write_curve(rows: list[dict], out: Path) -> None:
    """``out``.csv (one row per evaluation) and ``out``.png."""
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[-1]))
        writer.writeheader()
        writer.writerows(rows)
    plot_curve(rows, out.with_suffix(".png"), out.name)


def plot_curve(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    minutes = [r["train_minutes"] for r in rows]
    for name in ("seen", "unseen"):
        ax.plot(minutes, [percent(r[f"{name}_avg_success_rate"]) for r in rows], marker="o", label=f"{name} AvgSR")
    ax.plot(minutes, [percent(r["seen_first_pick_accuracy"]) for r in rows], ls="--", label="first-pick acc. (seen)")
    for name in ("seen", "unseen"):
        ax.plot(minutes, [percent(r[f"{name}_task_accuracy"]) for r in rows], ls=":", label=f"step acc. ({name} tasks)")
    ax.set(xlabel="training minutes", ylabel="%", title=title, ylim=(0, 100))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def train_for_budget(
    trainer: DirectImitation,
    budget: Budget,
    split: Split,
    eval_pairs: Sequence[Pair],
    out: str | Path,
    *,
    report: Callable[[dict], None] = print_row,
    heartbeat: Callable[[float], None] | None = None,
) -> list[dict]:
    """Trains ``trainer`` for ``budget.minutes`` of training time, evaluating on
    ``eval_pairs`` (seen/unseen as in ``split``); returns the curve's rows (the last is the
    final evaluation). ``out`` is the output prefix (.csv, .png, .pt); ``report`` gets each
    row, ``heartbeat`` the training seconds every `HEARTBEAT_SECONDS`."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    total = budget.minutes * 60
    rows: list[dict] = []
    recent: list[dict] = []
    train_seconds, next_eval, next_beat = 0.0, budget.eval_minutes * 60, HEARTBEAT_SECONDS
    while True:
        done = train_seconds >= total
        if train_seconds >= next_eval or done:
            rows.append(_evaluation_row(trainer, budget, split, eval_pairs, train_seconds, recent, final=done))
            recent = []
            report(rows[-1])
            write_curve(rows, out)
            next_eval += budget.eval_minutes * 60
            if done:
                weights = {name: value.cpu() for name, value in trainer.net.state_dict().items()}
                torch.save(weights, out.with_suffix(".pt"))  # for re-evaluation, on any machine
                return rows
        if heartbeat is not None and train_seconds >= next_beat:
            heartbeat(train_seconds)
            next_beat += HEARTBEAT_SECONDS
        trainer.set_lr(scheduled_lr(trainer.config.lr, budget.lr_schedule, budget.lr_final, train_seconds / total))
        start = time.perf_counter()
        recent.append(trainer.step())
        train_seconds += time.perf_counter() - start
        if len(recent) > RECENT_STEPS:
            recent.pop(0)


def _evaluation_row(trainer, budget: Budget, split: Split, pairs, train_seconds: float, recent: list[dict], *, final: bool) -> dict:
    episodes = budget.final_episodes if final else budget.eval_episodes
    row = {"train_minutes": train_seconds / 60, "updates": trainer.updates, "states": trainer.states_trained}
    row.update({k: float(np.mean([r[k] for r in recent])) for k in recent[0]} if recent else {})
    start = time.perf_counter()
    row.update(evaluate_greedy(trainer, split, pairs, episodes, seed=EVAL_SEED_BASE + trainer.updates))
    row.update(trainer.task_accuracy(TASK_ACCURACY_STATES, np.random.default_rng(EVAL_SEED_BASE + trainer.updates)))
    row["eval_seconds"] = time.perf_counter() - start
    row["episodes_per_pair"] = episodes
    return row
