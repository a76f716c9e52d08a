"""A finished training run, rebuilt from what it saved: its weights (``RUN.pt``) and the record
beside them (``RUN.json``): the command line of a `benchmarks/learning_speed.py` run, or the
settings of a run of ``python -m rllib_synpo.reproduce`` (its config and seen pairs). The tools
that read a run's weights build the network, split and observation it trained with from that
record, so they need no flags restating them (and cannot be given wrong ones).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.splits import Pair, Split
from torch import nn

from rllib_synpo.direct import DirectConfig, network_for

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling script, however this is imported
import learning_speed  # noqa: E402


WEIGHTS_HELP = "RUN.pt of a learning_speed.py or reproduction run (RUN.json beside it)"  # the tools' argument


@dataclasses.dataclass(frozen=True)
class SavedRun:
    weights: Path
    config: DirectConfig
    split: Split  # the split the run reported (and exports)
    seen_pairs: list[Pair]  # the pairs it trained on
    state_dict: dict[str, torch.Tensor]

    def load_into(self, net: nn.Module) -> nn.Module:
        """``net`` with the run's weights; a network of other sizes is refused by name."""
        try:
            net.load_state_dict(self.state_dict)
        except RuntimeError as error:
            raise SystemExit(f"{self.weights}: {str(error).splitlines()[0]}") from None
        return net

    def network(self) -> nn.Module:
        """The run's network with its weights, in eval mode."""
        grid_spec = BatchedGridWorld(1, **self.config.env_kwargs).grid_spec
        return self.load_into(network_for(self.config, grid_spec)).eval()


def load_run(weights: Path | str) -> SavedRun:
    """The run whose weights are ``weights`` (``RUN.pt``, with ``RUN.json`` beside it)."""
    weights = Path(weights)
    record_path = weights.with_suffix(".json")
    for path in (weights, record_path):
        if not path.is_file():
            raise SystemExit(f"{path} not found: expected a run's .pt and the .json beside it")
    record = json.loads(record_path.read_text())
    if "settings" in record:
        config, split = _from_study_settings(record["settings"], record_path)
        seen_pairs = list(split.seen)
    else:
        run_argv = record.get("argv")
        if not isinstance(run_argv, list) or not run_argv:
            raise SystemExit(
                f"{record_path} has no 'argv' list nor 'settings': written neither by "
                "benchmarks/learning_speed.py nor by python -m rllib_synpo.reproduce"
            )
        args = learning_speed._parser().parse_args(run_argv[1:])
        split, seen_pairs, _ = learning_speed.run_pairs(args)
        config = learning_speed._config(args)
    state_dict = torch.load(weights, map_location="cpu")
    config = dataclasses.replace(config, device="cpu")  # the tools run on the CPU, wherever it trained
    return SavedRun(weights, config, split, seen_pairs, state_dict)


def _from_study_settings(settings: dict, record_path: Path) -> tuple[DirectConfig, Split]:
    """The config and split of a reproduction study's run (`rllib_synpo.study_runs.RunSpec.settings`)."""
    try:
        config = DirectConfig(**settings["config"])
        split = Split.from_dict(settings["split"], source="its split")
    except (KeyError, TypeError, ValueError) as error:  # SplitError is a ValueError
        raise SystemExit(f"{record_path}: malformed study settings ({error})") from None
    return config, split
