"""Writes the weights a finished `benchmarks/learning_speed.py` run or a run of a reproduction
study (``python -m rllib_synpo.reproduce``) saved (``RUN.pt``) as a SynPo checkpoint folder,
for ``rllib evaluate``, ``rllib synpo adapt`` and PPO fine-tuning (``imitation_checkpoint`` of
`tuned_examples/synpo_gridworld_ppo.yaml`):

    python benchmarks/export_run.py results/curves/R2h_norm_wd1e-4_120min.pt results/checkpoints/R2h

The network, its split and gridworld come from the run's own record beside the weights in
``RUN.json`` (the command line, or the study's settings), so they are the ones it trained with
(``--export`` at training time writes the same folder).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rllib_synpo.export import ExportError, export_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling
from saved_run import WEIGHTS_HELP, load_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("weights", type=Path, help=WEIGHTS_HELP)
    parser.add_argument("out", type=Path, help="checkpoint folder to create")
    args = parser.parse_args(argv)
    run = load_run(args.weights)
    net = run.network()
    try:
        print("checkpoint:", export_checkpoint(net, run.config.model_config(), run.split, run.config.env_kwargs, args.out))
    except ExportError as error:
        raise SystemExit(f"{args.weights}: {str(error).splitlines()[0]}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
