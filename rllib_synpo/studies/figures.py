"""The study's figures: learning curves (mean ± std band over seeds) and mean success matrices.
matplotlib loads when a figure is drawn, not on import."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rllib_synpo.checkpoint import MATRIX_FILE
from rllib_synpo.studies.study import Group
from rllib_synpo.studies.trials import EVAL_COLUMNS, PARTS, TIME_COLUMN, EvaluatedTrial, ReportError

MAX_HEATMAPS = 12
HEATMAP_COLUMNS = 4


def evaluation_rows(trial: EvaluatedTrial) -> pd.DataFrame | None:
    """The result rows with a periodic evaluation (time and both AvgSRs), None if none."""
    progress = trial.progress
    if progress is None or TIME_COLUMN not in progress or EVAL_COLUMNS["seen"] not in progress:
        return None
    rows = progress[progress[EVAL_COLUMNS["seen"]].notna()]
    return rows if len(rows) else None


def curve_band(curves: Sequence[pd.DataFrame], part: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(minutes, mean AvgSR %, sample std or None for one seed) over seeds, aligned by evaluation
    index (seeds evaluate at nearly the same minutes) and truncated to the shortest curve."""
    length = min(len(c) for c in curves)
    minutes = np.mean([c[TIME_COLUMN].to_numpy(float)[:length] for c in curves], axis=0) / 60.0
    column = EVAL_COLUMNS[part]
    values = 100.0 * np.array(
        [c[column].to_numpy(float)[:length] if column in c else np.full(length, np.nan) for c in curves]
    )
    std = values.std(axis=0, ddof=1) if len(curves) > 1 else None
    return minutes, values.mean(axis=0), std


def plot_curves(groups: Sequence[Group], path: Path, title: str) -> Path:
    """Seen and unseen AvgSR over training minutes, one line per group, mean ± std band."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    plotted = False
    for ax, part in zip(axes, PARTS):
        for group in groups:
            curves = [rows for rows in map(evaluation_rows, group.trials) if rows is not None]
            if not curves:
                continue
            minutes, mean, std = curve_band(curves, part)
            if np.isnan(mean).all():
                continue
            (line,) = ax.plot(minutes, mean, marker="o", ms=3, label=f"{group.label} ({len(curves)} seeds)")
            if std is not None:
                ax.fill_between(minutes, mean - std, mean + std, color=line.get_color(), alpha=0.2)
            plotted = True
        ax.set(xlabel="training minutes", title=f"{part} pairs", ylim=(0, 100))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("AvgSR % (mean ± std over seeds)")
    if plotted:
        axes[0].legend(fontsize=8)
    else:
        axes[0].text(0.5, 0.5, "no periodic evaluations", ha="center", transform=axes[0].transAxes)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def mean_matrix(matrices: Sequence[np.ndarray], group: Group) -> np.ndarray:
    """Pair-wise mean success rate over the trials' matrices, NaN where none evaluated the pair."""
    shapes = {m.shape for m in matrices}
    if len(shapes) > 1:
        raise ReportError(f"group {group.label}: success matrices of shapes {sorted(shapes)}; expected one")
    stack = np.stack(matrices)
    counts = np.isfinite(stack).sum(axis=0)
    totals = np.nansum(stack, axis=0)
    return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def plot_heatmaps(groups: Sequence[Group], path: Path, title: str) -> Path:
    """Each group's mean success matrix (%), seen pairs boxed when the checkpoint names them."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    shown = [(g, [t.matrix for t in g.trials if t.matrix is not None]) for g in groups]
    shown = [(g, matrices) for g, matrices in shown if matrices][:MAX_HEATMAPS]
    columns = max(1, min(len(shown), HEATMAP_COLUMNS))
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False, layout="constrained"
    )
    image = None
    for ax, (group, matrices) in zip(axes.flat, shown):
        image = ax.imshow(100 * mean_matrix(matrices, group), vmin=0, vmax=100, cmap="viridis")
        mask = next((t.seen_mask for t in group.trials if t.seen_mask is not None), None)
        if mask is not None and mask.shape == matrices[0].shape:
            for env_id, task_id in zip(*np.nonzero(mask)):
                box = Rectangle((task_id - 0.5, env_id - 0.5), 1, 1, fill=False, edgecolor="white", lw=0.8)
                ax.add_patch(box)
        ax.set(xlabel="task", ylabel="environment", title=f"{group.label} ({len(matrices)} seeds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.title.set_fontsize(9)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, label="success rate % (seen pairs boxed)")
    else:
        axes[0, 0].text(0.5, 0.5, f"no {MATRIX_FILE}", ha="center", transform=axes[0, 0].transAxes)
    more = len([g for g in groups if any(t.matrix is not None for t in g.trials)]) - len(shown)
    fig.suptitle(title + (f" (first {MAX_HEATMAPS} groups, {more} more)" if more > 0 else ""))
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
