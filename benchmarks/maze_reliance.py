r"""How much a trained policy relies on knowing its maze.

Greedy AvgSR on the checkpoint's seen pairs, evaluated with each pair's own environment id,
with every maze's id replaced by another trained maze's (the maze ``shift`` places further in
the sorted list of trained mazes), and, for a SynPo network trained with ``env_dropout``, with
the unknown environment (`rllib_synpo.networks.synpo.UNKNOWN_ENV`). A policy that navigates by
what it sees (walls in its window, the treasures) keeps much of its AvgSR under another maze's
embedding; one that has learnt each maze's routes by heart loses it. In settings 2 and 3 a new
maze starts from an embedding that describes no maze the network knows.

    python benchmarks/maze_reliance.py CHECKPOINT --episodes 5 --shifts 1 7 \
        --out results/transfer/maze_reliance.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from rllib_synpo.checkpoint import read_gridworld_checkpoint
from rllib_synpo.evaluation import PolicyFn, evaluate, torch_greedy_policy
from rllib_synpo.networks.synpo import UNKNOWN_ENV


def with_env_ids(policy: PolicyFn, env_ids: Callable[[np.ndarray], np.ndarray]) -> PolicyFn:
    """``policy`` acting on observations whose ``env_id`` is replaced by ``env_ids(env_id)``."""

    def act(obs: dict[str, np.ndarray]) -> np.ndarray:
        return policy({**obs, "env_id": env_ids(obs["env_id"])})

    act.deterministic = getattr(policy, "deterministic", False)
    return act


def shifted(trained: list[int], shift: int) -> Callable[[np.ndarray], np.ndarray]:
    """Each trained maze's id replaced by the id ``shift`` places further in ``trained``."""
    lookup = np.arange(max(trained) + 1)
    lookup[trained] = np.roll(trained, -shift)
    return lambda env_id: lookup[env_id]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint")
    parser.add_argument("--episodes", type=int, default=5, help="greedy episodes per pair")
    parser.add_argument("--shifts", type=int, nargs="+", default=[1, 7])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="JSON file for the results")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    _, module, split, gridworld = read_gridworld_checkpoint(args.checkpoint)
    trained = sorted({e for e, _ in split.seen})
    same = [shift for shift in args.shifts if shift % len(trained) == 0]
    if same:
        raise SystemExit(
            f"--shifts {same}: a multiple of the {len(trained)} trained mazes gives every maze its own id"
        )
    net = module.net
    policy = torch_greedy_policy(net)
    conditions = {"own maze": policy}
    for shift in args.shifts:
        conditions[f"maze shifted by {shift}"] = with_env_ids(policy, shifted(trained, shift))
    if getattr(net, "unknown_env", None) is not None:
        conditions["unknown maze"] = with_env_ids(policy, lambda env_id: np.full_like(env_id, UNKNOWN_ENV))
    results = {
        "checkpoint": str(args.checkpoint),
        "pairs": len(split.seen),
        "trained_mazes": trained,
        "config": vars(args),
        "avg_success_rate": {},
    }
    for name, condition in conditions.items():
        rate = evaluate(condition, split.seen, args.episodes, seed=args.seed, env_kwargs=gridworld).summary()
        results["avg_success_rate"][name] = rate["avg_success_rate"]
        print(
            f"{name:20s} AvgSR {100 * rate['avg_success_rate']:5.1f}% on {len(split.seen)} seen pairs",
            flush=True,
        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
