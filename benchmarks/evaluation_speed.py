"""Seconds for a full greedy evaluation (every pair of the 20 x 20 gridworld, ``--episodes``
per pair) of saved weights, with looping episodes ended early (the default) and run out.

    python benchmarks/evaluation_speed.py results/curves/RB_bn_80min.pt --episodes 100 --threads 2

The weights are a `benchmarks/learning_speed.py` run's ``.pt``; its network, split and
observation come from the command line recorded in the ``.json`` beside it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from rllib_synpo.evaluation import evaluate, torch_greedy_policy

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling
from saved_run import WEIGHTS_HELP, load_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", help=WEIGHTS_HELP)
    p.add_argument("--episodes", type=int, default=100, help="episodes per pair")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--also-run-out", action="store_true", help="also time the evaluation that runs every episode out")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    run = load_run(args.weights)
    net, pairs = run.network(), list(run.split.all_pairs)
    seconds = {}
    for deterministic in (True, False) if args.also_run_out else (True,):
        start = time.perf_counter()
        results = evaluate(torch_greedy_policy(net), pairs, args.episodes, seed=0, env_kwargs=run.config.env_kwargs, deterministic=deterministic)
        seconds[deterministic] = time.perf_counter() - start
        label = "loops ended early" if deterministic else "every episode run out"
        print(f"{label:22s} {seconds[deterministic]:7.1f} s  {results.episodes.sum()} episodes, "
              f"AvgSR {results.success_rate.mean():.4f}, {torch.get_num_threads()} threads")
    if len(seconds) == 2:
        print(f"speed-up {seconds[False] / seconds[True]:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
