"""The SynPo paper's gridworld numbers (NeurIPS 2018, supplement tables "Performance of the best
model for each method" and "window size = 0"; mean ± std over 3 training seeds, 100 episodes per
pair, AvgSR in percent). The paper reports average returns only as curves, so there are none
here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperAvgSR:
    """AvgSR (%) on seen and unseen pairs, mean and std over the paper's seeds."""

    seen: float
    seen_std: float
    unseen: float
    unseen_std: float


# Setting 1 (144 seen / 256 unseen pairs, window 1), by this project's network names.
TABLE1: dict[str, PaperAvgSR] = {
    "sf": PaperAvgSR(0.0, 0.0, 0.0, 0.0),
    "modulenet": PaperAvgSR(50.9, 33.8, 30.4, 20.1),
    "mlp": PaperAvgSR(69.0, 2.0, 66.1, 2.6),
    "mtl": PaperAvgSR(64.1, 1.2, 41.5, 1.4),
    "synpo": PaperAvgSR(83.3, 0.5, 82.1, 1.5),
}

# The blind agent (window 0): same split, the three methods the paper ran.
BLIND: dict[str, PaperAvgSR] = {
    "mlp": PaperAvgSR(56.8, 0.9, 51.8, 1.7),
    "mtl": PaperAvgSR(16.4, 0.4, 6.1, 0.2),
    "synpo": PaperAvgSR(80.9, 1.5, 76.8, 1.4),
}

DISPLAY_NAMES = {"sf": "SF", "modulenet": "ModuleNet", "mlp": "MLP", "mtl": "MTL", "synpo": "SynPo"}
