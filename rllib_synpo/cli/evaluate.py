"""``rllib evaluate``: SynPo checkpoints on the gridworld, one checkpoint or every trial of an
experiment folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from rllib_synpo.cli.errors import check_output_folder


def evaluate_command(args: argparse.Namespace) -> int:
    """One checkpoint, or every trial of an experiment folder (the newest checkpoint of each,
    into ``<trial>/evaluation``, or ``--out/<trial>`` where there are several; a trial already
    evaluated with the same checkpoint and settings is skipped)."""
    from rllib_synpo.checkpoint import TRIAL_EVALUATION, find_checkpoint, trial_folders

    if args.out:
        check_output_folder(args.out, "--out")
    trials = trial_folders(args.checkpoint)
    unfinished = unfinished_trials(trials)
    if len(trials) <= 1:
        default = trials[0] / TRIAL_EVALUATION if trials else Path(TRIAL_EVALUATION)
        out = Path(args.out) if args.out else default
        if trials and trials[0] in unfinished:
            print(_unfinished_note(unfinished[trials[0]]))
        _evaluate_one(args, args.checkpoint, out)
        return 0
    settings = {
        "episodes_per_pair": args.episodes_per_pair,
        "pair_set": args.pairs,
        "seed": args.seed,
        "policy": "sampled" if args.sample else "greedy",
    }
    from rllib_synpo.evaluation import is_evaluated

    for number, trial in enumerate(trials, start=1):
        out = Path(args.out) / trial.name if args.out else trial / TRIAL_EVALUATION
        print(f"[trial {number}/{len(trials)}] {trial.name}")
        if trial in unfinished:
            print(_unfinished_note(unfinished[trial]))
        if not any(trial.glob("checkpoint_*")):
            print("no checkpoint yet, skipped")
        elif is_evaluated(out, checkpoint := find_checkpoint(trial), settings):
            print(f"already evaluated in {out}, skipped")
        else:
            _evaluate_one(args, checkpoint, out)
    return 0


def unfinished_trials(trials: list[Path]) -> dict[Path, str]:
    """The Tune status of each of ``trials`` that its experiment's state says has not reached its
    stop criteria (running, interrupted, errored); {} where there is no experiment state."""
    from rllib_synpo.studies.trials import FINISHED, ReportError, find_trials

    statuses = {}
    for experiment in {trial.parent for trial in trials}:
        try:
            _, found = find_trials(experiment)
        except ReportError:
            continue
        statuses.update({trial.folder: trial.status for trial in found if trial.folder is not None})
    return {trial: statuses[trial] for trial in trials if statuses.get(trial, FINISHED) != FINISHED}


def _unfinished_note(status: str) -> str:
    from rllib_synpo.studies.trials import FINISHED, INTERRUPTED

    state = FINISHED if status == INTERRUPTED else status  # what Tune's state file says
    return (
        f"note: this trial has not reached its stop criteria (Tune's state: {state}); "
        "its newest checkpoint is evaluated"
    )


def _evaluate_one(args: argparse.Namespace, checkpoint: str | Path, out: Path) -> None:
    from rllib_synpo.checkpoint import read_gridworld_meta

    checkpoint, _, _ = read_gridworld_meta(checkpoint)  # a missing or damaged one named before torch loads
    from rllib_synpo.evaluation import evaluate_checkpoint

    summary = evaluate_checkpoint(
        checkpoint,
        episodes_per_pair=args.episodes_per_pair,
        pairs=args.pairs,
        out=out,
        seed=args.seed,
        sample=args.sample,
    )
    for name in ("seen", "unseen"):
        part = summary[name]
        if part["pairs"]:
            print(
                f"{name:6s} pairs {part['pairs']:3d}  AvgSR {100 * part['avg_success_rate']:5.1f}%  "
                f"avg return {part['avg_return']:7.2f}  "
                f"first-pick accuracy {100 * part['first_pick_accuracy']:5.1f}%"
            )
    print(f"checkpoint {summary['checkpoint']}")
    print(
        f"wrote {out}/success_matrix.csv, summary.json, heatmap.png ({summary['seconds']:.0f} s)", flush=True
    )
