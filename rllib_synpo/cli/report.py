"""``rllib report``: a study's tables and figures from its experiment folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from rllib_synpo.cli.errors import UsageError, check_output_folder


def report_command(args: argparse.Namespace) -> int:
    _check_experiment_folder(args.experiment)
    if args.out:
        check_output_folder(args.out, "--out")
    from rllib_synpo.studies.report import report_experiment
    from rllib_synpo.studies.trials import ReportError

    try:
        paths = report_experiment(args.experiment, args.out)
    except ReportError as err:
        raise UsageError(str(err)) from None
    for path in paths:
        print(f"wrote {path}")
    return 0


def _check_experiment_folder(path: str) -> None:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise UsageError(
            f"experiment folder {path!r} {what}: expected the folder of an `rllib train file` experiment "
            "(its trials evaluated by `rllib evaluate`)"
        )
