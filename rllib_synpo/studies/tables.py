"""The study's table, as markdown (with its set-up) and CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rllib_synpo.studies.study import Group, PaperRow, Study, format_value, seed_order
from rllib_synpo.studies.trials import PARTS, UNSEEN_SUBSETS, EvaluatedTrial

MISSING = "-"
NO_STATE = "none; trials found from their folders, all counted as finished"


def format_mean_std(stat: tuple[float, float | None] | None, digits: int = 1) -> str:
    if stat is None:
        return MISSING
    mean, std = stat
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def format_number(value: float | None, spec: str) -> str:
    return MISSING if value is None else format(value, spec)


def format_seeds(seeds: Sequence[Any], separator: str = ", ") -> str:
    return separator.join(MISSING if s is None else format_value(s) for s in seeds)


def paper_cell(paper: PaperRow | None, part: str) -> str:
    if paper is None:
        return MISSING
    return format_mean_std((getattr(paper.numbers, part), getattr(paper.numbers, f"{part}_std")))


def markdown_table(groups: Sequence[Group]) -> list[str]:
    lines = [
        (
            "| group | trials | seeds | seen AvgSR % | paper seen AvgSR % | unseen AvgSR % "
            "| paper unseen AvgSR % | paper row | states trained | training minutes "
            "| unseen, first colour uncovered AvgSR % | unseen, first colour covered AvgSR % |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for group in groups:
        cells = [
            group.label,
            str(len(group.trials)),
            format_seeds(group.seeds),
            format_mean_std(group.avgsr("seen")),
            paper_cell(group.paper, "seen"),
            format_mean_std(group.avgsr("unseen")),
            paper_cell(group.paper, "unseen"),
            group.paper.name if group.paper else MISSING,
            format_number(group.states_trained_mean(), ",.0f"),
            format_number(group.train_minutes_mean(), ".1f"),
            *(format_mean_std(group.avgsr(part)) for part in UNSEEN_SUBSETS),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def distinct_counts(values: Iterable[Any]) -> str:
    """ "100" when every value is 100, else "100 (4 trials), 2 (1 trial)"."""
    counts: dict[str, int] = {}
    for value in values:
        text = MISSING if value is None else format_value(value)
        counts[text] = counts.get(text, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{text} ({n} trial{'s' if n > 1 else ''})" for text, n in counts.items())


def shown_path(path: Path) -> str:
    """The path relative to the working directory when it lies under it (so a committed report
    names no machine's absolute paths), else the path itself."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def summary_values(evaluated: Sequence[EvaluatedTrial], key: str) -> str:
    return distinct_counts(t.summary.get(key) for t in evaluated)


def setup_lines(study: Study) -> list[str]:
    evaluated = study.evaluated
    source = ", ".join(state.name for state in study.state_files) or NO_STATE
    all_seeds = sorted({t.trial.seed for t in evaluated if t.trial.seed is not None}, key=seed_order)
    lines = [
        f"- Experiment folder: `{shown_path(study.folder)}`",
        f"- Tune experiment states: {source}",
        f"- Trials: {len(study.trials)}; finished and evaluated: {len(evaluated)}",
        f"- Missing trials (not finished, left out of the numbers): {len(study.missing)}",
        *(f"  - {trial.name} ({trial.status}), group {label}" for trial, label in study.missing),
        f"- Seeds: {format_seeds(all_seeds)}",
        f"- Evaluation episodes per pair: {summary_values(evaluated, 'episodes_per_pair')}",
        f"- Evaluation policy: {summary_values(evaluated, 'policy')}",
        (
            "- AvgSR: success rate over the pairs in percent, mean ± sample std (ddof 1) over a group's "
            "seeds; one seed shows the mean alone"
        ),
        (
            "- Unseen, first colour uncovered: the unseen pairs whose task's first colour is the first "
            "colour of no seen task of their maze (covered: the other unseen pairs)"
        ),
        (
            "- States trained: the last learners/__all_modules__/num_module_steps_trained_lifetime of "
            "the trial's results, mean over a group's trials (SF's updates append each drawn state's "
            "successor for the TD term, so they train about twice the states of an update of the same "
            "states_per_update); training minutes: the last time_total_s / 60"
        ),
        (
            "- Paper: SynPo (NeurIPS 2018) supplement, 144/256 split, mean ± std over 3 seeds; only for "
            "groups in the paper's setting (its networks and window, the 144/256 random split, "
            "default l2/l3), whatever their network options"
        ),
    ]
    with_options = [group for group in study.groups if group.options]
    if with_options:
        lines.append("- Network options other than the paper's network's:")
        lines += [f"  - {group.label}: {', '.join(group.options)}" for group in with_options]
    if study.notes:
        lines += ["- Notes:", *(f"  - {note}" for note in study.notes)]
    return lines


def write_markdown(study: Study, path: Path) -> Path:
    lines = [
        f"# SynPo study report: {study.folder.name}",
        "",
        *markdown_table(study.groups),
        "",
        "## Set-up",
        "",
        *setup_lines(study),
        "",
    ]
    path.write_text("\n".join(lines))
    return path


CSV_COLUMNS = (
    "group",
    "trials",
    "seeds",
    "seen_mean",
    "seen_std",
    "unseen_mean",
    "unseen_std",
    "paper_seen",
    "paper_seen_std",
    "paper_unseen",
    "paper_unseen_std",
    "states_trained_mean",
    "train_minutes_mean",
    "unseen_uncovered_mean",
    "unseen_uncovered_std",
    "unseen_covered_mean",
    "unseen_covered_std",
    "network_options",
)


def csv_row(group: Group) -> dict[str, Any]:
    """One group's numbers; "" where there is none (pandas reads it as NaN)."""
    row: dict[str, Any] = {
        "group": group.label,
        "trials": len(group.trials),
        "seeds": format_seeds(group.seeds, " "),
    }
    for part in PARTS + UNSEEN_SUBSETS:
        stat = group.avgsr(part)
        row[f"{part}_mean"] = stat[0] if stat else None
        row[f"{part}_std"] = stat[1] if stat else None
    for part in PARTS:
        row[f"paper_{part}"] = getattr(group.paper.numbers, part) if group.paper else None
        row[f"paper_{part}_std"] = getattr(group.paper.numbers, f"{part}_std") if group.paper else None
    row["states_trained_mean"] = group.states_trained_mean()
    row["train_minutes_mean"] = group.train_minutes_mean()
    row["network_options"] = " ".join(group.options)
    return {column: "" if row[column] is None else row[column] for column in CSV_COLUMNS}


def write_csv(study: Study, path: Path) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_row(group) for group in study.groups)
    return path
