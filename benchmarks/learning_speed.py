"""How fast does SynPo learn the gridworld on this machine? Trains for a wall-clock budget and
writes the success-rate curve (seen and unseen pairs) as CSV and PNG.

    python benchmarks/learning_speed.py --minutes 10 --seed 0 --out results/curves/run

Training time excludes evaluation time. Every ``--eval-minutes`` the greedy policy runs
``--eval-episodes`` episodes on every pair; at the end ``--final-episodes`` (100 as in the paper).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from rllib_synpo.direct import DirectConfig, DirectImitation
from rllib_synpo.evaluate import flat_summary
from rllib_synpo.evaluation import evaluate, torch_greedy_policy
from synpo_envs.splits import Split, random_split


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="training wall-clock budget")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split-seed", type=int, default=0, help="seed of the 144/256 split")
    p.add_argument("--out", default="results/curves/learning_speed", help="output prefix (.csv, .png, .json)")
    p.add_argument("--eval-minutes", type=float, default=2.0)
    p.add_argument("--eval-episodes", type=int, default=2, help="episodes per pair, periodic evaluation")
    p.add_argument("--final-episodes", type=int, default=100, help="episodes per pair, final evaluation")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    d = DirectConfig()
    p.add_argument("--encoder", default=d.encoder)
    p.add_argument("--width", type=int, default=None, help="encoder width (compact encoder)")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--l1", type=float, default=d.l1)
    p.add_argument("--l2", type=float, default=d.l2)
    p.add_argument("--l3", type=float, default=d.l3)
    p.add_argument("--pick-weight", type=float, default=d.pick_weight)
    p.add_argument("--epsilon", type=float, default=d.epsilon)
    p.add_argument("--dagger", type=float, default=d.dagger)
    p.add_argument("--num-collectors", type=int, default=d.num_collectors)
    p.add_argument("--collect-every", type=int, default=d.collect_every)
    p.add_argument("--replay-capacity", type=int, default=d.replay_capacity)
    p.add_argument("--warmup-states", type=int, default=d.warmup_states)
    p.add_argument("--frame-stack", type=int, default=4)
    p.add_argument("--window", type=int, default=1)
    p.add_argument("--agent-channel", action="store_true", help="non-occluding observation variant")
    p.add_argument("--relabel", action="store_true", help="relabel states with every seen task of their env")
    p.add_argument("--feature-dim", type=int, default=d.feature_dim)
    p.add_argument("--pairs", default="split", help="'split' (144 seen) or 'e:t,e:t,...' to train on given pairs")
    return p


def _config(args: argparse.Namespace) -> DirectConfig:
    return DirectConfig(
        encoder=args.encoder,
        encoder_kwargs={} if args.width is None else {"width": args.width},
        lr=args.lr, batch_size=args.batch_size, l1=args.l1, l2=args.l2, l3=args.l3,
        pick_weight=args.pick_weight, epsilon=args.epsilon, dagger=args.dagger,
        num_collectors=args.num_collectors, collect_every=args.collect_every,
        replay_capacity=args.replay_capacity, warmup_states=args.warmup_states, relabel_seen_tasks=args.relabel, feature_dim=args.feature_dim,
        env_kwargs={"frame_stack": args.frame_stack, "window": args.window, "agent_channel": args.agent_channel},
    )


def _evaluate(trainer: DirectImitation, split, pairs, episodes: int, env_kwargs: dict, seed: int) -> dict[str, float]:
    results = evaluate(torch_greedy_policy(trainer.net), pairs, episodes, seed=seed, env_kwargs=env_kwargs)
    return flat_summary(results, split)


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    minutes = [r["train_minutes"] for r in rows]
    for name in ("seen", "unseen"):
        ax.plot(minutes, [100 * r[f"{name}_avg_success_rate"] for r in rows], marker="o", label=f"{name} AvgSR")
    ax.plot(minutes, [100 * r["seen_first_pick_accuracy"] for r in rows], ls="--", label="first-pick acc. (seen)")
    ax.set(xlabel="training minutes", ylabel="%", title=title, ylim=(0, 100))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    split = random_split(seed=args.split_seed)
    seen_pairs = list(split.seen)
    if args.pairs != "split":  # a diagnostic run: evaluate on the environments trained on
        seen_pairs = [tuple(int(v) for v in item.split(":")) for item in args.pairs.split(",")]
        envs = sorted({e for e, _ in seen_pairs})
        split = Split(split.num_envs, split.num_tasks, tuple(seen_pairs), name="custom")
        split_pairs = [(e, t) for e in envs for t in range(split.num_tasks)]
    else:
        split_pairs = list(split.all_pairs)
    config = _config(args)
    trainer = DirectImitation(config, seen_pairs, seed=args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"argv": sys.argv, "config": trainer.describe(), "torch_threads": torch.get_num_threads()}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    rows: list[dict] = []
    train_seconds, next_eval, last = 0.0, args.eval_minutes * 60, {}
    budget = args.minutes * 60
    recent: list[dict] = []
    while True:
        done = train_seconds >= budget
        if train_seconds >= next_eval or done:
            episodes = args.final_episodes if done else args.eval_episodes
            row = {"train_minutes": train_seconds / 60, "updates": trainer.updates, "states": trainer.states_trained}
            row.update({k: float(np.mean([r[k] for r in recent])) for k in recent[0]} if recent else {})
            eval_start = time.perf_counter()
            row.update(_evaluate(trainer, split, split_pairs, episodes, config.env_kwargs, seed=10_000 + trainer.updates))
            row["eval_seconds"] = time.perf_counter() - eval_start
            row["episodes_per_pair"] = episodes
            rows.append(row)
            recent = []
            print(
                f"[{row['train_minutes']:6.1f} min] updates {trainer.updates:7d} states/s "
                f"{trainer.states_trained / max(train_seconds, 1e-9):7.0f} acc {row.get('accuracy', float('nan')):.3f} "
                f"seen {100 * row['seen_avg_success_rate']:5.1f}% unseen {100 * row['unseen_avg_success_rate']:5.1f}% "
                f"first-pick {100 * row['seen_first_pick_accuracy']:5.1f}% (eval {row['eval_seconds']:.0f} s, {episodes}/pair)",
                flush=True,
            )
            with open(out.with_suffix(".csv"), "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[-1]))
                writer.writeheader()
                writer.writerows(rows)
            plot(rows, out.with_suffix(".png"), out.name)
            next_eval += args.eval_minutes * 60
            if done:
                torch.save(trainer.net.state_dict(), out.with_suffix(".pt"))  # for re-evaluation
                break
        start = time.perf_counter()
        last = trainer.step()
        train_seconds += time.perf_counter() - start
        recent.append(last)
        if len(recent) > 200:
            recent.pop(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
