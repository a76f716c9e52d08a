"""The ``rllib`` command (current Ray ships none): classic RLlib experiment files through Ray
Tune, and SynPo evaluation.

    rllib train file tuned_examples/synpo_gridworld.yaml [--config '{"seed": 1}'] [--stop JSON] [--resume]
    rllib evaluate CHECKPOINT|EXPERIMENT_DIR [--episodes-per-pair 100] [--pairs seen|unseen|all] [--out DIR]
    rllib report EXPERIMENT_DIR [--out DIR]
    rllib synpo adapt CHECKPOINT --setting 2|3 [--new-maze FILE ...] [--iterations 10000] [--out DIR]

Problems with the input (a missing or malformed file, unknown keys or algorithm, a bad value, a
cluster address nobody answers at, a corrupted checkpoint) end with a one-line ``error: ...``
naming the bad value and what was expected, and exit status 2; ``rllib train file`` finds them
before Ray starts, and every command names a missing file, bad JSON or a malformed address
before it loads torch or Ray (seconds on a small machine).
"""

from __future__ import annotations

import argparse
import sys

from rllib_synpo.cli.adapt import adapt_command
from rllib_synpo.cli.errors import USAGE_ERROR, UsageError, one_line
from rllib_synpo.cli.evaluate import evaluate_command
from rllib_synpo.cli.report import report_command
from rllib_synpo.cli.train import DEFAULT_STORAGE, train_file
from rllib_synpo.utils.console import quiet_rllib_notices


def _positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse reports anything else in one line)."""
    return _int_at_least(text, 1)


def _non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (seeds: the environments refuse negative ones)."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose bad input ends in one ``error: ...`` line and exit status 2."""

    def error(self, message: str):
        print(f"error: {self.prog}: {one_line(message)}", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(
        prog="rllib",
        description=__doc__.replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{train,evaluate,report,synpo}")
    _add_train(verbs)
    _add_evaluate(verbs)
    _add_report(verbs)
    _add_adapt(verbs)
    return parser


def _add_train(verbs) -> None:
    train = verbs.add_parser("train", help="train from an experiment file")
    train_how = train.add_subparsers(dest="how", required=True, metavar="{file}")
    file = train_how.add_parser("file", help="run a classic RLlib YAML experiment file through Ray Tune")
    file.add_argument("experiment", help="YAML file: {name: {run, env, stop, config}}")
    file.add_argument(
        "--experiment",
        dest="experiment_names",
        action="append",
        metavar="NAME",
        help="run only this experiment of the file (repeatable; default: all, one after another)",
    )
    file.add_argument(
        "--name",
        help="the experiment's folder under the storage path, in place of its name in the file (a file "
        "of one experiment, or the one --experiment picks), e.g. a study run again at other seeds",
    )
    file.add_argument(
        "--config",
        help="JSON settings merged into every experiment's config: a mapping merges key by key, any "
        'other value (a grid_search too) replaces the file\'s, e.g. \'{"seed": {"grid_search": [0]}}\'',
    )
    file.add_argument(
        "--stop", help="JSON stop criteria replacing the file's, e.g. '{\"training_iteration\": 2}'"
    )
    file.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    file.add_argument("--storage-path", help=f"where results and checkpoints go (default {DEFAULT_STORAGE})")
    file.add_argument("--resume", action="store_true", help="resume the experiment from its last checkpoints")
    file.set_defaults(func=train_file)


def _add_evaluate(verbs) -> None:
    evaluate = verbs.add_parser(
        "evaluate", help="evaluate SynPo checkpoints on the gridworld (every trial of an experiment)"
    )
    evaluate.add_argument(
        "checkpoint",
        help="a checkpoint, a trial folder or an experiment folder (each trial's newest checkpoint)",
    )
    evaluate.add_argument(
        "--episodes-per-pair",
        type=_positive_int,
        default=100,
        help="episodes per pair (default 100, the paper's)",
    )
    evaluate.add_argument(
        "--pairs",
        choices=("seen", "unseen", "all"),
        default="all",
        help="which pairs of the split (default all)",
    )
    evaluate.add_argument(
        "--out",
        help="output folder (default: each trial's evaluation/ folder, else "
        "./evaluation); with several trials, one subfolder per trial",
    )
    evaluate.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        help="seed of the episodes' random starts and of --sample's draws (default 0)",
    )
    evaluate.add_argument(
        "--sample", action="store_true", help="sample actions from the policy instead of the greedy action"
    )
    evaluate.set_defaults(func=evaluate_command)


def _add_report(verbs) -> None:
    report = verbs.add_parser("report", help="a study's tables and figures from its experiment folder")
    report.add_argument(
        "experiment",
        help="an experiment folder of `rllib train file` (its trials evaluated by `rllib evaluate`)",
    )
    report.add_argument("--out", help="output folder (default: EXPERIMENT/report)")
    report.set_defaults(func=report_command)


def _add_adapt(verbs) -> None:
    synpo = verbs.add_parser("synpo", help="SynPo-specific commands")
    synpo_verbs = synpo.add_subparsers(dest="synpo_verb", required=True, metavar="{adapt}")
    adapt = synpo_verbs.add_parser(
        "adapt",
        help="learn embeddings of new environments/tasks from one demonstration per pair (settings 2, 3)",
    )
    adapt.add_argument(
        "checkpoint", help="a SynPo checkpoint, or an experiment folder (its newest checkpoint is used)"
    )
    adapt.add_argument(
        "--setting",
        type=int,
        required=True,
        help="2: cross quadrants (new env, old task) and (old env, new task); 3: new env x new task",
    )
    adapt.add_argument(
        "--new-maze",
        action="append",
        default=[],
        metavar="FILE",
        help="a maze file added as a new environment (repeatable)",
    )
    adapt.add_argument(
        "--new-env-rows",
        default="random",
        metavar="{random,unknown}",
        help="where new environments' embeddings start: N(0, 1) draws (the paper's), or the network's "
        "unknown-environment embedding (a SynPo network trained with env_dropout)",
    )
    adapt.add_argument("--iterations", type=int, default=10_000, help="embedding updates (paper: 10,000)")
    adapt.add_argument("--batch-size", type=int, default=256, help="demonstration states per update")
    adapt.add_argument(
        "--lr", type=float, default=1e-3, help="Adam learning rate of the new rows (default 1e-3)"
    )
    adapt.add_argument(
        "--episodes-per-pair", type=int, default=100, help="greedy evaluation episodes per pair"
    )
    adapt.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        help="seed of the demonstrations, new rows and evaluation",
    )
    adapt.add_argument("--out", default="adaptation", help="output folder (default ./adaptation)")
    adapt.set_defaults(func=adapt_command)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    quiet_rllib_notices()  # while the experiment files are checked
    from synpo_envs.gridworld.mazes import MazeFormatError
    from synpo_envs.splits import SplitError

    from rllib_synpo.checkpoint import CheckpointError
    from rllib_synpo.utils.denormals import DenormalsSettingError, flush_denormals_wanted

    try:
        flush_denormals_wanted()  # a bad RLLIB_SYNPO_FLUSH_DENORMALS, before any Ray process starts
        return args.func(args)
    except (UsageError, CheckpointError, SplitError, MazeFormatError, DenormalsSettingError) as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return USAGE_ERROR
