"""Transfer to new environments and tasks (the paper's settings 2 and 3), without a Ray cluster.

A trained SynPo checkpoint is loaded; every environment and task that none of its seen pairs
covers is *new* (e.g. envs 10-19 and tasks 10-19 of a checkpoint trained on
`transfer_split`'s P quadrant), and so is every maze file the user brings (appended as
environments ``num_envs, num_envs + 1, ...``). New environments and tasks get fresh, seeded
embedding rows (N(0, 1), `nn.Embedding`'s own initialization), or with ``new_env_rows:
unknown`` each new environment starts from the network's unknown-environment embedding (a SynPo
network trained with ``env_dropout``); a network with wall maps (``maze_map``) also learns each
new environment's map row, starting from the trained mazes' mean map. Every other parameter and
buffer, and the old rows, stay frozen. Only the new rows learn, by imitation (the network's own
loss terms) from one expert demonstration per pair of the setting's quadrants:

- setting 2: the cross quadrants, (new env, old task) and (old env, new task);
- setting 3: (new env, new task).

The updates are those of SynPo's RLlib learner
(`rllib_synpo.algorithms.synpo.torch.synpo_torch_learner.SynPoTorchLearner`, the one `SynPo`
trains with), built locally from a `SynPoConfig` of the checkpoint whose ``learner_config_dict``
names the rows to train (`ADAPT_ROWS_KEY`); the batches are built as `SynPo`'s are, from random
demonstration states.

Then the whole matrix is evaluated greedily. Written to ``out``: ``summary.json``,
``transfer_table.csv`` / ``.md`` (the paper's three columns: cross (Q env, P task),
cross (P env, Q task), Q pairs; AvgSR in %), ``success_matrix.csv``, ``heatmap.png`` (trained
pairs boxed), ``heatmap_demonstrated.png`` (demonstrated pairs boxed), ``adapt_log.csv`` and
``adapted_network.pt`` (the network's state dict).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.mazes import Maze, load_mazes, resolve_mazes
from synpo_envs.splits import TRANSFER_SETTINGS, Split
from torch import nn

from rllib_synpo.losses import LossWeights
from rllib_synpo.utils.checks import (
    NON_NEGATIVE_INT,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    bad_setting,
)
from rllib_synpo.utils.denormals import flush_denormals_where_wanted

if TYPE_CHECKING:
    from rllib_synpo.algorithms.synpo.synpo import SynPoConfig
    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import SynPoTorchLearner
    from rllib_synpo.rl_module import SynPoTorchRLModule

Pair = tuple[int, int]
# Embedding name (an ``nn.Embedding`` of the network) -> the row ids that train.
Rows = Mapping[str, Sequence[int]]
# The paper's table: column -> (environment is new, task is new).
TABLE_COLUMNS = {
    "cross (Q env, P task)": (True, False),
    "cross (P env, Q task)": (False, True),
    "Q pairs": (True, True),
}
PAPER_ITERATIONS = 10_000
LOG_EVERY = 100
PROGRESS_EVERY = 1000  # iterations between progress reports (and the last one)
# Where a new environment's embedding row starts: drawn from N(0, 1), or the network's
# unknown-environment embedding (`SynPoNetwork.unknown_env`).
NEW_ENV_ROWS = ("random", "unknown")
_PAPER_WEIGHTS = LossWeights()  # the loss weights' defaults live in `LossWeights` alone


class AdaptError(ValueError):
    """An adaptation request that cannot be met (bad setting, nothing new, bad maze)."""


@dataclass
class AdaptConfig:
    """Knobs of `adapt_checkpoint` (defaults: the paper's loss weights, Adam lr 1e-3)."""

    setting: int = 2
    iterations: int = PAPER_ITERATIONS
    batch_size: int = 256  # demonstration states per update
    lr: float = 1e-3
    l1: float = _PAPER_WEIGHTS.l1
    l2: float = _PAPER_WEIGHTS.l2
    l3: float = _PAPER_WEIGHTS.l3
    episodes_per_pair: int = 100  # evaluation
    seed: int = 0
    new_mazes: list[str] = field(default_factory=list)  # maze files: extra environments
    new_env_rows: str = "random"  # one of NEW_ENV_ROWS

    def check(self) -> None:
        if self.setting not in TRANSFER_SETTINGS:
            raise AdaptError(f"setting must be one of {TRANSFER_SETTINGS}, got {self.setting!r}")
        if self.new_env_rows not in NEW_ENV_ROWS:
            raise AdaptError(f"new_env_rows must be one of {list(NEW_ENV_ROWS)}, got {self.new_env_rows!r}")
        error = bad_setting(
            vars(self),
            {
                NON_NEGATIVE_INT: ("iterations",),
                POSITIVE_INT: ("batch_size", "episodes_per_pair"),
                POSITIVE_NUMBER: ("lr",),
                NON_NEGATIVE_NUMBER: ("l1", "l2", "l3"),
            },
        )
        if error:
            raise AdaptError(error)


@dataclass(frozen=True)
class NewIds:
    """Which environment and task ids are new in the adapted world."""

    num_envs: int
    num_tasks: int
    envs: tuple[int, ...]
    tasks: tuple[int, ...]

    def is_new(self, pair: Pair) -> tuple[bool, bool]:
        return pair[0] in self.envs, pair[1] in self.tasks

    def rows(self, env_tables: Sequence[str] = ("env_embedding",)) -> dict[str, tuple[int, ...]]:
        """The embedding rows that learn: the new environments' (in each of the network's
        per-environment tables, `env_tables`) and the new tasks'."""
        rows = {**{name: self.envs for name in env_tables}, "task_embedding": self.tasks}
        return {name: ids for name, ids in rows.items() if ids}

    def demonstrated_pairs(self, setting: int) -> list[Pair]:
        """The pairs that get one demonstration: setting 2 the cross quadrants, setting 3 Q."""
        if setting == 2:
            wanted = [(True, False), (False, True)]
            if not (self.envs or self.tasks):
                raise AdaptError(
                    "setting 2 needs a new environment or a new task; the checkpoint's seen pairs cover all "
                    "and no maze file was given"
                )
        else:
            wanted = [(True, True)]
            if not (self.envs and self.tasks):
                raise AdaptError(
                    f"setting 3 needs new environments and new tasks; new environments {list(self.envs)}, "
                    f"new tasks {list(self.tasks)}"
                )
        pairs = [(e, t) for e in range(self.num_envs) for t in range(self.num_tasks)]
        return [pair for pair in pairs if self.is_new(pair) in wanted]


def new_ids(seen: Sequence[Pair], num_old_envs: int, num_tasks: int, num_added_envs: int) -> NewIds:
    """Environments and tasks in no seen pair, plus the added environments."""
    seen_envs, seen_tasks = {e for e, _ in seen}, {t for _, t in seen}
    added = range(num_old_envs, num_old_envs + num_added_envs)
    envs = [e for e in range(num_old_envs) if e not in seen_envs] + list(added)
    tasks = [t for t in range(num_tasks) if t not in seen_tasks]
    return NewIds(num_old_envs + num_added_envs, num_tasks, tuple(envs), tuple(tasks))


def renew_embedding(
    embedding: nn.Embedding, num_rows: int, new_rows: Sequence[int], generator: torch.Generator
) -> tuple[nn.Embedding, torch.Tensor]:
    """An embedding of ``num_rows`` rows: the old rows copied, the ``new_rows`` (old or appended)
    drawn afresh from N(0, 1) with ``generator``. Returns (embedding, new-row mask). Which rows
    then learn is the learner's business (`learn_rows`)."""
    old_rows, dim = embedding.weight.shape
    if num_rows < old_rows:
        raise AdaptError(f"cannot shrink an embedding of {old_rows} rows to {num_rows}")
    mask = torch.zeros(num_rows, dtype=torch.bool)
    mask[list(new_rows)] = True
    if not bool(mask[old_rows:].all()):
        raise AdaptError(f"rows {old_rows}..{num_rows - 1} are added, so they must all be new")
    grown = nn.Embedding(num_rows, dim).to(embedding.weight.device)
    with torch.no_grad():
        grown.weight[:old_rows] = embedding.weight.detach()
        fresh = torch.randn(num_rows, dim, generator=generator).to(grown.weight)
        grown.weight[mask] = fresh[mask]
    return grown, mask


def env_tables(net: nn.Module) -> tuple[str, ...]:
    """The network's per-environment embedding tables: e_env, and SynPo's wall maps
    (``maze_map``)."""
    return ("env_embedding",) + (("maze_map",) if getattr(net, "maze_map", None) is not None else ())


def collect_demonstrations(pairs: Sequence[Pair], env_kwargs: dict, seed: int) -> dict[str, np.ndarray]:
    """One expert episode per pair (seeded starts): every step's observation, ids, expert
    action and reward."""
    env = BatchedGridWorld(len(pairs), **env_kwargs)
    obs, info = env.reset(seed=seed, options={"pairs": list(pairs)})
    active = np.ones(len(pairs), bool)
    keys = ("obs", "env_id", "task_id", "expert_action", "reward")
    steps: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    while active.any():
        rows = np.flatnonzero(active)
        actions = info["expert_action"]
        for key in ("obs", "env_id", "task_id"):
            steps[key].append(obs[key][rows])
        steps["expert_action"].append(actions[rows])
        obs, reward, terminated, truncated, info = env.step(actions)
        steps["reward"].append(reward[rows].astype(np.float32))
        active &= ~(terminated | truncated)
    return {key: np.concatenate(values) for key, values in steps.items()}


def demonstration_sample(demos: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    """The demonstration states ``rows`` as a replay sample (`TrajectoryReplay.sample_states`'s
    keys; the expert's action is also the executed one)."""
    sample = {key: demos[key][rows] for key in ("obs", "env_id", "task_id", "expert_action", "reward")}
    return {**sample, "action": sample["expert_action"]}


def demonstration_batch(demos: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, Any]:
    """The learner's batch columns (as `SynPo` builds them) for the demonstration states
    ``rows``, as torch tensors: for forward passes outside the learner."""
    from ray.rllib.utils.torch_utils import convert_to_torch_tensor

    from rllib_synpo.algorithms.synpo.synpo import learner_batch
    from rllib_synpo.checkpoint import MODULE_ID

    columns = learner_batch(demonstration_sample(demos, rows)).policy_batches[MODULE_ID]
    return convert_to_torch_tensor(dict(columns))


def adaptation_config(
    model_config: dict, world: dict, rows: Rows, config: AdaptConfig, split: Split | None = None
) -> SynPoConfig:
    """The `SynPoConfig` whose learner trains only ``rows`` of the network ``model_config``
    builds for the gridworld ``world`` (its mazes give the environment count), at the loss
    weights and learning rate of ``config``; ``split``: the checkpoint's training split."""
    from rllib_synpo.algorithms.synpo.synpo import SynPoConfig
    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import ADAPT_ROWS_KEY

    synpo = SynPoConfig().rl_module(model_config=dict(model_config))
    synpo.training(l1=config.l1, l2=config.l2, l3=config.l3, lr=config.lr, split=split)
    synpo.environment(env_config={"gridworld": dict(world)})
    synpo.learners(learner_config_dict={ADAPT_ROWS_KEY: {name: list(ids) for name, ids in rows.items()}})
    return synpo.debugging(seed=config.seed)


def build_adaptation_learner(synpo: SynPoConfig) -> SynPoTorchLearner:
    """The local `SynPoTorchLearner` of the `adaptation_config` ``synpo`` (no Ray cluster): its
    module's spaces are those of the config's gridworld."""
    from rllib_synpo.checkpoint import MODULE_ID

    gridworld = BatchedGridWorld(1, **synpo.env_config["gridworld"])
    spaces = {MODULE_ID: (gridworld.single_observation_space, gridworld.single_action_space)}
    return synpo.build_learner(spaces=spaces)


def learn_rows(
    module: SynPoTorchRLModule,
    rows: Rows,
    demos: dict[str, np.ndarray],
    world: dict,
    config: AdaptConfig,
    *,
    split: Split | None = None,
    progress: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Trains the embedding ``rows`` of the SynPo RLModule ``module`` (in place) by
    ``config.iterations`` updates of SynPo's learner on ``config.batch_size`` random
    demonstration states each (seeded); everything else stays bit-identical (see
    `SynPoTorchLearner`). Returns the log: every `LOG_EVERY` iterations and the last, the
    learner's loss terms and action accuracy; ``progress`` gets the row every
    `PROGRESS_EVERY` iterations and at the end."""
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from rllib_synpo.algorithms.synpo.synpo import learner_batch
    from rllib_synpo.checkpoint import MODULE_ID

    learner = build_adaptation_learner(adaptation_config(module.model_config, world, rows, config, split))
    trained = learner.module[MODULE_ID].unwrapped()
    trained.load_state_dict(module.state_dict())
    rng = np.random.default_rng(config.seed)
    log = []
    try:
        for iteration in range(1, config.iterations + 1):
            sample = demonstration_sample(demos, rng.integers(len(demos["reward"]), size=config.batch_size))
            # `learner_batch`: the learner's batch exactly as SynPo training builds it.
            results = learner.update(batch=learner_batch(sample))
            if iteration % LOG_EVERY == 0 or iteration == config.iterations:
                metrics = MetricsLogger.peek_results(results)[MODULE_ID]
                losses = {name: float(value) for name, value in metrics.items() if name.endswith("_loss")}
                accuracy = float(metrics["action_accuracy"])
                log.append({"iteration": iteration, **losses, "action_accuracy": accuracy})
                last = iteration == config.iterations
                if progress is not None and (iteration % PROGRESS_EVERY == 0 or last):
                    progress(log[-1])
    finally:
        learner.shutdown()
    module.load_state_dict(trained.state_dict())
    return log


def transfer_table(matrix: np.ndarray, ids: NewIds) -> dict[str, float | None]:
    """AvgSR (%) of the paper's three columns (None where a column has no pair)."""
    table = {}
    pairs = [(e, t) for e in range(ids.num_envs) for t in range(ids.num_tasks)]
    for column, wanted in TABLE_COLUMNS.items():
        values = [matrix[pair] for pair in pairs if ids.is_new(pair) == wanted]
        table[column] = float(100 * np.mean(values)) if values else None
    return table


def _world_mazes(gridworld: dict, new_files: Sequence[str | os.PathLike]) -> tuple[list[Maze], list[Maze]]:
    old = resolve_mazes(gridworld.get("mazes"))
    try:
        added = load_mazes(list(new_files)) if new_files else []
    except FileNotFoundError as err:
        raise AdaptError(str(err)) from None
    for path, maze in zip(new_files, added):
        if maze in old:
            raise AdaptError(f"maze file {str(path)!r} is the same maze as environment {old.index(maze)}")
    return old, added


@dataclass
class Adaptation:
    """A loaded checkpoint whose embeddings are grown and whose new rows are drawn."""

    checkpoint: Path
    module: SynPoTorchRLModule  # its ``net`` carries the grown embeddings
    split: Split  # the checkpoint's training split
    ids: NewIds
    demonstrated: list[Pair]
    world: dict  # gridworld kwargs with every maze, old and added


def prepare(checkpoint: str | Path, config: AdaptConfig) -> Adaptation:
    """Loads the checkpoint, adds the new environments' mazes and grows the embeddings: the old
    rows copied, the new ones drawn from N(0, 1) (environments first, then tasks, from one
    generator seeded with ``config.seed``); with ``new_env_rows: unknown`` the new
    environments' rows are then set to the network's unknown-environment embedding."""
    from rllib_synpo.checkpoint import read_gridworld_checkpoint

    flush_denormals_where_wanted()  # before loading starts torch's threads

    config.check()
    path, module, split, gridworld = read_gridworld_checkpoint(checkpoint)
    net = module.net
    old_mazes, added = _world_mazes(gridworld, config.new_mazes)
    if net.env_embedding.num_embeddings != len(old_mazes):
        raise AdaptError(
            f"{path}: the network has {net.env_embedding.num_embeddings} environment rows but its gridworld "
            f"{len(old_mazes)} mazes"
        )
    ids = new_ids(split.seen, len(old_mazes), net.task_embedding.num_embeddings, len(added))
    demonstrated = ids.demonstrated_pairs(config.setting)
    unknown = getattr(net, "unknown_env", None)
    if config.new_env_rows == "unknown" and unknown is None:
        raise AdaptError(
            f"{path}: new_env_rows 'unknown' needs a network trained with env_dropout > 0 "
            f"(model_config {{network: synpo, env_dropout: ...}}); this {type(net).__name__} has no "
            "unknown-environment embedding"
        )
    generator = torch.Generator().manual_seed(config.seed)
    tables = env_tables(net)
    totals = {**{name: ids.num_envs for name in tables}, "task_embedding": ids.num_tasks}
    trained_envs = [env for env in range(len(old_mazes)) if env not in ids.envs]
    for name, rows in ids.rows(tables).items():
        old = getattr(net, name)
        grown, new = renew_embedding(old, totals[name], rows, generator)
        with torch.no_grad():
            if name == "env_embedding" and config.new_env_rows == "unknown":
                grown.weight[new] = unknown.detach().to(grown.weight)
            if name == "maze_map":  # a new maze's map starts from the trained mazes' mean
                grown.weight[new] = old.weight[trained_envs].detach().mean(0)
        setattr(net, name, grown)
    return Adaptation(path, module, split, ids, demonstrated, {**gridworld, "mazes": old_mazes + added})


def adapt_checkpoint(
    checkpoint: str | Path,
    config: AdaptConfig,
    out: str | Path = "adaptation",
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """`prepare`, one demonstration per pair, `learn_rows` of the new rows (``progress``: see
    there), evaluate the whole matrix, write ``out``; returns the summary."""
    from rllib_synpo.evaluation import evaluate, success_matrix, torch_greedy_policy, write_heatmap

    start = time.perf_counter()
    a = prepare(checkpoint, config)
    ids, net = a.ids, a.module.net
    demos = collect_demonstrations(a.demonstrated, a.world, seed=config.seed)
    log = learn_rows(
        a.module, ids.rows(env_tables(net)), demos, a.world, config, split=a.split, progress=progress
    )
    every_pair = [(e, t) for e in range(ids.num_envs) for t in range(ids.num_tasks)]
    policy = torch_greedy_policy(net)
    results = evaluate(policy, every_pair, config.episodes_per_pair, seed=config.seed, env_kwargs=a.world)

    setting = f"setting{config.setting}"
    world_split = Split(ids.num_envs, ids.num_tasks, a.split.seen, tuple(a.demonstrated), name=setting)
    matrix = success_matrix(results, world_split)
    table = transfer_table(matrix, ids)
    summary = {
        "checkpoint": str(a.checkpoint),
        "config": asdict(config),
        "new_envs": list(ids.envs),
        "new_tasks": list(ids.tasks),
        "demonstrated_pairs": len(a.demonstrated),
        "demonstration_states": len(demos["reward"]),
        "table_avg_success_rate_percent": table,
        "final_losses": log[-1] if log else None,
        "seconds": time.perf_counter() - start,
    }
    out = Path(out)
    _write(out, summary, table, matrix, world_split, log, net)
    title = ", ".join(f"{k} {v:.1f}%" for k, v in table.items() if v is not None)
    write_heatmap(matrix, world_split, out / "heatmap.png", f"setting {config.setting}: {title}")
    demonstrated = Split(ids.num_envs, ids.num_tasks, tuple(a.demonstrated))
    title = f"setting {config.setting}, demonstrated pairs boxed"
    write_heatmap(matrix, demonstrated, out / "heatmap_demonstrated.png", title)
    return summary


def _write(
    out: Path, summary: dict, table: dict, matrix: np.ndarray, split: Split, log: list[dict], net: nn.Module
) -> None:
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    pd.DataFrame([table]).to_csv(out / "transfer_table.csv", index=False)
    cells = " | ".join("-" if v is None else f"{v:.1f}" for v in table.values())
    (out / "transfer_table.md").write_text(f"| {' | '.join(table)} |\n|{'---|' * len(table)}\n| {cells} |\n")
    index = pd.Index(range(split.num_envs), name="env_id")
    columns = [f"task_{t}" for t in range(split.num_tasks)]
    pd.DataFrame(matrix, index=index, columns=columns).to_csv(out / "success_matrix.csv")
    pd.DataFrame(log).to_csv(out / "adapt_log.csv", index=False)
    torch.save(net.state_dict(), out / "adapted_network.pt")
