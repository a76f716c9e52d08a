"""Why does a trained SynPo fail on unseen pairs: its state features or its coefficients?

Freezes a trained network's state-action features ``sa[n, a] = psi_s^T Theta_a`` on stored
states of the seen pairs' expert episodes, labels every state with the expert's action for
every task of its environment, and fits coefficient vectors alpha(env, task) in several ways on
half of the states; the other half scores the greedy action against the expert, seen and
unseen pairs apart:

- ``trained``: the network's own alpha(e_env, e_task) (nothing fitted);
- ``oracle``: one free alpha per pair, fitted on every pair, unseen ones included: the best
  the frozen features allow (a bound, not a method: it uses unseen pairs' labels);
- ``per-pair``: one free alpha per pair fitted on the seen pairs only (no sharing: the floor);
- ``mlp``, ``mlp-dropout``, ``mlp-decay``, ``product``: a fresh coefficient function (new
  128-d embeddings) fitted on the seen pairs only: the paper's MLP on [e_task; e_env], with
  dropout 0.5 on that input, with AdamW weight decay 0.1, and the product of per-embedding MLPs.

    python benchmarks/coefficient_probe.py results/curves/RUN.pt

RUN.pt is the state dict `benchmarks/learning_speed.py` or a reproduction study saves at the end
of a run; its network, split and observation come from the record in the RUN.json beside it. The states
are collected as `DirectConfig`'s defaults collect (256 expert episodes, epsilon 0.1), whatever
the run's own collection was.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from rllib_synpo.direct import DirectConfig, DirectImitation
from rllib_synpo.networks.factory import COEFFICIENT_NETWORKS
from rllib_synpo.networks.synpo import make_coefficient_function, pair_grid

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling
from saved_run import WEIGHTS_HELP, load_run  # noqa: E402

VARIANTS = ("trained", "oracle", "per-pair", "mlp", "mlp-dropout", "mlp-decay", "product")
PROBE_EMBEDDING_DIM = 128  # the paper's embedding and hidden sizes for the fresh coefficient functions
PROBE_HIDDEN_DIM = 512
DROPOUT = 0.5
WEIGHT_DECAY = 0.1
FREE_INIT_SCALE = 0.1  # std of the free per-pair alphas at initialization
# The probe's states are collected with DirectConfig's defaults for these, not the run's.
COLLECTION_FIELDS = ("num_collectors", "collect_every", "replay_capacity", "epsilon", "dagger", "absent_treasures")


class FreeCoefficients(nn.Module):
    """One trainable alpha per (env, task) pair: no sharing between pairs."""

    def __init__(self, num_envs: int, num_tasks: int, basis_dim: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(FREE_INIT_SCALE * torch.randn(num_envs, num_tasks, basis_dim))

    def forward(self) -> torch.Tensor:
        return self.alpha


class FreshCoefficients(nn.Module):
    """New embeddings and a coefficient function of `make_coefficient_function` ("mlp" or
    "product"), with optional dropout on their input: alpha for every (env, task) pair."""

    def __init__(self, kind: str, num_envs: int, num_tasks: int, basis_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.env_embedding = nn.Embedding(num_envs, PROBE_EMBEDDING_DIM)
        self.task_embedding = nn.Embedding(num_tasks, PROBE_EMBEDDING_DIM)
        self.dropout = nn.Dropout(dropout)
        self.function = make_coefficient_function(kind, PROBE_EMBEDDING_DIM, PROBE_HIDDEN_DIM, basis_dim)

    def forward(self) -> torch.Tensor:
        envs, tasks = pair_grid(self.env_embedding.num_embeddings, self.task_embedding.num_embeddings)
        return self.function(self.dropout(torch.cat([self.task_embedding(tasks), self.env_embedding(envs)], dim=-1)))


class Probe:
    """Frozen features and every task's expert label on ``num_states`` stored states."""

    def __init__(self, trainer: DirectImitation, num_states: int, rng: np.random.Generator) -> None:
        replay = trainer.replay
        rows = replay.rows(rng.permutation(replay.size)[:num_states])
        labels, possible = trainer.env.grid_spec.task_expert_actions(rows["env_id"], rows["agent"], rows["treasures"])
        net = trainer.net.eval()
        with torch.no_grad():
            self.sa = net(torch.as_tensor(rows["obs"]), torch.as_tensor(rows["env_id"]), torch.as_tensor(rows["task_id"])).sa_features
            self.trained_alpha = net.pair_coefficients()
        self.policy_bias = net.policy_bias.detach()
        self.env_id = torch.as_tensor(rows["env_id"])
        self.labels = torch.as_tensor(labels)
        self.possible = torch.as_tensor(possible)
        self.seen = torch.as_tensor(trainer.seen_mask)[self.env_id]  # (N, T): is (row's env, task) seen
        self.half = len(self.env_id) // 2  # rows [0, half) fit, the rest score

    def logits(self, alpha: torch.Tensor, rows: torch.Tensor | slice) -> torch.Tensor:
        """(rows, T, A) policy logits of every task with coefficients ``alpha`` (E, T, K)."""
        return torch.einsum("nak,ntk->nta", self.sa[rows], alpha[self.env_id[rows]]) + self.policy_bias

    def fit(self, model: nn.Module, *, unseen_too: bool, steps: int, batch: int, lr: float, weight_decay: float, seed: int) -> None:
        """AdamW on the cross-entropy of the fitting rows' labels (seen pairs, or all pairs)."""
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        model.train()
        for _ in range(steps):
            rows = torch.randint(0, self.half, (batch,), generator=generator)
            fitted = self.possible[rows] & (True if unseen_too else self.seen[rows])
            loss = nn.functional.cross_entropy(self.logits(model(), rows)[fitted], self.labels[rows][fitted])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()

    def score(self, alpha: torch.Tensor) -> tuple[float, float]:
        """Held-out greedy accuracy on (seen pairs, unseen pairs)."""
        held_out = slice(self.half, None)
        with torch.no_grad():
            correct = self.logits(alpha, held_out).argmax(-1) == self.labels[held_out]
        possible, seen = self.possible[held_out], self.seen[held_out]
        return tuple(float(correct[possible & mask].float().mean()) for mask in (seen, ~seen))


def variant(name: str, num_envs: int, num_tasks: int, basis_dim: int) -> tuple[nn.Module, bool, float]:
    """(coefficient model, fitted on unseen pairs too, weight decay) of a `VARIANTS` name."""
    sizes = (num_envs, num_tasks, basis_dim)
    return {
        "oracle": lambda: (FreeCoefficients(*sizes), True, 0.0),
        "per-pair": lambda: (FreeCoefficients(*sizes), False, 0.0),
        "mlp": lambda: (FreshCoefficients("mlp", *sizes), False, 0.0),
        "mlp-dropout": lambda: (FreshCoefficients("mlp", *sizes, dropout=DROPOUT), False, 0.0),
        "mlp-decay": lambda: (FreshCoefficients("mlp", *sizes), False, WEIGHT_DECAY),
        "product": lambda: (FreshCoefficients("product", *sizes), False, 0.0),
    }[name]()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("weights", help=WEIGHTS_HELP)
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {VARIANTS}")
    p.add_argument("--states", type=int, default=30_000, help="stored states: half fit, half score")
    p.add_argument("--collect-steps", type=int, default=160, help="expert collection steps (256 states each)")
    p.add_argument("--steps", type=int, default=1500, help="optimizer steps per fitted variant")
    p.add_argument("--batch", type=int, default=4096, help="fitting rows per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    names = args.variants.split(",")
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; expected some of {list(VARIANTS)}")
    torch.set_num_threads(args.threads)
    run = load_run(args.weights)
    if run.config.network not in COEFFICIENT_NETWORKS:
        raise SystemExit(f"{args.weights}: a {run.config.network!r} network has no coefficients to probe; expected one of {list(COEFFICIENT_NETWORKS)}")
    config = dataclasses.replace(run.config, **{name: getattr(DirectConfig, name) for name in COLLECTION_FIELDS})
    trainer = DirectImitation(config, run.seen_pairs, seed=args.seed)
    run.load_into(trainer.net)
    for _ in range(args.collect_steps):
        trainer.collect()
    probe = Probe(trainer, args.states, np.random.default_rng(args.seed))
    num_envs, num_tasks, basis_dim = probe.trained_alpha.shape
    print(f"{len(probe.env_id)} states ({probe.half} fit, the rest score); held-out step accuracy on every task of each state's env")
    for name in names:
        start = time.perf_counter()
        if name == "trained":
            alpha = probe.trained_alpha
        else:
            torch.manual_seed(args.seed)
            model, unseen_too, weight_decay = variant(name, num_envs, num_tasks, basis_dim)
            probe.fit(model, unseen_too=unseen_too, steps=args.steps, batch=args.batch, lr=args.lr, weight_decay=weight_decay, seed=args.seed)
            with torch.no_grad():
                alpha = model()
        seen, unseen = probe.score(alpha)
        print(f"{name:12s} seen {100 * seen:5.1f}%  unseen {100 * unseen:5.1f}%  ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
