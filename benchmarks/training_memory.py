"""Resident memory of a training run with periodic evaluations, with the heap's free pages
released after each evaluation (`rllib_synpo.utils.heap`, the default) and kept, each in a fresh
process, in one run.

    python benchmarks/training_memory.py [--experiment tuned_examples/synpo_gridworld.yaml] \
        [--iterations 800] [--every 100] [--threads 2]

The experiment's `SynPo` is trained in a plain `algo.train()` loop (no Tune) with
``algo.evaluate()`` every ``--every`` iterations; after each evaluation the process's resident
memory (Linux's /proc) and the mean seconds of the iterations since the last evaluation are
printed for both.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling
from rllib_throughput import DEFAULT_EXPERIMENT, synpo_config  # noqa: E402

MODES = ("released", "kept")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--experiment", default=str(DEFAULT_EXPERIMENT), help="an experiment file with one SynPo experiment"
    )
    parser.add_argument("--iterations", type=int, default=800, help="training iterations per process")
    parser.add_argument("--every", type=int, default=100, help="iterations between evaluations")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # the child process's
    return parser


def run_mode(args: argparse.Namespace) -> None:
    """The child process: trains, evaluates every ``args.every`` iterations, prints a JSON line
    after each evaluation."""
    import ray
    import torch

    from rllib_synpo import evaluation  # noqa: F401
    from rllib_synpo.utils.heap import resident_memory_mb

    if args.mode == "kept":
        evaluation.release_free_heap = lambda: False
    torch.set_num_threads(args.threads)
    ray.init(address="local", num_cpus=args.threads, include_dashboard=False, log_to_driver=False)
    algo = synpo_config(args.experiment).build_algo()
    seconds = 0.0
    for iteration in range(1, args.iterations + 1):
        start = time.perf_counter()
        algo.train()
        seconds += time.perf_counter() - start
        if iteration % args.every == 0:
            algo.evaluate()
            print(
                json.dumps(
                    {"iteration": iteration, "rss_mb": resident_memory_mb(), "seconds": seconds / args.every}
                ),
                flush=True,
            )
            seconds = 0.0
    algo.stop()
    ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.iterations < args.every or args.every < 1:
        raise SystemExit(
            f"need 1 <= --every <= --iterations, got --every {args.every} --iterations {args.iterations}"
        )
    if args.mode:
        run_mode(args)
        return 0
    rows = {}
    for mode in MODES:
        child = [
            sys.executable,
            __file__,
            "--mode",
            mode,
            "--experiment",
            args.experiment,
            "--iterations",
            str(args.iterations),
            "--every",
            str(args.every),
            "--threads",
            str(args.threads),
        ]
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        rows[mode] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    print(
        f"{Path(args.experiment).name}: an evaluation every {args.every} iterations, {args.threads} threads"
    )
    print("iteration  rss released MB  rss kept MB  released/kept  s/iter released  s/iter kept")
    for released, kept in zip(rows["released"], rows["kept"]):
        print(
            f"{released['iteration']:9d}  {released['rss_mb']:14,.0f}  {kept['rss_mb']:11,.0f}  "
            f"{released['rss_mb'] / kept['rss_mb']:13.2f}"
            f"  {released['seconds']:15.3f}  {kept['seconds']:11.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
