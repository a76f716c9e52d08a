"""The ``rllib`` command (current Ray ships none): classic RLlib experiment files through Ray
Tune, and SynPo evaluation.

    rllib train file tuned_examples/synpo_gridworld.yaml [--stop '{"training_iteration": 5}']
    rllib evaluate CHECKPOINT|EXPERIMENT_DIR [--episodes-per-pair 100] [--pairs seen|unseen|all] [--out DIR]
    rllib report EXPERIMENT_DIR [--out DIR]
    rllib synpo adapt CHECKPOINT --setting 2|3 [--new-maze FILE ...] [--iterations 10000] [--out DIR]

Problems with the input (missing file, malformed YAML, unknown keys or algorithm) end with a
one-line ``error: ...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any

EXPERIMENT_KEYS = {"run", "env", "stop", "config", "checkpoint_config", "storage_path", "num_samples"}
CHECKPOINT_KEYS = {"checkpoint_frequency", "checkpoint_at_end", "num_to_keep"}
DEFAULT_STORAGE = "~/ray_results"
# New-stack names in experiment files -> AlgorithmConfig's dict keys.
CONFIG_ALIASES = {"model_config": "_model_config"}
USAGE_ERROR = 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, no traceback."""


def load_experiments(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"experiment file {str(path)!r} does not exist")
    try:
        experiments = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UsageError(f"{path} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if not isinstance(experiments, dict) or not experiments:
        raise UsageError(f"{path}: expected a mapping of experiment names to {{run, env, stop, config}}")
    for name, spec in experiments.items():
        _check_experiment(path, name, spec)
    return experiments


def _check_experiment(path: Path, name: str, spec: Any) -> None:
    where = f"{path}: experiment {name!r}"
    if not isinstance(spec, dict):
        raise UsageError(f"{where} must be a mapping, got {type(spec).__name__}")
    unknown = sorted(set(spec) - EXPERIMENT_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(EXPERIMENT_KEYS)}")
    if "run" not in spec:
        raise UsageError(f"{where}: 'run' (the algorithm) is missing")
    unknown = sorted(set(spec.get("checkpoint_config") or {}) - CHECKPOINT_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown checkpoint_config key(s) {unknown}; expected some of {sorted(CHECKPOINT_KEYS)}")
    algo_class = algorithm_class(spec["run"], where)
    config = experiment_config(spec)
    default = algo_class.get_default_config()
    known = set(default.to_dict()) | set(CONFIG_ALIASES.values())
    unknown = sorted(k for k in config if k not in known)
    if unknown:
        raise UsageError(f"{where}: unknown config key(s) {unknown} for {spec['run']}")
    variants = grid_variants(config)
    for variant, choices in variants:
        if _has_tune_search(variant):
            continue  # a random search space: its samples are checked when Tune draws them
        try:
            default.copy(copy_frozen=False).update_from_dict(variant).validate()
        except (ValueError, TypeError) as err:
            trial = f" (grid {choices})" if len(variants) > 1 else ""
            raise UsageError(f"{where}{trial}: {str(err).strip().splitlines()[0]}") from None


def grid_variants(config: Any, path: str = "") -> list[tuple[Any, str]]:
    """Every combination of the ``{grid_search: [...]}`` values in ``config`` (at any depth),
    as (config with those values, "key=value, ..." naming the choices); one entry when there is
    no grid. Other search spaces are left in place."""
    if isinstance(config, dict) and set(config) == {"grid_search"}:
        values = config["grid_search"]
        if not isinstance(values, list) or not values:
            raise UsageError(f"{path or 'config'}: grid_search takes a non-empty list, got {values!r}")
        return [
            (resolved, ", ".join(filter(None, [f"{path}={_short(value)}", inner])))
            for value in values
            for resolved, inner in grid_variants(value, path)
        ]
    if not isinstance(config, dict):
        return [(config, "")]
    variants: list[tuple[dict, str]] = [({}, "")]
    for key, value in config.items():
        where = f"{path}.{key}" if path else key
        variants = [
            ({**done, key: resolved}, ", ".join(filter(None, [names, inner])))
            for done, names in variants
            for resolved, inner in grid_variants(value, where)
        ]
    return variants


def _short(value: Any) -> str:
    """A grid value as the choice names show it (a network's config by its network)."""
    if isinstance(value, dict) and "network" in value:
        return str(value["network"])
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _has_tune_search(value: Any) -> bool:
    if _is_tune_search(value):
        return True
    return isinstance(value, dict) and any(_has_tune_search(v) for v in value.values())


def experiment_config(spec: dict) -> dict:
    """An experiment's ``config`` in AlgorithmConfig's dict keys, with its ``env``."""
    config = {CONFIG_ALIASES.get(key, key): value for key, value in (spec.get("config") or {}).items()}
    if "env" in spec:
        config["env"] = spec["env"]
    return config


TUNE_SEARCH_KEYS = {"grid_search", "choice", "uniform", "loguniform", "randint", "quniform", "normal"}


def _is_tune_search(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in TUNE_SEARCH_KEYS


def algorithm_class(name: str, where: str = "run"):
    from ray.rllib.algorithms.registry import ALGORITHMS
    from ray.tune.registry import TRAINABLE_CLASS, _global_registry, get_trainable_cls

    from rllib_synpo import register

    register()  # again after any ray.shutdown(), which empties Tune's registry

    if not isinstance(name, str) or not (name in ALGORITHMS or _global_registry.contains(TRAINABLE_CLASS, name)):
        raise UsageError(f"{where}: unknown algorithm {name!r}; expected SynPo, SynPoPPO or one of RLlib's {sorted(ALGORITHMS)}")
    return get_trainable_cls(name)


def _needed_cpus(experiments: dict) -> int:
    needed = 1
    for spec in experiments.values():
        config = spec.get("config") or {}
        runners = config.get("num_env_runners", 0)
        runners = max(runners["grid_search"]) if _is_tune_search(runners) else runners
        main = int(config.get("num_cpus_for_main_process", 1))
        needed = max(needed, main + int(runners) * int(config.get("num_cpus_per_env_runner", 1)))
    return needed


def _storage_path(path: str) -> str:
    """A local folder made absolute (Tune needs one), or a URI (``s3://``, ``gs://``...) as is."""
    return path if "://" in path else str(Path(path).expanduser().resolve())


def _init_ray(address: str | None, experiments: dict) -> None:
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
        return
    # A trial asks for its main process's CPUs (its torch threads: Ray sets OMP_NUM_THREADS to
    # them) + 1 per env runner; on a small machine more logical CPUs than cores keep it from
    # waiting forever (the processes then share the cores).
    num_cpus = max(os.cpu_count() or 1, _needed_cpus(experiments))
    # "local": a new Ray of our own even when another one runs on this machine (joining a
    # cluster is what --address / RAY_ADDRESS are for).
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False)


def train_file(args: argparse.Namespace) -> int:
    from ray import tune

    experiments = load_experiments(args.experiment)
    stop_override = json.loads(args.stop) if args.stop else None
    for spec in experiments.values():
        if stop_override is not None:
            spec["stop"] = stop_override
        spec["storage_path"] = _storage_path(args.storage_path or spec.get("storage_path") or DEFAULT_STORAGE)
        spec.setdefault("checkpoint_config", {"checkpoint_frequency": 1, "checkpoint_at_end": True})
        spec["config"] = experiment_config(spec)
        spec.pop("env", None)
    _init_ray(args.address, experiments)
    logging.getLogger("ray.tune.tune").addFilter(_without_tunes_resume_hint)
    trials = tune.run_experiments(experiments, resume="AUTO" if args.resume else False, verbose=1)
    unfinished = [trial for trial in trials if not _reached_stop(trial)]
    if unfinished:
        print(f"{len(unfinished)} of {len(trials)} trial(s) stopped before their stop criteria; "
              f"continue from the last checkpoints with: {_resume_command(args)}")
    return 0


def _without_tunes_resume_hint(record: logging.LogRecord) -> bool:
    """Drops Tune's hint after Ctrl-C, which names its Python API (``tune.run_experiments(...,
    resume=True)``); ``train_file`` prints the command that resumes instead."""
    return "Resume experiment with" not in record.getMessage()


def _without_new_api_stack_notice(record: logging.LogRecord) -> bool:
    """Drops RLlib's notice that an algorithm runs on the new API stack (SynPo only runs there:
    nothing for the user to act on) while the command checks the experiment files."""
    return "on the new API stack" not in record.getMessage()


def _reached_stop(trial) -> bool:
    """Whether a trial met one of its stop criteria (Tune marks a Ctrl-C'd trial TERMINATED too)."""
    from ray.tune.utils import flatten_dict

    result = flatten_dict(trial.last_result or {}, delimiter="/")
    criteria = trial.stopping_criterion or {}
    met = not criteria or any(result.get(key, float("-inf")) >= value for key, value in criteria.items())
    return trial.status == "TERMINATED" and met


def _resume_command(args: argparse.Namespace) -> str:
    words = ["rllib", "train", "file", args.experiment]
    for flag, value in (("--stop", args.stop), ("--address", args.address), ("--storage-path", args.storage_path)):
        if value:
            words += [flag, value]
    return shlex.join([*words, "--resume"])


def evaluate_command(args: argparse.Namespace) -> int:
    """One checkpoint, or every trial of an experiment folder (the newest checkpoint of each,
    into ``<trial>/evaluation``, or ``--out/<trial>`` where there are several; a trial already
    evaluated with the same checkpoint and settings is skipped)."""
    from rllib_synpo.checkpoint import TRIAL_EVALUATION, find_checkpoint, trial_folders
    from rllib_synpo.evaluation import is_evaluated

    trials = trial_folders(args.checkpoint)
    if len(trials) <= 1:
        default = trials[0] / TRIAL_EVALUATION if trials else Path(TRIAL_EVALUATION)
        out = Path(args.out) if args.out else default
        _evaluate_one(args, args.checkpoint, out)
        return 0
    settings = {"episodes_per_pair": args.episodes_per_pair, "pair_set": args.pairs, "seed": args.seed,
                "policy": "sampled" if args.sample else "greedy"}
    for number, trial in enumerate(trials, start=1):
        out = Path(args.out) / trial.name if args.out else trial / TRIAL_EVALUATION
        print(f"[trial {number}/{len(trials)}] {trial.name}")
        if not any(trial.glob("checkpoint_*")):
            print("no checkpoint yet, skipped")
        elif is_evaluated(out, checkpoint := find_checkpoint(trial), settings):
            print(f"already evaluated in {out}, skipped")
        else:
            _evaluate_one(args, checkpoint, out)
    return 0


def _evaluate_one(args: argparse.Namespace, checkpoint: str | Path, out: Path) -> None:
    from rllib_synpo.evaluation import evaluate_checkpoint

    summary = evaluate_checkpoint(checkpoint, episodes_per_pair=args.episodes_per_pair, pairs=args.pairs, out=out,
                                  seed=args.seed, sample=args.sample)
    for name in ("seen", "unseen"):
        part = summary[name]
        if part["pairs"]:
            print(f"{name:6s} pairs {part['pairs']:3d}  AvgSR {100 * part['avg_success_rate']:5.1f}%  "
                  f"avg return {part['avg_return']:7.2f}  first-pick accuracy {100 * part['first_pick_accuracy']:5.1f}%")
    print(f"checkpoint {summary['checkpoint']}")
    print(f"wrote {out}/success_matrix.csv, summary.json, heatmap.png ({summary['seconds']:.0f} s)", flush=True)


def report_command(args: argparse.Namespace) -> int:
    from rllib_synpo.studies.report import ReportError, report_experiment

    try:
        paths = report_experiment(args.experiment, args.out)
    except ReportError as err:
        raise UsageError(str(err)) from None
    for path in paths:
        print(f"wrote {path}")
    return 0


def adapt_command(args: argparse.Namespace) -> int:
    from synpo_envs.gridworld.mazes import MazeFormatError

    from rllib_synpo.adaptation import AdaptConfig, AdaptError, adapt_checkpoint

    config = AdaptConfig(
        setting=args.setting, iterations=args.iterations, batch_size=args.batch_size, lr=args.lr,
        episodes_per_pair=args.episodes_per_pair, seed=args.seed, new_mazes=list(args.new_maze),
    )
    try:
        summary = adapt_checkpoint(args.checkpoint, config, out=args.out, progress=_adapt_progress(args.iterations))
    except (AdaptError, MazeFormatError) as err:
        raise UsageError(str(err)) from None
    print(f"new environments {summary['new_envs']}, new tasks {summary['new_tasks']}, "
          f"{summary['demonstrated_pairs']} demonstrated pairs, {args.iterations} iterations")
    for column, value in summary["table_avg_success_rate_percent"].items():
        print(f"{column:22s} AvgSR {'-' if value is None else f'{value:5.1f}%'}")
    print(f"wrote {args.out}/transfer_table.csv, summary.json, heatmap.png ({summary['seconds']:.0f} s)")
    return 0


def _adapt_progress(iterations: int):
    def report(row: dict) -> None:
        print(f"iteration {row['iteration']}/{iterations}: policy loss {row['policy_loss']:.3f}, "
              f"action accuracy on the demonstrations {100 * row['action_accuracy']:.1f}%", flush=True)

    return report


def _positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse reports anything else in one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose bad input ends in one ``error: ...`` line and exit status 2."""

    def error(self, message: str):
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def _parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(prog="rllib", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    train = verbs.add_parser("train", help="train from an experiment file")
    train_how = train.add_subparsers(dest="how", required=True)
    file = train_how.add_parser("file", help="run a classic RLlib YAML experiment file through Ray Tune")
    file.add_argument("experiment", help="YAML file: {name: {run, env, stop, config}}")
    file.add_argument("--stop", help="JSON stop criteria replacing the file's, e.g. '{\"training_iteration\": 2}'")
    file.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    file.add_argument("--storage-path", help=f"where results and checkpoints go (default {DEFAULT_STORAGE})")
    file.add_argument("--resume", action="store_true", help="resume the experiment from its last checkpoints")
    file.set_defaults(func=train_file)
    evaluate = verbs.add_parser("evaluate", help="evaluate SynPo checkpoints on the gridworld (every trial of an experiment)")
    evaluate.add_argument("checkpoint", help="a checkpoint, a trial folder or an experiment folder (each trial's newest checkpoint)")
    evaluate.add_argument("--episodes-per-pair", type=_positive_int, default=100)
    evaluate.add_argument("--pairs", choices=("seen", "unseen", "all"), default="all")
    evaluate.add_argument("--out", help="output folder (default: each trial's evaluation/ folder, else ./evaluation); "
                                        "with several trials, one subfolder per trial")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--sample", action="store_true", help="sample actions from the policy instead of the greedy action")
    evaluate.set_defaults(func=evaluate_command)
    report = verbs.add_parser("report", help="a study's tables and figures from its experiment folder")
    report.add_argument("experiment", help="an experiment folder of `rllib train file` (its trials evaluated by `rllib evaluate`)")
    report.add_argument("--out", help="output folder (default: EXPERIMENT/report)")
    report.set_defaults(func=report_command)
    synpo = verbs.add_parser("synpo", help="SynPo-specific commands").add_subparsers(dest="synpo_verb", required=True)
    adapt = synpo.add_parser("adapt", help="learn embeddings of new environments/tasks from one demonstration per pair (settings 2, 3)")
    adapt.add_argument("checkpoint", help="a SynPo checkpoint, or an experiment folder (its newest checkpoint is used)")
    adapt.add_argument("--setting", type=int, required=True, help="2: cross quadrants (new env, old task) and (old env, new task); 3: new env x new task")
    adapt.add_argument("--new-maze", action="append", default=[], metavar="FILE", help="a maze file added as a new environment (repeatable)")
    adapt.add_argument("--iterations", type=int, default=10_000, help="embedding updates (paper: 10,000)")
    adapt.add_argument("--batch-size", type=int, default=256, help="demonstration states per update")
    adapt.add_argument("--lr", type=float, default=1e-3)
    adapt.add_argument("--episodes-per-pair", type=int, default=100, help="greedy evaluation episodes per pair")
    adapt.add_argument("--seed", type=int, default=0)
    adapt.add_argument("--out", default="adaptation")
    adapt.set_defaults(func=adapt_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.getLogger("ray.rllib.algorithms.algorithm_config").addFilter(_without_new_api_stack_notice)
    from synpo_envs.splits import SplitError

    from rllib_synpo.checkpoint import CheckpointError
    from rllib_synpo.utils.denormals import DenormalsSettingError, flush_denormals_wanted

    try:
        flush_denormals_wanted()  # a bad RLLIB_SYNPO_FLUSH_DENORMALS, before any Ray process starts
        return args.func(args)
    except (UsageError, CheckpointError, SplitError, DenormalsSettingError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return USAGE_ERROR


