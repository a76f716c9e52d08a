"""Writes the weights a finished `benchmarks/learning_speed.py` run saved (``RUN.pt``) as a
SynPo checkpoint folder, for ``rllib evaluate``, ``rllib synpo adapt`` and PPO fine-tuning
(``imitation_checkpoint`` of `tuned_examples/synpo_gridworld_ppo.yaml`):

    python benchmarks/export_run.py results/curves/R2h_norm_wd1e-4_120min.pt results/checkpoints/R2h

The network, its split and gridworld come from the run's own command line, recorded beside the
weights in ``RUN.json``, so they are the ones it trained with (``--export`` at training time
writes the same folder).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from synpo_envs.gridworld import BatchedGridWorld

from rllib_synpo.direct import network_for
from rllib_synpo.export import ExportError, export_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling
import learning_speed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("weights", type=Path, help="RUN.pt written by benchmarks/learning_speed.py (RUN.json beside it)")
    parser.add_argument("out", type=Path, help="checkpoint folder to create")
    args = parser.parse_args(argv)
    record = args.weights.with_suffix(".json")
    for path in (args.weights, record):
        if not path.is_file():
            raise SystemExit(f"{path} not found: expected a learning_speed.py run's .pt and the .json beside it")
    run_argv = json.loads(record.read_text()).get("argv")
    if not isinstance(run_argv, list) or not run_argv:
        raise SystemExit(f"{record} has no 'argv' list: not written by benchmarks/learning_speed.py")
    run = learning_speed._parser().parse_args(run_argv[1:])
    split, _, _ = learning_speed.run_pairs(run)
    config = learning_speed._config(run)
    net = network_for(config, BatchedGridWorld(1, **config.env_kwargs).grid_spec)
    try:
        net.load_state_dict(torch.load(args.weights, map_location="cpu"))
        print("checkpoint:", export_checkpoint(net, config.model_config(), split, config.env_kwargs, args.out))
    except (RuntimeError, ExportError) as error:  # other sizes than the run's command line says
        raise SystemExit(f"{args.weights}: {str(error).splitlines()[0]}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
