"""Tables and figures of the reproduction studies, from the runs' stored results and curves:
mean ± std over seeds (numpy's population std, ddof 0), AvgSR in percent like the paper."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rllib_synpo.paper_numbers import PaperAvgSR

MISSING = "-"
PARTS = ("seen", "unseen")
# (CSV name, result key, scale): what a table row averages over seeds.
MEASURES = (
    ("seen_avgsr", "seen_avg_success_rate", 100.0),
    ("unseen_avgsr", "unseen_avg_success_rate", 100.0),
    ("seen_return", "seen_avg_return", 1.0),
    ("unseen_return", "unseen_avg_return", 1.0),
)


@dataclass(frozen=True)
class TableRow:
    """One method (or variant): our results over seeds and the paper's numbers, if any."""

    label: str
    results: tuple[dict, ...]
    paper: PaperAvgSR | None = None

    def stat(self, key: str, scale: float) -> tuple[float, float | None] | None:
        """(mean, std) over seeds; the std is None for a single seed (not a spread of 0)."""
        values = [r["final"][key] for r in self.results if r["final"].get(key) is not None]
        if not values:
            return None
        values = scale * np.asarray(values, float)
        return float(values.mean()), (float(values.std()) if len(values) > 1 else None)


@dataclass(frozen=True)
class Section:
    title: str
    rows: tuple[TableRow, ...]


def mean_std(stat: tuple[float, float | None] | None, digits: int = 1) -> str:
    if stat is None:
        return MISSING
    mean, std = stat
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _paper_cell(paper: PaperAvgSR | None, part: str) -> str:
    if paper is None:
        return MISSING
    return mean_std((getattr(paper, part), getattr(paper, f"{part}_std")))


def markdown_table(section: Section) -> list[str]:
    """Our AvgSR beside the paper's, then our average returns (the paper has no table of them)."""
    lines = [
        f"## {section.title}",
        "",
        "| method | seeds | seen AvgSR % | paper seen AvgSR % | unseen AvgSR % | paper unseen AvgSR % "
        "| seen avg return | unseen avg return |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in section.rows:
        stats = {name: row.stat(key, scale) for name, key, scale in MEASURES}
        lines.append(
            f"| {row.label} | {len(row.results)} | {mean_std(stats['seen_avgsr'])} | {_paper_cell(row.paper, 'seen')} "
            f"| {mean_std(stats['unseen_avgsr'])} | {_paper_cell(row.paper, 'unseen')} "
            f"| {mean_std(stats['seen_return'], 2)} | {mean_std(stats['unseen_return'], 2)} |"
        )
    return [*lines, ""]


def csv_rows(section: Section) -> list[dict]:
    rows = []
    for row in section.rows:
        out = {"section": section.title, "method": row.label, "seeds": len(row.results)}
        for name, key, scale in MEASURES:
            stat = row.stat(key, scale)
            mean, std = stat if stat else ("", "")
            out[f"{name}_mean"], out[f"{name}_std"] = mean, "" if std is None else std
            if name.endswith("avgsr"):
                part = name.split("_")[0]
                out[f"paper_{name}_mean"] = getattr(row.paper, part) if row.paper else ""
                out[f"paper_{name}_std"] = getattr(row.paper, f"{part}_std") if row.paper else ""
        rows.append(out)
    return rows


def write_tables(title: str, sections: Sequence[Section], setup: Sequence[str], stem: Path) -> tuple[Path, Path]:
    """``stem``.md (title, one table per section, then the set-up lines) and ``stem``.csv."""
    md = [f"# {title}", ""]
    for section in sections:
        md += markdown_table(section)
    md += ["## Set-up", "", *setup, ""]
    md_path, csv_path = stem.with_suffix(".md"), stem.with_suffix(".csv")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(md))
    rows = [r for section in sections for r in csv_rows(section)]
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return md_path, csv_path


def load_curves(results: Sequence[dict], folder: Path) -> list[pd.DataFrame]:
    return [pd.read_csv(folder / f"{r['name']}.csv") for r in results]


def band(curves: Sequence[pd.DataFrame], column: str, scale: float = 100.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(minutes, mean, std) over seeds, aligned by evaluation index (the seeds' evaluations
    happen at nearly the same training minutes); truncated to the shortest curve."""
    length = min(len(c) for c in curves)
    minutes = np.mean([c["train_minutes"].to_numpy()[:length] for c in curves], axis=0)
    values = scale * np.array([c[column].to_numpy(float)[:length] for c in curves])
    return minutes, values.mean(0), values.std(0)


def plot_bands(groups: dict[str, Sequence[pd.DataFrame]], path: Path, title: str) -> None:
    """AvgSR over training, seen and unseen side by side, mean ± std band over seeds per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, part in zip(axes, PARTS):
        for label, curves in groups.items():
            if not curves:
                continue
            minutes, mean, std = band(curves, f"{part}_avg_success_rate")
            (line,) = ax.plot(minutes, mean, marker="o", ms=3, label=f"{label} ({len(curves)} seeds)")
            ax.fill_between(minutes, mean - std, mean + std, color=line.get_color(), alpha=0.2)
        ax.set(xlabel="training minutes", title=f"{part} pairs", ylim=(0, 100))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("AvgSR % (mean ± std over seeds)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_ratio(rows: Sequence[tuple[float, TableRow]], path: Path, title: str) -> None:
    """Final AvgSR against the fraction of seen pairs (mean ± std over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    fractions = [100 * f for f, _ in rows]
    for part in PARTS:
        stats = [row.stat(f"{part}_avg_success_rate", 100.0) or (np.nan, np.nan) for _, row in rows]
        ax.errorbar(fractions, [s[0] for s in stats], yerr=[s[1] or 0.0 for s in stats], marker="o", capsize=3, label=f"{part} AvgSR")
    ax.set(xlabel="seen pairs (% of 10 x 10)", ylabel="AvgSR %", title=title, ylim=(0, 100))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
