r"""Where an adapted network's wall maps (``maze_map``) are wrong, and whether its demonstrations
showed those cells.

For each new maze of an adaptation (the ``--out`` folder of ``rllib synpo adapt``): the cells
whose wall logit (> 0: wall) disagrees with the maze, each with its true content, its logit and
whether any demonstration's window showed it (a cell none showed keeps the value it started
from, the trained mazes' mean), and the maze's AvgSR on the checkpoint's tasks from the
adaptation's success matrix.

    python benchmarks/adapted_maps.py results/transfer/p_map_routes_seed0_setting2_unknown
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import torch
from synpo_envs.gridworld.constants import GRID_SIZE

from rllib_synpo.adaptation import AdaptConfig, collect_demonstrations, prepare
from rllib_synpo.losses import UNLABELLED_CELL

MAPS = "maze_map.weight"  # the adapted network's state-dict entry


def shown_cells(adaptation, config: AdaptConfig) -> dict[int, torch.Tensor]:
    """Per new environment: (GRID_SIZE * GRID_SIZE,) True where a demonstration's window showed
    the cell (the demonstrations `adapt_checkpoint` learnt from, drawn again with its seed)."""
    demos = collect_demonstrations(adaptation.demonstrated, adaptation.world, seed=config.seed)
    labels = adaptation.module.net.map_reader.shown_walls(torch.as_tensor(demos["obs"]))
    env_ids = torch.as_tensor(demos["env_id"])
    return {env: (labels[env_ids == env] != UNLABELLED_CELL).any(0) for env in adaptation.ids.envs}


def wrong_cells(logits: torch.Tensor, walls: torch.Tensor, shown: torch.Tensor) -> list[dict]:
    """The cells whose logit reads the other way than ``walls`` (all flat, GRID_SIZE ** 2)."""
    return [
        {
            "cell": divmod(cell, GRID_SIZE),
            "truth": "wall" if walls[cell] else "floor",
            "logit": round(float(logits[cell]), 3),
            "shown": bool(shown[cell]),
        }
        for cell in ((logits > 0) != walls).nonzero().flatten().tolist()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("adaptation", help="an output folder of `rllib synpo adapt`")
    parser.add_argument("--out", help="JSON file for the results")
    args = parser.parse_args(argv)
    folder = Path(args.adaptation)
    summary = json.loads((folder / "summary.json").read_text())
    state = torch.load(folder / "adapted_network.pt", map_location="cpu")
    if MAPS not in state:
        raise SystemExit(f"{folder}: the adapted network has no wall maps (trained without maze_map)")
    config = AdaptConfig(**summary["config"])
    adaptation = prepare(summary["checkpoint"], config)
    mazes = adaptation.world["mazes"]
    shown = shown_cells(adaptation, config)
    matrix = pd.read_csv(folder / "success_matrix.csv", index_col=0).to_numpy()
    old_tasks = [t for t in range(matrix.shape[1]) if t not in adaptation.ids.tasks]
    results = []
    for env in adaptation.ids.envs:
        walls = torch.as_tensor(mazes[env].walls.flatten())
        wrong = wrong_cells(state[MAPS][env], walls, shown[env])
        rate = 100 * matrix[env, old_tasks].mean()
        results.append({"env": env, "avg_success_rate_old_tasks": rate, "wrong_cells": wrong})
        cells = ", ".join(
            f"{c['cell']} {c['truth']} read as {'floor' if c['truth'] == 'wall' else 'wall'} "
            f"(logit {c['logit']}{'' if c['shown'] else ', never shown'})"
            for c in wrong
        )
        print(
            f"env {env:2d}  AvgSR (old tasks) {rate:5.1f}%  wrong cells {len(wrong)}"
            + (f": {cells}" if wrong else "")
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"adaptation": str(folder), "mazes": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
