"""``rllib synpo adapt``: embeddings of new environments and tasks learnt from one
demonstration per pair (the paper's settings 2 and 3)."""

from __future__ import annotations

import argparse

from rllib_synpo.cli.errors import UsageError, check_output_folder


def adapt_command(args: argparse.Namespace) -> int:
    from rllib_synpo.checkpoint import read_gridworld_meta

    check_output_folder(args.out, "--out")
    read_gridworld_meta(args.checkpoint)  # a missing or damaged one named before torch loads
    from rllib_synpo.adaptation import AdaptConfig, AdaptError, adapt_checkpoint

    config = AdaptConfig(
        setting=args.setting,
        iterations=args.iterations,
        batch_size=args.batch_size,
        lr=args.lr,
        episodes_per_pair=args.episodes_per_pair,
        seed=args.seed,
        new_mazes=list(args.new_maze),
        new_env_rows=args.new_env_rows,
    )
    try:
        progress = _adapt_progress(args.iterations)
        summary = adapt_checkpoint(args.checkpoint, config, out=args.out, progress=progress)
    except AdaptError as err:
        raise UsageError(str(err)) from None
    print(
        f"new environments {summary['new_envs']}, new tasks {summary['new_tasks']}, "
        f"{summary['demonstrated_pairs']} demonstrated pairs, {args.iterations} iterations"
    )
    for column, value in summary["table_avg_success_rate_percent"].items():
        print(f"{column:22s} AvgSR {'-' if value is None else f'{value:5.1f}%'}")
    print(f"wrote {args.out}/transfer_table.csv, summary.json, heatmap.png ({summary['seconds']:.0f} s)")
    return 0


def _adapt_progress(iterations: int):
    def report(row: dict) -> None:
        print(
            f"iteration {row['iteration']}/{iterations}: policy loss {row['policy_loss']:.3f}, "
            f"action accuracy on the demonstrations {100 * row['action_accuracy']:.1f}%",
            flush=True,
        )

    return report
