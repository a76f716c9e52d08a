"""Experiment files of ``rllib train file``: loading them, and every check that can run before
Ray starts: the keys, Tune's settings (stop, checkpoint_config, num_samples, storage_path), the
algorithm and the env by name, and each grid combination's config: RLlib's resource settings,
the algorithm config's ``validate()``, and the files the env reads (the gridworld's maze files;
on a local Ray, the THOR build). A problem is a `UsageError` naming the file, the experiment,
the grid combination, the bad value and what was expected.

Settings that name files are made absolute against the working directory here
(`with_absolute_paths`): Ray Tune runs each trial in its own folder, where a relative path
would name another file than the one checked.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from pathlib import Path
from typing import Any

from synpo_envs.checks import is_int

from rllib_synpo.cli.errors import UsageError, first_line, one_line
from rllib_synpo.utils.checks import (
    BOOLEAN,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    Rule,
    bad_setting,
    is_number,
    one_of,
    optional,
)

# Results that start at 0 and only grow, besides RLlib's ``..._lifetime`` counters.
GROWING_COUNTERS = {"training_iteration", "time_total_s", "timesteps_total", "episodes_total"}
EXPERIMENT_KEYS = {"run", "env", "stop", "config", "checkpoint_config", "storage_path", "num_samples"}
CHECKPOINT_RULES: dict[str, Rule] = {
    "checkpoint_frequency": NON_NEGATIVE_INT,
    "checkpoint_at_end": BOOLEAN,
    "num_to_keep": optional(POSITIVE_INT),
}
CHECKPOINT_KEYS = set(CHECKPOINT_RULES)
# New-stack names in experiment files -> AlgorithmConfig's dict keys.
CONFIG_ALIASES = {"model_config": "_model_config"}
TUNE_SEARCH_KEYS = {"grid_search", "choice", "uniform", "loguniform", "randint", "quniform", "normal"}
AUTO_OR_NON_NEGATIVE_NUMBER: Rule = (
    "'auto' or a number >= 0",
    lambda v: v == "auto" or NON_NEGATIVE_NUMBER[1](v),
)
# RLlib settings its configs' validate() leaves to the trial (where a bad one fails after Ray started).
RLLIB_SETTING_RULES: dict[Rule, tuple[str, ...]] = {
    optional(NON_NEGATIVE_INT): ("seed", "evaluation_interval"),
    NON_NEGATIVE_INT: ("num_env_runners", "num_learners"),
    POSITIVE_INT: ("num_envs_per_env_runner",),
    NON_NEGATIVE_NUMBER: (
        "num_cpus_for_main_process",
        "num_cpus_per_env_runner",
        "num_gpus_per_env_runner",
        "num_gpus_per_learner",
    ),
    AUTO_OR_NON_NEGATIVE_NUMBER: ("num_cpus_per_learner",),
    optional(NON_NEGATIVE_NUMBER): ("grad_clip",),  # a negative one would turn the gradients round
    one_of(["value", "norm", "global_norm"]): ("grad_clip_by",),
}
# Settings (key paths into a config, in AlgorithmConfig's keys) that must be mappings.
MAPPING_SETTINGS = (
    ("env_config",),
    ("_model_config",),
    ("env_config", "gridworld"),
    ("env_config", "thor"),
)
# Settings that name files: made absolute before Tune runs each trial in its own folder.
PATH_SETTINGS = (
    ("split",),
    ("env_config", "gridworld", "mazes"),
    ("env_config", "thor", "local_executable_path"),
)
EXPERIMENTS_EXPECTED = "expected a mapping of experiment names to {run, env, stop, config}"


def load_experiments(
    path: str | os.PathLike,
    *,
    local_ray: bool = True,
    config_override: dict | None = None,
    names: list[str] | None = None,
) -> dict[str, dict]:
    """The experiments of a YAML file, each checked; ``local_ray``: the trials run on this
    machine, so the THOR build they would launch is checked too (a cluster's nodes have their own).
    ``config_override`` (``rllib train file --config``) is merged into every experiment's config
    (`merged_config`) before the checks; ``names`` (``--experiment``) keeps only those experiments."""
    path = Path(path)
    experiments = _parse_yaml(path, _read_experiment_file(path))
    if not isinstance(experiments, dict) or not experiments:
        kind = _kind(experiments)
        raise UsageError(f"experiment file {str(path)!r} holds {kind}: {EXPERIMENTS_EXPECTED}")
    if names:
        unknown = [name for name in names if name not in experiments]
        if unknown:
            raise UsageError(
                f"--experiment {unknown[0]!r}: {str(path)!r} holds no such experiment; "
                f"expected one of {[str(name) for name in experiments]}"
            )
        experiments = {name: spec for name, spec in experiments.items() if name in names}
    source = f"{path} with --config" if config_override else str(path)
    for name, spec in experiments.items():
        if config_override and isinstance(spec, dict) and isinstance(spec.get("config") or {}, dict):
            spec["config"] = merged_config(spec.get("config") or {}, config_override)
        _check_experiment(source, name, spec, local_ray=local_ray)
    return experiments


def merged_config(config: dict, override: dict) -> dict:
    """``config`` with ``override``'s settings (keys as in `experiment_config`): a mapping merges
    into a mapping key by key; any other value, a search space such as ``{grid_search: [...]}``
    included, replaces the setting (so a study's grid can be cut to some of its values)."""
    merged = {CONFIG_ALIASES.get(key, key): value for key, value in config.items()}
    for key, value in override.items():
        key = CONFIG_ALIASES.get(key, key)
        old = merged.get(key)
        mergeable = isinstance(value, dict) and isinstance(old, dict)
        if mergeable and not _is_tune_search(value) and not _is_tune_search(old):
            merged[key] = merged_config(old, value)
        else:
            merged[key] = value
    return merged


def _read_experiment_file(path: Path) -> str:
    expected = "expected a YAML file of experiments"
    if path.is_dir():
        raise UsageError(f"experiment file {str(path)!r} is a folder: {expected}")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"experiment file {str(path)!r} does not exist: {expected}") from None
    except UnicodeDecodeError as err:
        problem = f"is not UTF-8 text ({err.reason})"
        raise UsageError(f"experiment file {str(path)!r} {problem}: {expected}") from None
    except OSError as err:
        problem = f"cannot be read ({err.strerror})"
        raise UsageError(f"experiment file {str(path)!r} {problem}: {expected}") from None


def _parse_yaml(path: Path, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or one_line(err)
        raise UsageError(f"experiment file {str(path)!r} is not valid YAML{where}: {problem}") from None


def _kind(value: Any) -> str:
    """What a YAML value is, as an error words it."""
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "an empty mapping" if not value else "a mapping"
    name = {list: "list", str: f"the string {value!r}"}.get(type(value), type(value).__name__)
    return name if name.startswith("the ") else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _check_experiment(source: str, name: str, spec: Any, *, local_ray: bool) -> None:
    where = f"{source}: experiment {name!r}"
    _check_experiment_keys(where, spec)
    _check_tune_settings(where, spec)
    algo_class = algorithm_class(spec["run"], where)
    if not isinstance(spec.get("config") or {}, dict):
        raise UsageError(f"{where}: config {spec['config']!r}: expected a mapping of algorithm settings")
    config = experiment_config(spec)
    if config.get("env") is not None and not _is_tune_search(config["env"]):
        check_env_name(config["env"], where)
    default = algo_class.get_default_config()
    known = set(default.to_dict()) | set(CONFIG_ALIASES.values())
    unknown = sorted(k for k in config if k not in known)
    if unknown:
        raise UsageError(f"{where}: unknown config key(s) {unknown} for {spec['run']}")
    _check_variants(where, default, config, local_ray=local_ray)
    if local_ray:
        _check_local_gpus(where, spec)


def _check_local_gpus(where: str, spec: dict) -> None:
    """A trial that asks for more GPUs than this machine has would wait for them forever on the
    local Ray."""
    import torch

    asked, here = trial_resources(spec)["GPU"], torch.cuda.device_count()
    if asked > here:
        raise UsageError(
            f"{where}: a trial asks for {asked:g} GPU(s) (num_gpus_per_learner, num_gpus_per_env_runner), "
            f"and this machine has {here}: expected at most {here} on a local Ray, or --address of a "
            "Ray cluster with GPUs"
        )


def _check_experiment_keys(where: str, spec: Any) -> None:
    if not isinstance(spec, dict):
        raise UsageError(f"{where} is {_kind(spec)}: expected a mapping of {{run, env, stop, config}}")
    unknown = sorted(set(spec) - EXPERIMENT_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(EXPERIMENT_KEYS)}")
    if "run" not in spec:
        raise UsageError(f"{where}: 'run' (the algorithm) is missing")


def _check_variants(where: str, default, config: dict, *, local_ray: bool) -> None:
    """Every grid combination of ``config`` through `checked_config`."""
    variants = grid_variants(config)
    for variant, choices in variants:
        if _has_tune_search(variant):
            continue  # a random search space: its samples are checked when Tune draws them
        try:
            checked_config(default, variant, local_ray=local_ray)
        except (ValueError, TypeError) as err:
            trial = f" (grid {choices})" if len(variants) > 1 else ""
            raise UsageError(f"{where}{trial}: {first_line(err)}") from None


def _check_tune_settings(where: str, spec: dict) -> None:
    """The experiment's settings for Tune itself (not the algorithm's config)."""
    if spec.get("stop") is not None:
        check_stop(spec["stop"], f"{where}: stop", example="{training_iteration: 10}")
    _check_checkpoint_config(where, spec.get("checkpoint_config"))
    samples = spec.get("num_samples", 1)
    if not (is_int(samples) and samples >= 1):
        raise UsageError(f"{where}: num_samples {samples!r}: expected an integer >= 1 (trials per variant)")
    storage = spec.get("storage_path")
    if storage is not None and not (isinstance(storage, str) and storage):
        raise UsageError(f"{where}: storage_path {storage!r}: expected a folder or a URI (s3://bucket/path)")


def check_stop(stop: Any, what: str, example: str) -> dict:
    """Tune's stop criteria: a mapping of result names to the numbers at which a trial stops (an
    empty one runs until interrupted). A counter that starts at 0 and only grows (iterations,
    seconds, lifetime steps) needs a bound above 0: Tune stops a trial when a result reaches its
    bound, so 0 or less would stop every trial after its first iteration."""
    if not isinstance(stop, dict):
        raise UsageError(f"{what} {stop!r}: expected a mapping of result names to numbers, e.g. {example}")
    for key, value in stop.items():
        if not isinstance(key, str) or not is_number(value):
            raise UsageError(f"{what}: {key} {value!r}: expected a number (the result that stops a trial)")
        if _is_growing_counter(key) and value <= 0:
            raise UsageError(
                f"{what}: {key} {value!r}: expected a number > 0 ({key} starts at 0 and only grows, "
                "so this bound would stop every trial after its first iteration)"
            )
    return stop


def _is_growing_counter(result_name: str) -> bool:
    return result_name in GROWING_COUNTERS or result_name.endswith("_lifetime")


def _check_checkpoint_config(where: str, checkpoint_config: Any) -> None:
    if checkpoint_config is None:
        return
    if not isinstance(checkpoint_config, dict):
        raise UsageError(
            f"{where}: checkpoint_config {checkpoint_config!r}: expected a mapping of some of "
            f"{sorted(CHECKPOINT_KEYS)}"
        )
    unknown = sorted(set(checkpoint_config) - CHECKPOINT_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: unknown checkpoint_config key(s) {unknown}; expected some of {sorted(CHECKPOINT_KEYS)}"
        )
    for key, value in checkpoint_config.items():
        expected, ok = CHECKPOINT_RULES[key]
        if not ok(value):
            raise UsageError(f"{where}: checkpoint_config {key} {value!r}: expected {expected}")


def algorithm_class(name: str, where: str = "run"):
    from ray.rllib.algorithms.registry import ALGORITHMS
    from ray.tune.registry import TRAINABLE_CLASS, _global_registry, get_trainable_cls

    from rllib_synpo import register

    register()  # again after any ray.shutdown(), which empties Tune's registry

    known = isinstance(name, str) and (name in ALGORITHMS or _global_registry.contains(TRAINABLE_CLASS, name))
    if not known:
        raise UsageError(
            f"{where}: unknown algorithm {name!r}; expected SynPo, SynPoPPO or one of RLlib's "
            f"{sorted(ALGORITHMS)}"
        )
    with warnings.catch_warnings():  # RLlib's algorithm modules warn on import (a debug env of DreamerV3)
        warnings.simplefilter("ignore")
        return get_trainable_cls(name)


def check_env_name(env: Any, where: str) -> None:
    """An experiment's ``env``: a name registered with Ray Tune (``synpo_pairs``,
    ``synpo_thor_pairs``...) or with Gymnasium. A name with ``.``, ``:`` or ``/`` in it (an
    import path, a namespaced Gymnasium id) is left to RLlib, which may import it."""
    import gymnasium as gym
    from ray.tune.registry import ENV_CREATOR, _global_registry

    expected = "expected synpo_pairs, synpo_thor_pairs, an env registered with Ray Tune or a Gymnasium id"
    if not isinstance(env, str) or not env:
        raise UsageError(f"{where}: env {env!r}: {expected}")
    if any(mark in env for mark in ".:/"):
        return
    if not (_global_registry.contains(ENV_CREATOR, env) or env in gym.envs.registry):
        raise UsageError(f"{where}: unknown env {env!r}: {expected}")


def checked_config(default, variant: dict, *, local_ray: bool = True):
    """``default`` (an AlgorithmConfig) updated from one grid combination of an experiment's
    config and validated, with the files its env reads checked (`check_env_files`); a problem
    is a ValueError or TypeError whose first line names it."""
    _check_mapping_settings(variant)
    config = default.copy(copy_frozen=False).update_from_dict(variant)
    error = bad_setting(vars(config), RLLIB_SETTING_RULES, quote="`")
    if error:
        raise ValueError(error)
    with warnings.catch_warnings():  # an env RLlib builds to check the spaces warns again in the trial
        warnings.simplefilter("ignore")
        config.validate()
    check_env_files(config, local_ray=local_ray)
    return config


def _check_mapping_settings(config: dict) -> None:
    for keys in MAPPING_SETTINGS:
        value = _setting(config, keys)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{_setting_name(keys)} {value!r}: expected a mapping of settings")


def _setting(config: Any, keys: tuple[str, ...]) -> Any:
    """The value at ``keys`` in nested mappings, or None where a level is missing."""
    for key in keys:
        if not isinstance(config, dict):
            return None
        config = config.get(key)
    return config


def _setting_name(keys: tuple[str, ...]) -> str:
    """A key path as the experiment file writes it (``env_config.gridworld``, ``model_config``)."""
    aliases = {alias: name for name, alias in CONFIG_ALIASES.items()}
    return ".".join(aliases.get(key, key) for key in keys)


def check_env_files(config, *, local_ray: bool) -> None:
    """What a validated config's pairs env will read, read now: the gridworld's mazes (with its
    other settings and the split's pairs), or on a local Ray the THOR build the env launches."""
    from rllib_synpo.env.pair_env import PAIRS_ENV_NAME
    from rllib_synpo.env.thor_pair_env import THOR_PAIRS_ENV_NAME, check_thor_executable

    if config.env == PAIRS_ENV_NAME:
        check_gridworld(config.env_config)
    elif config.env == THOR_PAIRS_ENV_NAME and local_ray:
        check_thor_executable(config.env_config.get("thor"))


def check_gridworld(env_config: dict) -> None:
    """Builds the gridworld the pairs env builds from ``env_config``: every maze file is read,
    and the settings and the pairs are checked against the mazes; ValueError naming the setting."""
    from synpo_envs.gridworld import BatchedGridWorld
    from synpo_envs.gridworld.mazes import MazeFormatError, resolve_mazes

    gridworld = dict(env_config.get("gridworld") or {})
    known = _keyword_options(BatchedGridWorld) - {"pairs"}  # the env passes the split's pairs
    unknown = sorted(set(gridworld) - known)
    if unknown:
        raise ValueError(f"unknown env_config.gridworld key(s) {unknown}; expected some of {sorted(known)}")
    try:
        mazes = resolve_mazes(gridworld.get("mazes"))
    except MazeFormatError as err:  # a missing maze file too
        raise ValueError(f"env_config.gridworld.mazes: {one_line(err)}") from None
    _check_pairs_fit_mazes(env_config.get("pairs"), len(mazes))
    try:
        BatchedGridWorld(1, pairs=env_config.get("pairs"), **{**gridworld, "mazes": mazes})
    except (ValueError, TypeError) as err:
        raise ValueError(f"env_config.gridworld: {one_line(err)}") from None


def _check_pairs_fit_mazes(pairs: list | None, num_mazes: int) -> None:
    """The split's pairs (validate() puts them in env_config) use environment ids of the mazes."""
    env_ids = [int(env_id) for env_id, _ in pairs or ()]
    if env_ids and max(env_ids) >= num_mazes:
        raise ValueError(
            f"env_config.gridworld.mazes holds {num_mazes} mazes, but the split has pairs of environment "
            f"{max(env_ids)}: expected a split of {num_mazes} environments, e.g. split: "
            f"{{random: {{num_envs: {num_mazes}, num_seen: ...}}}}"
        )


def _keyword_options(cls: type) -> set[str]:
    parameters = inspect.signature(cls.__init__).parameters.values()
    return {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}


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


def _is_tune_search(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in TUNE_SEARCH_KEYS


def lr_schedule_note(name: str, spec: dict) -> str | None:
    """A note when the experiment's learning-rate schedule over training seconds ends before its
    ``time_total_s`` budget (as after ``--stop`` lengthens a run): the rate then stays at the
    schedule's last value for the rest of the run. None when they agree or do not apply."""
    from rllib_synpo.algorithms.synpo.synpo import TRAINING_SECONDS

    config, stop = spec.get("config") or {}, spec.get("stop") or {}
    budget, schedule = stop.get("time_total_s"), config.get("lr")
    # The file's checks have passed: ``lr`` is a number, a Tune search or a valid schedule.
    if config.get("lr_schedule_clock") != TRAINING_SECONDS or not is_number(budget):
        return None
    if not isinstance(schedule, list):
        return None
    end, last_rate = schedule[-1]
    if not 0 < end < budget:  # a one-point schedule is a constant rate
        return None
    stretched = [[_number(time * budget / end), rate] for time, rate in schedule]
    return (
        f"note: experiment {name!r}: its lr schedule ends at {end:g} training seconds, before "
        f"stop time_total_s {budget:g}; the learning rate stays at {last_rate:g} from there "
        f"(the same schedule stretched to the new end: --config '{json.dumps({'lr': stretched})}')"
    )


def _number(value: float) -> int | float:
    """``value`` to 6 significant digits, as an int when it is whole (for a JSON line)."""
    rounded = float(f"{value:.6g}")
    return int(rounded) if rounded.is_integer() else rounded


def experiment_config(spec: dict) -> dict:
    """An experiment's ``config`` in AlgorithmConfig's dict keys, with its ``env``, and the
    files it names made absolute (`with_absolute_paths`)."""
    settings = (spec.get("config") or {}).items()
    config = {CONFIG_ALIASES.get(key, key): value for key, value in settings}
    if "env" in spec:
        config["env"] = spec["env"]
    return with_absolute_paths(config)


def with_absolute_paths(config: dict) -> dict:
    """``config`` with the relative paths of `PATH_SETTINGS` (in any grid or choice of values)
    made absolute against the working directory: Tune runs each trial in its own folder."""
    for keys in PATH_SETTINGS:
        config = _map_setting(config, keys, _absolute_path)
    return config


def _map_setting(value: Any, keys: tuple[str, ...], transform) -> Any:
    """``value`` with ``transform`` applied to the setting at ``keys``, through every option of
    a search space on the way."""
    if _is_tune_search(value) and isinstance(next(iter(value.values())), list):
        ((kind, options),) = value.items()
        return {kind: [_map_setting(option, keys, transform) for option in options]}
    if not keys:
        return transform(value)
    if not isinstance(value, dict) or keys[0] not in value:
        return value
    return {**value, keys[0]: _map_setting(value[keys[0]], keys[1:], transform)}


def _absolute_path(value: Any) -> Any:
    """A path, or a list of paths, made absolute; any other value as it is."""
    if isinstance(value, list):
        return [_absolute_path(item) for item in value]
    if isinstance(value, str) and value:
        return str(Path(value).expanduser().absolute())
    return value


def trial_resources(spec: dict) -> dict[str, float]:
    """The most CPUs and GPUs one trial of an experiment asks for over its grid combinations,
    as RLlib requests them (`Algorithm.default_resource_request`: the main process, env runners,
    learners); a setting drawn from a random search space counts at RLlib's default."""
    algo_class = algorithm_class(spec["run"])
    most = {"CPU": 1.0, "GPU": 0.0}
    for variant, _ in grid_variants(experiment_config(spec)):
        with warnings.catch_warnings():  # RLlib's notes on validating a config
            warnings.simplefilter("ignore")
            request = algo_class.default_resource_request(_without_search(variant)).required_resources
        most = {kind: max(amount, float(request.get(kind, 0))) for kind, amount in most.items()}
    return most


def _without_search(config: dict) -> dict:
    """``config`` without the settings drawn from random search spaces (at any depth)."""
    return {
        key: _without_search(value) if isinstance(value, dict) else value
        for key, value in config.items()
        if not _is_tune_search(value)
    }
