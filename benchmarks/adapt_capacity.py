r"""Can a trained network express a maze through its environment embedding alone?

`rllib synpo adapt` learns only fresh embedding rows for new mazes; when they fail, is it the
optimization of those rows or the frozen rest of the network? This benchmark draws fresh rows
for a few environments the checkpoint was trained on ("known", their old rows thrown away) and
for a few it never saw ("new"), learns only those rows from one expert demonstration per
(environment, trained task) pair, exactly as the adaptation does, and reports for each group
how well the rows fit their own demonstrations and the greedy AvgSR on those pairs (before
for the known group too). Known mazes that come back to their old AvgSR while new ones stay
low mean the frozen network cannot express the new mazes.

    python benchmarks/adapt_capacity.py CHECKPOINT --iterations 3000 --lr 1e-2 \
        --out results/transfer/capacity.json
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from synpo_envs.gridworld.mazes import resolve_mazes

from rllib_synpo.adaptation import (
    AdaptConfig,
    collect_demonstrations,
    demonstration_batch,
    learn_rows,
    renew_embedding,
)
from rllib_synpo.checkpoint import read_gridworld_checkpoint
from rllib_synpo.evaluation import evaluate, torch_greedy_policy

GROUP_SIZE = 5  # environments per group unless given


def demonstration_accuracy(module, demos: dict[str, np.ndarray], chunk: int = 4096) -> float:
    """Share of demonstration states where the greedy action is the expert's."""
    hits = []
    with torch.no_grad():
        for start in range(0, len(demos["reward"]), chunk):
            batch = demonstration_batch(demos, np.arange(start, min(start + chunk, len(demos["reward"]))))
            logits = module.forward_inference(batch)["action_dist_inputs"]
            hits.append((logits.argmax(-1) == batch["expert_action"]).float().numpy())
    return float(np.concatenate(hits).mean())


def relearn(
    module, envs: Sequence[int], tasks: Sequence[int], world: dict, config: AdaptConfig, episodes: int
) -> dict:
    """Fresh rows for ``envs`` (on a copy of ``module``), learnt from one demonstration per pair."""
    module = copy.deepcopy(module)
    net = module.net
    pairs = [(e, t) for e in envs for t in tasks]
    before = evaluate(torch_greedy_policy(net), pairs, episodes, seed=config.seed, env_kwargs=world).summary()
    grown, _ = renew_embedding(
        net.env_embedding, net.env_embedding.num_embeddings, envs, torch.Generator().manual_seed(config.seed)
    )
    net.env_embedding = grown
    demos = collect_demonstrations(pairs, world, seed=config.seed)
    start = time.perf_counter()
    log = learn_rows(module, {"env_embedding": list(envs)}, demos, world, config)
    after = evaluate(torch_greedy_policy(net), pairs, episodes, seed=config.seed, env_kwargs=world).summary()
    return {
        "envs": list(envs),
        "pairs": len(pairs),
        "demonstration_states": len(demos["reward"]),
        "avg_success_rate_before": before["avg_success_rate"],
        "avg_success_rate_after": after["avg_success_rate"],
        "demonstration_accuracy": demonstration_accuracy(module, demos),
        "final_policy_loss": log[-1]["policy_loss"] if log else None,
        "train_seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint")
    parser.add_argument(
        "--known",
        type=int,
        nargs="*",
        help=f"trained environments to re-learn (default: the first {GROUP_SIZE})",
    )
    parser.add_argument(
        "--new",
        type=int,
        nargs="*",
        help=f"untrained environments to learn (default: the first {GROUP_SIZE})",
    )
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--episodes", type=int, default=5, help="greedy episodes per pair")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="JSON file for the results")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    _, module, split, gridworld = read_gridworld_checkpoint(args.checkpoint)
    world = {**gridworld, "mazes": resolve_mazes(gridworld.get("mazes"))}
    trained_envs = sorted({e for e, _ in split.seen})
    tasks = sorted({t for _, t in split.seen})
    untrained = [e for e in range(len(world["mazes"])) if e not in trained_envs]
    groups = {
        "known": args.known if args.known is not None else trained_envs[:GROUP_SIZE],
        "new": args.new if args.new is not None else untrained[:GROUP_SIZE],
    }
    for name, envs in groups.items():
        outside = [e for e in envs if not 0 <= e < len(world["mazes"])]
        if outside:
            raise SystemExit(
                f"--{name}: environments {outside} are not ids of the checkpoint's "
                f"{len(world['mazes'])} mazes (0..{len(world['mazes']) - 1})"
            )
        wrong = [e for e in envs if (e in trained_envs) != (name == "known")]
        if wrong:
            raise SystemExit(
                f"--{name}: environments {wrong} are {'not ' if name == 'known' else ''}"
                f"in the checkpoint's seen pairs {trained_envs}"
            )
    config = AdaptConfig(iterations=args.iterations, lr=args.lr, seed=args.seed)
    results = {"checkpoint": str(args.checkpoint), "tasks": tasks, "config": vars(args)}
    for name, envs in groups.items():
        if envs:
            results[name] = relearn(module, envs, tasks, world, config, args.episodes)
            r = results[name]
            print(
                f"{name:5s} envs {envs}: demonstration accuracy {100 * r['demonstration_accuracy']:.1f}%, "
                f"AvgSR {100 * r['avg_success_rate_before']:.1f}% before -> "
                f"{100 * r['avg_success_rate_after']:.1f}% after",
                flush=True,
            )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
