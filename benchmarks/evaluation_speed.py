"""Seconds for a full greedy evaluation (every pair of the 20 x 20 gridworld, ``--episodes``
per pair) of a SynPo checkpoint, with looping episodes ended early (the default) and run out.

    python benchmarks/evaluation_speed.py CHECKPOINT --episodes 100 --threads 2

CHECKPOINT is a SynPo checkpoint or a trial folder of ``rllib train file`` (its newest
checkpoint); the network, split and observation are the checkpoint's own.
"""

from __future__ import annotations

import argparse
import time

import torch

from rllib_synpo.checkpoint import load_checkpoint
from rllib_synpo.evaluation import evaluate, torch_greedy_policy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a SynPo checkpoint, or a folder holding one (its newest is used)")
    p.add_argument("--episodes", type=int, default=100, help="episodes per pair")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument(
        "--also-run-out", action="store_true", help="also time the evaluation that runs every episode out"
    )
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    net, split, gridworld = load_checkpoint(args.checkpoint)
    pairs = list(split.all_pairs)
    seconds = {}
    for deterministic in (True, False) if args.also_run_out else (True,):
        start = time.perf_counter()
        results = evaluate(
            torch_greedy_policy(net),
            pairs,
            args.episodes,
            seed=0,
            env_kwargs=gridworld,
            deterministic=deterministic,
        )
        seconds[deterministic] = time.perf_counter() - start
        label = "loops ended early" if deterministic else "every episode run out"
        print(
            f"{label:22s} {seconds[deterministic]:7.1f} s  {results.episodes.sum()} episodes, "
            f"AvgSR {results.success_rate.mean():.4f}, {torch.get_num_threads()} threads"
        )
    if len(seconds) == 2:
        print(f"speed-up {seconds[False] / seconds[True]:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
