"""Where a trained SynPo policy fails: greedy episodes on the seen and unseen pairs split into
success, no pick-up at all (wandered to the step limit), a wrong first treasure, and a right
first treasure followed by failure.

    python benchmarks/failure_breakdown.py results/curves/RUN.pt --feature-dim 1024 [--episodes 5]

RUN.pt is the state dict `benchmarks/learning_speed.py` saves at the end of a run.
"""

from __future__ import annotations

import argparse

import torch
from synpo_envs.gridworld.constants import NUM_ACTIONS
from synpo_envs.splits import random_split

from rllib_synpo.evaluation import evaluate, torch_greedy_policy
from rllib_synpo.networks import make_network


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("weights")
    parser.add_argument("--feature-dim", type=int, default=128)
    parser.add_argument("--encoder", default="compact")
    parser.add_argument("--normalize-embeddings", action="store_true", help="weights trained with unit-length embeddings (run R on)")
    parser.add_argument("--episodes", type=int, default=5, help="episodes per pair")
    parser.add_argument("--seed", type=int, default=777)
    parser.add_argument("--split-seed", type=int, default=0)
    args = parser.parse_args(argv)
    split = random_split(seed=args.split_seed)
    net = make_network(
        "synpo", obs_shape=(12, 16, 16), num_actions=NUM_ACTIONS, num_envs=split.num_envs, num_tasks=split.num_tasks,
        encoder=args.encoder, feature_dim=args.feature_dim, normalize_embeddings=args.normalize_embeddings,
    )
    net.load_state_dict(torch.load(args.weights))
    net.eval()
    for name, pairs in (("seen", split.seen), ("unseen", split.unseen)):
        r = evaluate(torch_greedy_policy(net), list(pairs), args.episodes, seed=args.seed)
        n, wins, picked, right = r.episodes.sum(), r.successes.sum(), r.picked.sum(), r.first_pick_correct.sum()
        print(
            f"{name:6s} {n:6d} episodes: success {wins / n:6.1%}, no pick-up {(n - picked) / n:6.1%}, "
            f"wrong first treasure {(picked - right) / n:6.1%}, right first treasure then failed {(right - wins) / n:6.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
