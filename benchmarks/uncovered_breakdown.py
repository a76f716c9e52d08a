r"""Where the unseen pairs whose first colour is uncovered fail: AvgSR on them split by whether
their first colour is the second colour of some seen task of their maze (the agent went for it
there, after another treasure) or appears in no seen task of that maze at all.

Reads `rllib evaluate`'s success matrices (one per training seed: mean ± sample std over them)
of trials trained on random split ``--split-seed``:

    python benchmarks/uncovered_breakdown.py --split-seed 1 \
        results/studies/table1-heldout-splits-synpo/*random_seed_1/success_matrix.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from synpo_envs.splits import random_split, uncovered_pair_subsets

SUBSET_LABELS = {
    "uncovered": "uncovered",
    "second_colour": "uncovered, first colour a seen task's second colour in the maze",
    "no_seen_task": "uncovered, first colour in no seen task of the maze",
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("matrices", nargs="+", help="success_matrix.csv files, one per training seed")
    parser.add_argument("--split-seed", type=int, required=True, help="the random split's seed")
    args = parser.parse_args()
    for path in args.matrices:
        if not Path(path).is_file():
            parser.error(f"{path!r} is not a file: expected a success_matrix.csv of `rllib evaluate`")
    matrices = np.stack([pd.read_csv(path, index_col=0).to_numpy(dtype=float) for path in args.matrices])
    split = random_split(seed=args.split_seed)
    print(f"split seed {args.split_seed}, {len(matrices)} matrices; AvgSR %")
    for subset, mask in uncovered_pair_subsets(split.seen_mask()).items():
        name = SUBSET_LABELS[subset]
        if not mask.any():
            print(f"{name}: 0 pairs")
            continue
        rates = 100 * matrices[:, mask].mean(axis=1)
        spread = f" ± {rates.std(ddof=1):.1f}" if len(rates) > 1 else ""
        print(f"{name}: {int(mask.sum())} pairs, {rates.mean():.1f}{spread}")


if __name__ == "__main__":
    main()
