"""Seconds for a full greedy evaluation (every pair of the 20 x 20 gridworld, ``--episodes``
per pair) of saved weights, with looping episodes ended early (the default) and run out.

    python benchmarks/evaluation_speed.py results/curves/R_norm_wd1e-4_80min.pt --no-batch-norm --episodes 100 --threads 2

The weights are a `benchmarks/learning_speed.py` ``.pt`` of `best_recipe`'s network
(``--no-normalize-embeddings`` for runs made without ``--normalize-embeddings``, such as L;
``--no-batch-norm`` for runs made without ``--batch-norm``, such as R and L).
"""

from __future__ import annotations

import argparse
import time

import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.splits import random_split

from rllib_synpo.budgeted import best_recipe
from rllib_synpo.direct import network_for
from rllib_synpo.evaluation import evaluate, torch_greedy_policy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights")
    p.add_argument("--episodes", type=int, default=100, help="episodes per pair")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--feature-dim", type=int, default=best_recipe().feature_dim)
    p.add_argument("--normalize-embeddings", action=argparse.BooleanOptionalAction, default=True,
                   help="the weights' network feeds unit-length embeddings to alpha/beta (as best_recipe)")
    p.add_argument("--batch-norm", action=argparse.BooleanOptionalAction, default=True,
                   help="the weights' compact encoder has BatchNorm (as best_recipe)")
    p.add_argument("--also-run-out", action="store_true", help="also time the evaluation that runs every episode out")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = best_recipe(
        feature_dim=args.feature_dim,
        network_kwargs={"normalize_embeddings": args.normalize_embeddings},
        encoder_kwargs={"batch_norm": args.batch_norm},
    )
    net = network_for(recipe, BatchedGridWorld(1).grid_spec)
    net.load_state_dict(torch.load(args.weights))
    pairs = list(random_split(seed=0).all_pairs)
    seconds = {}
    for deterministic in (True, False) if args.also_run_out else (True,):
        start = time.perf_counter()
        results = evaluate(torch_greedy_policy(net), pairs, args.episodes, seed=0, deterministic=deterministic)  # the paper's observation
        seconds[deterministic] = time.perf_counter() - start
        label = "loops ended early" if deterministic else "every episode run out"
        print(f"{label:22s} {seconds[deterministic]:7.1f} s  {results.episodes.sum()} episodes, "
              f"AvgSR {results.success_rate.mean():.4f}, {torch.get_num_threads()} threads")
    if len(seconds) == 2:
        print(f"speed-up {seconds[False] / seconds[True]:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
