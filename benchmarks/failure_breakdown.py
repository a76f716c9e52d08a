"""Where a trained SynPo policy fails: greedy episodes on the seen and unseen pairs split into
success, no pick-up at all (wandered to the step limit), a wrong first treasure, and a right
first treasure followed by failure. The unseen pairs are also split by what the seen pairs of
their maze cover: whether some seen task of the maze starts with the pair's first colour (if
none does, "go to that colour with every treasure present" was never trained in that maze, and
neither were the maze's states without that treasure), and those that none starts by whether a
seen task of the maze picks that colour second (the agent went for it there, after another
treasure) or none holds it at all.

    python benchmarks/failure_breakdown.py CHECKPOINT [--episodes 5]

CHECKPOINT is a SynPo checkpoint or a trial folder of ``rllib train file`` (its newest
checkpoint); the network, split and observation are the checkpoint's own.
"""

from __future__ import annotations

import argparse

import numpy as np
from synpo_envs.splits import Pair, Split, first_colour_in_seen_task, uncovered_pair_subsets

from rllib_synpo.checkpoint import load_checkpoint
from rllib_synpo.evaluation import PairResults, evaluate, torch_greedy_policy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint", help="a SynPo checkpoint, or a folder holding one (its newest is used)")
    parser.add_argument("--episodes", type=int, default=5, help="episodes per pair")
    parser.add_argument("--seed", type=int, default=777)
    args = parser.parse_args(argv)
    net, split, gridworld = load_checkpoint(args.checkpoint)
    for name, pairs in (("seen", split.seen), ("unseen", split.unseen)):
        r = evaluate(
            torch_greedy_policy(net), list(pairs), args.episodes, seed=args.seed, env_kwargs=gridworld
        )
        _print_outcomes(name, r, np.ones(len(pairs), bool))
        if name == "unseen":
            covered = first_colour_covered(split, list(pairs))
            subsets = uncovered_pair_subsets(split.seen_mask())
            second = at_pairs(subsets["second_colour"], pairs)
            no_seen_task = at_pairs(subsets["no_seen_task"], pairs)
            _print_outcomes("unseen, first colour starts a seen task of the maze", r, covered)
            _print_outcomes("unseen, first colour starts no seen task of the maze", r, ~covered)
            _print_outcomes("  of them, a seen task of the maze picks it second", r, second)
            _print_outcomes("  of them, no seen task of the maze holds it", r, no_seen_task)
    return 0


def first_colour_covered(split: Split, pairs: list[Pair]) -> np.ndarray:
    """Per pair: does some seen task of the pair's maze start with the pair's first colour?"""
    return at_pairs(first_colour_in_seen_task(split.seen_mask(), position=0), pairs)


def at_pairs(mask: np.ndarray, pairs: list[Pair]) -> np.ndarray:
    """An (E, T) mask's values at ``pairs``, in their order."""
    return np.array([mask[e, t] for e, t in pairs], bool)


def _print_outcomes(name: str, r: PairResults, keep: np.ndarray) -> None:
    n, wins = r.episodes[keep].sum(), r.successes[keep].sum()
    picked, right = r.picked[keep].sum(), r.first_pick_correct[keep].sum()
    if n == 0:
        print(f"{name}: no pairs")
        return
    print(
        f"{name} ({keep.sum()} pairs, {n} episodes): success {wins / n:6.1%}, "
        f"no pick-up {(n - picked) / n:6.1%}, wrong first treasure {(picked - right) / n:6.1%}, "
        f"right first treasure then failed {(right - wins) / n:6.1%}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
