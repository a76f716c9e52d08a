"""``rllib report EXPERIMENT_DIR``: the study's tables and figures from a Ray Tune experiment folder.

A study is one Tune experiment (``rllib train file study.yaml``) whose finished trials were
evaluated by ``rllib evaluate EXP`` (each trial folder then holds ``evaluation/summary.json`` and
``evaluation/success_matrix.csv``). Trials that differ only in ``seed`` form a group; each group is
one table row with AvgSR in percent as mean ± sample std (ddof 1) over its seeds, beside the
paper's numbers where the group runs the paper's setting, plus a learning-curve figure (the
periodic evaluations in Tune's ``result.json``) and a figure of each group's mean success matrix.

Trials Tune has not finished (pending, running, errored, paused) are left out of the numbers
and named in the report; a finished trial without an evaluation stops the report, since its
group's numbers would silently come from fewer seeds.

The report folder also gets each reported trial's params.json and evaluation files
(``<trial>/params.json``, ``summary.json``, ``success_matrix.csv``, ``heatmap.png``), so it holds
the numbers behind its tables wherever it is kept (the experiment folder's checkpoints and Tune's
logs stay behind; the summary names its checkpoint relative to the working directory, as the
report names the experiment folder).

Reads only JSON and CSV files: importing this module loads neither Ray nor matplotlib.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from rllib_synpo.checkpoint import HEATMAP_FILE, MATRIX_FILE, SUMMARY_FILE, TRIAL_EVALUATION, TRIAL_PARAMS
from rllib_synpo.studies.figures import plot_curves, plot_heatmaps
from rllib_synpo.studies.study import Study, read_study
from rllib_synpo.studies.tables import shown_path, write_csv, write_markdown

DEFAULT_REPORT_DIR = "report"
# A trial's files the report folder keeps, by their path in the trial folder.
TRIAL_RECORD = (
    TRIAL_PARAMS,
    f"{TRIAL_EVALUATION}/{SUMMARY_FILE}",
    f"{TRIAL_EVALUATION}/{MATRIX_FILE}",
    f"{TRIAL_EVALUATION}/{HEATMAP_FILE}",
)


def write_report(study: Study, out: str | Path) -> list[Path]:
    """report.md, report.csv, curves.png and heatmap.png of the study in ``out``, and a folder
    per reported trial (`copy_trial_records`)."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = study.folder.name
    return [
        write_markdown(study, out / "report.md"),
        write_csv(study, out / "report.csv"),
        plot_curves(study.groups, out / "curves.png", f"{name}: periodic evaluations"),
        plot_heatmaps(study.groups, out / "heatmap.png", f"{name}: mean success rate per pair"),
        *copy_trial_records(study, out),
    ]


def copy_trial_records(study: Study, out: Path) -> list[Path]:
    """Each reported trial's `TRIAL_RECORD` files (those it has) copied flat into
    ``out/<trial folder's name>/``; returns those folders. An ``out`` that is the experiment
    folder itself already holds them."""
    folders = []
    for evaluated in study.evaluated:
        source = evaluated.trial.folder
        folder = out / source.name
        if folder.resolve() == source.resolve():
            continue
        folder.mkdir(exist_ok=True)
        for relative in TRIAL_RECORD:
            if (source / relative).is_file():
                shutil.copyfile(source / relative, folder / Path(relative).name)
        _name_checkpoint_as_shown(folder / SUMMARY_FILE)
        folders.append(folder)
    return folders


def _name_checkpoint_as_shown(summary_path: Path) -> None:
    """A copied summary.json's checkpoint named by `shown_path` (no machine's absolute path)."""
    if not summary_path.is_file():
        return
    summary = json.loads(summary_path.read_text())
    checkpoint = summary.get("checkpoint")
    shown = shown_path(Path(checkpoint)) if isinstance(checkpoint, str) else checkpoint
    if shown != checkpoint:
        summary_path.write_text(json.dumps(summary | {"checkpoint": shown}, indent=1))


def report_experiment(
    experiment_dir: str | Path, out: str | Path | None = None, *, echo: Callable[[str], None] | None = print
) -> list[Path]:
    """Writes the study's report of a Tune experiment folder to ``out`` (default
    ``EXPERIMENT_DIR/report``) and returns the written files. ``echo`` (None: silent) gets one
    line per trial left out because Tune has not finished it."""
    study = read_study(experiment_dir)
    if echo is not None:
        for trial, label in study.missing:
            echo(f"left out: {trial.name} ({trial.status}), group {label}")
    return write_report(study, Path(out) if out is not None else study.folder / DEFAULT_REPORT_DIR)
