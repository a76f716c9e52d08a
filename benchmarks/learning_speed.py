"""How fast does SynPo learn the gridworld on this machine? Trains for a wall-clock budget and
writes the success-rate curve (seen and unseen pairs) as CSV and PNG.

    python benchmarks/learning_speed.py --minutes 10 --seed 0 --out results/curves/run

Training time excludes evaluation time. Every ``--eval-minutes`` the greedy policy runs
``--eval-episodes`` episodes on every pair; at the end ``--final-episodes`` (100 as in the paper).
The loop is `rllib_synpo.budgeted.train_for_budget` (shared with ``python -m rllib_synpo.reproduce``).

The project's best recipe so far (results/learning_efficiency.md; `rllib_synpo.budgeted.best_recipe`):

    python benchmarks/learning_speed.py --relabel --feature-dim 1024 --lr-schedule cosine \
        --normalize-embeddings --weight-decay 1e-4 --batch-norm --threads 2 ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from synpo_envs.splits import (
    TRANSFER_SETTINGS,
    Pair,
    Split,
    random_split,
    transfer_split,
)

from rllib_synpo import budgeted
from rllib_synpo.budgeted import (
    DEFAULT_LR_FINAL,
    LR_SCHEDULES,
    Budget,
    train_for_budget,
)
from rllib_synpo.direct import DirectConfig, DirectImitation
from rllib_synpo.export import export_checkpoint
from rllib_synpo.networks import NETWORKS
from rllib_synpo.networks.factory import COEFFICIENT_NETWORKS
from rllib_synpo.networks.synpo import (
    COEFFICIENT_DEFAULTS,
    COEFFICIENT_FUNCTIONS,
    changed_coefficient_options,
)
from rllib_synpo.precision import PRECISIONS

SPLITS = ("paper", "transfer")


def _size(text: str) -> int:
    """A layer size: a positive integer (argparse names the bad value otherwise)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


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
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="torch device (default: the GPU where there is one)")
    d = DirectConfig()
    p.add_argument("--precision", choices=PRECISIONS, default=d.precision,
                   help="training forward pass: bfloat16 autocast halves an update's time on CPUs with native bfloat16")
    p.add_argument("--network", choices=sorted(NETWORKS), default=d.network, help="SynPo or a baseline")
    p.add_argument("--encoder", default=d.encoder)
    p.add_argument("--width", type=_size, default=None, help="encoder width (compact encoder)")
    p.add_argument("--batch-norm", action="store_true", help="compact encoder: BatchNorm on its input and after each convolution")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--lr-schedule", choices=LR_SCHEDULES, default="constant",
                   help="cosine: decay the learning rate over the training budget to --lr-final x lr")
    p.add_argument("--lr-final", type=float, default=DEFAULT_LR_FINAL, help="final learning rate as a fraction of --lr (cosine)")
    p.add_argument("--weight-decay", type=float, default=d.weight_decay, help="Adam weight decay (the paper: 1e-3)")
    p.add_argument("--coefficient-dropout", type=float, default=COEFFICIENT_DEFAULTS["coefficient_dropout"], help="SynPo: dropout on [e_task; e_env] into alpha, beta")
    p.add_argument("--coefficient-weight-decay", type=float, default=None,
                   help="weight decay of the embeddings and alpha/beta alone (default: --weight-decay)")
    p.add_argument("--normalize-embeddings", action="store_true",
                   help="SynPo: unit-length e_task, e_env into alpha, beta (the authors' code option --norm)")
    p.add_argument("--embedding-dim", type=_size, default=d.embedding_dim)
    p.add_argument("--basis-dim", type=_size, default=None, help="K, the size of the state-action features and of alpha, beta (default: the network's)")
    p.add_argument("--coefficients", choices=COEFFICIENT_FUNCTIONS, default=COEFFICIENT_DEFAULTS["coefficient_function"],
                   help="SynPo's coefficient functions: the paper's MLP on [e_task; e_env], or a product of per-embedding MLPs")
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
    p.add_argument("--absent-treasures", type=float, default=d.absent_treasures, help="collection only: each treasure outside the task is absent from the start with this probability (not the paper)")
    p.add_argument("--feature-dim", type=_size, default=d.feature_dim)
    p.add_argument("--pairs", default="split", help="'split' (144 seen) or 'e:t,e:t,...' to train on given pairs")
    p.add_argument("--split", choices=SPLITS, default="paper",
                   help="paper: the 144/256 split (--split-seed); transfer: P = envs 0-9 x tasks 0-9, the start of settings 2/3")
    p.add_argument("--export", default=None, help="also write the trained network as a SynPo checkpoint folder (rllib evaluate/adapt, PPO)")
    return p


def _network_kwargs(args: argparse.Namespace) -> dict:
    """Network options: the coefficient ones (SynPo, MTL) only when they differ from the paper's
    (baselines lack them), the basis size when given."""
    options = {
        "coefficient_function": args.coefficients,
        "coefficient_dropout": args.coefficient_dropout,
        "normalize_embeddings": args.normalize_embeddings,
    }
    kwargs = changed_coefficient_options(options)
    if kwargs and args.network not in COEFFICIENT_NETWORKS:
        raise SystemExit(f"--coefficients/--coefficient-dropout/--normalize-embeddings apply to networks {list(COEFFICIENT_NETWORKS)} only, not {args.network!r}")
    if args.basis_dim is not None:
        kwargs["basis_dim"] = args.basis_dim
    return kwargs


def _encoder_kwargs(args: argparse.Namespace) -> dict:
    """Only the options given, so encoders without them (the paper's ResNet) still build."""
    kwargs: dict = {} if args.width is None else {"width": args.width}
    if args.batch_norm:
        kwargs["batch_norm"] = True
    if kwargs and args.encoder != "compact":
        raise SystemExit(f"--width/--batch-norm apply to the compact encoder only, not {args.encoder!r}")
    return kwargs


def _config(args: argparse.Namespace) -> DirectConfig:
    return DirectConfig(
        network=args.network,
        encoder=args.encoder,
        encoder_kwargs=_encoder_kwargs(args),
        lr=args.lr, weight_decay=args.weight_decay, coefficient_weight_decay=args.coefficient_weight_decay, embedding_dim=args.embedding_dim,
        network_kwargs=_network_kwargs(args), batch_size=args.batch_size, l1=args.l1, l2=args.l2, l3=args.l3,
        pick_weight=args.pick_weight, epsilon=args.epsilon, dagger=args.dagger,
        num_collectors=args.num_collectors, collect_every=args.collect_every,
        replay_capacity=args.replay_capacity, warmup_states=args.warmup_states, relabel_seen_tasks=args.relabel,
        absent_treasures=args.absent_treasures, feature_dim=args.feature_dim,
        env_kwargs={"frame_stack": args.frame_stack, "window": args.window, "agent_channel": args.agent_channel}, device=args.device,
        precision=args.precision,
    )


def scheduled_lr(args: argparse.Namespace, progress: float) -> float:
    """The learning rate after ``progress`` (0..1) of the training budget."""
    return budgeted.scheduled_lr(args.lr, args.lr_schedule, args.lr_final, progress)


def _budget(args: argparse.Namespace) -> Budget:
    return Budget(
        minutes=args.minutes, eval_minutes=args.eval_minutes, eval_episodes=args.eval_episodes,
        final_episodes=args.final_episodes, lr_schedule=args.lr_schedule, lr_final=args.lr_final,
    )


def run_pairs(args: argparse.Namespace) -> tuple[Split, list[Pair], list[Pair]]:
    """(the split a run reports and exports, the pairs it trains on, the pairs it evaluates)."""
    if args.split == "transfer" and args.pairs != "split":
        raise SystemExit("--pairs and --split transfer both choose the trained pairs; give one")
    split = random_split(seed=args.split_seed) if args.split == "paper" else transfer_split(TRANSFER_SETTINGS[0])
    seen_pairs = list(split.seen)
    if args.split == "transfer":  # the other pairs have untrained embeddings until adaptation
        split = Split(split.num_envs, split.num_tasks, split.seen, name="transfer_P")
        split_pairs = list(split.seen)
    elif args.pairs != "split":  # a diagnostic run: evaluate on the environments trained on
        seen_pairs = [tuple(int(v) for v in item.split(":")) for item in args.pairs.split(",")]
        envs = sorted({e for e, _ in seen_pairs})
        split = Split(split.num_envs, split.num_tasks, tuple(seen_pairs), name="custom")
        split_pairs = [(e, t) for e in envs for t in range(split.num_tasks)]
    else:
        split_pairs = list(split.all_pairs)
    return split, seen_pairs, split_pairs


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    split, seen_pairs, split_pairs = run_pairs(args)
    if args.export and Path(args.export).exists():  # found out now, not after the training budget
        raise SystemExit(f"--export {args.export} exists; name a new folder")
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        config = _config(args)
        trainer = DirectImitation(config, seen_pairs, seed=args.seed)
    except ValueError as error:  # e.g. --epsilon 1.5, or --device cuda without a GPU
        raise SystemExit(str(error)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"argv": [sys.argv[0], *(sys.argv[1:] if argv is None else argv)], "config": trainer.describe(), "torch_threads": torch.get_num_threads()}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    train_for_budget(trainer, _budget(args), split, split_pairs, out)
    if args.export:
        print("checkpoint:", export_checkpoint(trainer.net, config.model_config(), split, config.env_kwargs, args.export))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
