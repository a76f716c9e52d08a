"""States per second through a SynPo learner update (forward, the four loss terms, backward,
Adam step) for each encoder, on synthetic gridworld batches.

    python benchmarks/learner_throughput.py [--batch-size 2240] [--seconds 10] [--threads 2] \
        [--precision float32 bfloat16]

2,240 states is the paper's batch (64 trajectories of ~35 steps). The paper's release took
about 7 s per such update on this kind of 2-core CPU (DESIGN.md section 5): the baseline row.
With several precisions, each row after the first precision's also gives its rate against the
first's for the same encoder.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from rllib_synpo.direct import DirectConfig, synpo_losses
from rllib_synpo.networks import ENCODERS, SynPoNetwork
from rllib_synpo.precision import PRECISIONS, resolve_precision, training_autocast

ORIGINAL_SECONDS_PER_UPDATE = 7.0
PAPER_BATCH = 2240
# The encoders of the gridworld's image stack ("thor" reads THOR's feature observations).
GRIDWORLD_ENCODERS = [name for name, encoder in ENCODERS.items() if not hasattr(encoder, "INPUT_KEYS")]
# (label, encoder, encoder_kwargs): each encoder as built by default, then the options that change its cost.
VARIANTS = [(name, name, {}) for name in GRIDWORLD_ENCODERS] + [("compact + batch_norm", "compact", {"batch_norm": True})]


def batch(size: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    return {
        "obs": torch.as_tensor(rng.integers(0, 256, (size, 12, 16, 16), dtype=np.uint8)),
        "env_id": torch.as_tensor(rng.integers(0, 20, size)),
        "task_id": torch.as_tensor(rng.integers(0, 20, size)),
        "expert_action": torch.as_tensor(rng.integers(0, 5, size)),
        "action": torch.as_tensor(rng.integers(0, 5, size)),
        "reward": torch.as_tensor(rng.standard_normal(size).astype(np.float32)),
    }


def measure(encoder: str, encoder_kwargs: dict, size: int, seconds: float, device: str, precision: str = "float32") -> tuple[float, int]:
    torch.manual_seed(0)
    net = SynPoNetwork(
        obs_shape=(12, 16, 16), num_actions=5, num_envs=20, num_tasks=20, encoder=encoder, encoder_kwargs=encoder_kwargs
    ).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    data = {k: v.to(device) for k, v in batch(size, np.random.default_rng(0)).items()}
    config = DirectConfig()

    def update() -> None:
        with training_autocast(precision, device):
            loss = synpo_losses(net, data, config)["total_loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    update()  # warm-up
    if device != "cpu":
        torch.cuda.synchronize()
    updates, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        update()
        updates += 1
    if device != "cpu":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return updates * size / elapsed, sum(p.numel() for p in net.parameters())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=PAPER_BATCH)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", nargs="+", choices=PRECISIONS, default=["float32"], help="of the forward pass (rllib_synpo.precision)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"learner throughput, device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}")
    baseline = PAPER_BATCH / ORIGINAL_SECONDS_PER_UPDATE
    print(f"{'original release (paper network)':34s} {baseline:10,.0f} states/s  (7 s per 2,240-state update)")
    first_rates: dict[str, float] = {}
    for precision in args.precision:
        resolved = resolve_precision(precision, args.device)
        for label, encoder, encoder_kwargs in VARIANTS:
            rate, params = measure(encoder, encoder_kwargs, args.batch_size, args.seconds, args.device, resolved)
            against_first = f"  {rate / first_rates[label]:5.2f}x {args.precision[0]}" if label in first_rates else ""
            first_rates.setdefault(label, rate)
            print(
                f"{label + ' encoder':34s} {resolved:8s} {rate:10,.0f} states/s  {rate / baseline:6.1f}x original"
                f"  {params / 1e6:.2f}M parameters{against_first}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
