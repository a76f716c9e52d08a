"""Transfer to new environments and tasks (the paper's settings 2 and 3), without Ray.

A trained SynPo checkpoint is loaded; every environment and task that none of its seen pairs
covers is *new* (e.g. envs 10-19 and tasks 10-19 of a checkpoint trained on
`transfer_split`'s P quadrant), and so is every maze file the user brings (appended as
environments ``num_envs, num_envs + 1, ...``). New environments and tasks get fresh, seeded
embedding rows (N(0, 1), `nn.Embedding`'s own initialization); every other parameter, and the
old rows, stay frozen. Only the new rows learn, by imitation (the network's own loss terms) from
one expert demonstration per pair of the setting's quadrants:

- setting 2: the cross quadrants, (new env, old task) and (old env, new task);
- setting 3: (new env, new task).

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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.mazes import Maze, load_mazes, resolve_mazes
from synpo_envs.splits import TRANSFER_SETTINGS, Split
from torch import nn

from rllib_synpo.checks import NON_NEGATIVE_INT, NON_NEGATIVE_NUMBER, POSITIVE_INT, POSITIVE_NUMBER, bad_setting

Pair = tuple[int, int]
# The paper's table: column -> (environment is new, task is new).
TABLE_COLUMNS = {"cross (Q env, P task)": (True, False), "cross (P env, Q task)": (False, True), "Q pairs": (True, True)}
PAPER_ITERATIONS = 10_000
LOG_EVERY = 100
PROGRESS_EVERY = 1000  # iterations between progress reports (and the last one)


class AdaptError(ValueError):
    """An adaptation request that cannot be met (bad setting, nothing new, bad maze)."""


@dataclass
class AdaptConfig:
    """Knobs of `adapt_checkpoint` (defaults: the paper's loss weights, Adam lr 1e-3)."""

    setting: int = 2
    iterations: int = PAPER_ITERATIONS
    batch_size: int = 256  # demonstration states per update
    lr: float = 1e-3
    l1: float = 0.01
    l2: float = 0.1
    l3: float = 0.001
    episodes_per_pair: int = 100  # evaluation
    seed: int = 0
    new_mazes: list[str] = field(default_factory=list)  # maze files: extra environments

    def check(self) -> None:
        if self.setting not in TRANSFER_SETTINGS:
            raise AdaptError(f"setting must be one of {TRANSFER_SETTINGS}, got {self.setting!r}")
        error = bad_setting(vars(self), {
            NON_NEGATIVE_INT: ("iterations",),
            POSITIVE_INT: ("batch_size", "episodes_per_pair"),
            POSITIVE_NUMBER: ("lr",),
            NON_NEGATIVE_NUMBER: ("l1", "l2", "l3"),
        })
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

    def demonstrated_pairs(self, setting: int) -> list[Pair]:
        """The pairs that get one demonstration: setting 2 the cross quadrants, setting 3 Q."""
        if setting == 2:
            wanted = [(True, False), (False, True)]
            if not (self.envs or self.tasks):
                raise AdaptError("setting 2 needs a new environment or a new task; the checkpoint's seen pairs cover all and no maze file was given")
        else:
            wanted = [(True, True)]
            if not (self.envs and self.tasks):
                raise AdaptError(f"setting 3 needs new environments and new tasks; new environments {list(self.envs)}, new tasks {list(self.tasks)}")
        return [(e, t) for e in range(self.num_envs) for t in range(self.num_tasks) if self.is_new((e, t)) in wanted]


def new_ids(seen: Sequence[Pair], num_old_envs: int, num_tasks: int, num_added_envs: int) -> NewIds:
    """Environments and tasks in no seen pair, plus the added environments."""
    seen_envs, seen_tasks = {e for e, _ in seen}, {t for _, t in seen}
    envs = [e for e in range(num_old_envs) if e not in seen_envs] + list(range(num_old_envs, num_old_envs + num_added_envs))
    tasks = [t for t in range(num_tasks) if t not in seen_tasks]
    return NewIds(num_old_envs + num_added_envs, num_tasks, tuple(envs), tuple(tasks))


def renew_embedding(embedding: nn.Embedding, num_rows: int, new_rows: Sequence[int], generator: torch.Generator) -> tuple[nn.Embedding, torch.Tensor]:
    """An embedding of ``num_rows`` rows: the old rows copied, the ``new_rows`` (old or appended)
    drawn afresh; only the new rows receive gradients. Returns (embedding, new-row mask)."""
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
    grown.weight.register_hook(lambda grad: grad * mask.to(grad.device, grad.dtype).unsqueeze(-1))
    return grown, mask


def freeze_all_but(net: nn.Module, trainable: Sequence[nn.Parameter]) -> None:
    """Only the ``trainable`` parameters of ``net`` receive gradients."""
    for parameter in net.parameters():
        parameter.requires_grad_(any(parameter is p for p in trainable))


def collect_demonstrations(pairs: Sequence[Pair], env_kwargs: dict, seed: int) -> dict[str, np.ndarray]:
    """One expert episode per pair (seeded starts): every step's observation, ids, expert
    action and reward."""
    env = BatchedGridWorld(len(pairs), **env_kwargs)
    obs, info = env.reset(seed=seed, options={"pairs": list(pairs)})
    active = np.ones(len(pairs), bool)
    steps: dict[str, list[np.ndarray]] = {"obs": [], "env_id": [], "task_id": [], "expert_action": [], "reward": []}
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


def demonstration_batch(demos: dict[str, np.ndarray], rows: np.ndarray) -> dict:
    """The learner's batch columns for the demonstration states ``rows``."""
    from ray.rllib.core.columns import Columns

    from rllib_synpo.learner import EXECUTED_ACTION, EXPERT_ACTION

    expert = torch.as_tensor(demos["expert_action"][rows]).long()
    return {
        Columns.OBS: {key: torch.as_tensor(demos[key][rows]) for key in ("obs", "env_id", "task_id")},
        EXPERT_ACTION: expert,
        EXECUTED_ACTION: expert,
        Columns.REWARDS: torch.as_tensor(demos["reward"][rows]),
    }


def train_new_embeddings(
    module, demos: dict[str, np.ndarray], config: AdaptConfig, trainable: list[nn.Parameter], progress: Callable[[dict], None] | None = None
) -> list[dict]:
    """``config.iterations`` Adam steps on the network's loss terms over random demonstration
    states (seeded); only ``trainable`` moves (its frozen rows get zero gradients). ``progress``
    gets the log row every `PROGRESS_EVERY` iterations and at the end."""
    from rllib_synpo.learner import synpo_loss_terms
    from rllib_synpo.losses import TOTAL_LOSS, LossWeights

    rng = np.random.default_rng(config.seed)
    optimizer = torch.optim.Adam(trainable, lr=config.lr)  # no weight decay: frozen rows stay put
    weights = LossWeights(config.l1, config.l2, config.l3)
    module.eval()  # normalization statistics are frozen too
    log = []
    for iteration in range(1, config.iterations + 1):
        batch = demonstration_batch(demos, rng.integers(len(demos["reward"]), size=config.batch_size))
        fwd_out = module.forward_train(batch)
        terms = synpo_loss_terms(module, batch, fwd_out, weights)
        optimizer.zero_grad()
        terms[TOTAL_LOSS].backward()
        optimizer.step()
        if iteration % LOG_EVERY == 0 or iteration == config.iterations:
            with torch.no_grad():
                accuracy = (fwd_out["action_dist_inputs"].argmax(-1) == batch["expert_action"]).float().mean()
            log.append({"iteration": iteration, **{k: float(v.detach()) for k, v in terms.items()}, "action_accuracy": float(accuracy)})
            if progress is not None and (iteration % PROGRESS_EVERY == 0 or iteration == config.iterations):
                progress(log[-1])
    return log


def transfer_table(matrix: np.ndarray, ids: NewIds) -> dict[str, float | None]:
    """AvgSR (%) of the paper's three columns (None where a column has no pair)."""
    table = {}
    for column, wanted in TABLE_COLUMNS.items():
        values = [matrix[e, t] for e in range(ids.num_envs) for t in range(ids.num_tasks) if ids.is_new((e, t)) == wanted]
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
    """A loaded checkpoint whose new embedding rows are drawn and are the only trainable part."""

    checkpoint: Path
    module: object  # the SynPo RLModule (its ``net`` carries the grown embeddings)
    split: Split  # the checkpoint's training split
    ids: NewIds
    demonstrated: list[Pair]
    world: dict  # gridworld kwargs with every maze, old and added
    trainable: list[nn.Parameter]


def prepare(checkpoint: str | Path, config: AdaptConfig) -> Adaptation:
    """Loads the checkpoint, adds the new environments' mazes, draws the new rows (seeded) and
    freezes everything else."""
    from rllib_synpo.evaluate import read_gridworld_checkpoint

    config.check()
    path, module, split, gridworld = read_gridworld_checkpoint(checkpoint)
    net = module.net
    old_mazes, added = _world_mazes(gridworld, config.new_mazes)
    if net.env_embedding.num_embeddings != len(old_mazes):
        raise AdaptError(f"{path}: the network has {net.env_embedding.num_embeddings} environment rows but its gridworld {len(old_mazes)} mazes")
    ids = new_ids(split.seen, len(old_mazes), net.task_embedding.num_embeddings, len(added))
    demonstrated = ids.demonstrated_pairs(config.setting)
    generator = torch.Generator().manual_seed(config.seed)
    trainable = []
    for name, rows, total in (("env_embedding", ids.envs, ids.num_envs), ("task_embedding", ids.tasks, ids.num_tasks)):
        if rows:
            grown, _ = renew_embedding(getattr(net, name), total, rows, generator)
            setattr(net, name, grown)
            trainable.append(grown.weight)
    freeze_all_but(net, trainable)
    return Adaptation(path, module, split, ids, demonstrated, {**gridworld, "mazes": old_mazes + added}, trainable)


def adapt_checkpoint(
    checkpoint: str | Path, config: AdaptConfig, out: str | Path = "adaptation", progress: Callable[[dict], None] | None = None
) -> dict:
    """`prepare`, one demonstration per pair, train the new rows (``progress``: see
    `train_new_embeddings`), evaluate the whole matrix, write ``out``; returns the summary."""
    from rllib_synpo.evaluate import success_matrix, write_heatmap
    from rllib_synpo.evaluation import evaluate, torch_greedy_policy

    start = time.perf_counter()
    a = prepare(checkpoint, config)
    ids, net = a.ids, a.module.net
    demos = collect_demonstrations(a.demonstrated, a.world, seed=config.seed)
    log = train_new_embeddings(a.module, demos, config, a.trainable, progress)
    every_pair = [(e, t) for e in range(ids.num_envs) for t in range(ids.num_tasks)]
    results = evaluate(torch_greedy_policy(net), every_pair, config.episodes_per_pair, seed=config.seed, env_kwargs=a.world)

    world_split = Split(ids.num_envs, ids.num_tasks, a.split.seen, tuple(a.demonstrated), name=f"setting{config.setting}")
    matrix = success_matrix(results, world_split)
    table = transfer_table(matrix, ids)
    summary = {
        "checkpoint": str(a.checkpoint), "config": asdict(config), "new_envs": list(ids.envs), "new_tasks": list(ids.tasks),
        "demonstrated_pairs": len(a.demonstrated), "demonstration_states": len(demos["reward"]),
        "table_avg_success_rate_percent": table, "final_losses": log[-1] if log else None,
        "seconds": time.perf_counter() - start,
    }
    out = Path(out)
    _write(out, summary, table, matrix, world_split, log, net)
    title = ", ".join(f"{k} {v:.1f}%" for k, v in table.items() if v is not None)
    write_heatmap(matrix, world_split, out / "heatmap.png", f"setting {config.setting}: {title}")
    demonstrated = Split(ids.num_envs, ids.num_tasks, tuple(a.demonstrated))
    write_heatmap(matrix, demonstrated, out / "heatmap_demonstrated.png", f"setting {config.setting}, demonstrated pairs boxed")
    return summary


def _write(out: Path, summary: dict, table: dict, matrix: np.ndarray, split: Split, log: list[dict], net: nn.Module) -> None:
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    pd.DataFrame([table]).to_csv(out / "transfer_table.csv", index=False)
    cells = " | ".join("-" if v is None else f"{v:.1f}" for v in table.values())
    (out / "transfer_table.md").write_text(f"| {' | '.join(table)} |\n|{'---|' * len(table)}\n| {cells} |\n")
    pd.DataFrame(matrix, index=pd.Index(range(split.num_envs), name="env_id"), columns=[f"task_{t}" for t in range(split.num_tasks)]).to_csv(out / "success_matrix.csv")
    pd.DataFrame(log).to_csv(out / "adapt_log.csv", index=False)
    torch.save(net.state_dict(), out / "adapted_network.pt")
