"""SynPo for Ray RLlib: network, RLModule, imitation algorithm, evaluation, command line.

The plain torch parts (`rllib_synpo.networks`, `rllib_synpo.losses`) import no Ray; the RLlib
parts load on first use (``from rllib_synpo import SynPoConfig``), which also registers the
`SynPo` and `SynPoPPO` algorithms and the ``synpo_pairs`` env with Ray Tune. Importing it
switches the process's float math to flush-to-zero (`rllib_synpo.denormals`;
``RLLIB_SYNPO_FLUSH_DENORMALS=0`` leaves it alone).
"""

import importlib

from rllib_synpo.denormals import flush_denormals, flush_denormals_wanted

if flush_denormals_wanted():
    flush_denormals()  # before torch starts its threads, which inherit it

__version__ = "0.1.0"

_LAZY = {
    "SynPo": "rllib_synpo.algorithm",
    "SynPoConfig": "rllib_synpo.config",
    "MODULE_ID": "rllib_synpo.config",
    "SynPoPairsEnv": "rllib_synpo.pair_env",
    "PAIRS_ENV_NAME": "rllib_synpo.pair_env",
    "SynPoTorchRLModule": "rllib_synpo.rl_module",
    "SynPoTorchLearner": "rllib_synpo.learner",
    "SynPoPPO": "rllib_synpo.ppo",
    "SynPoPPOConfig": "rllib_synpo.ppo",
    "SynPoPPOTorchLearner": "rllib_synpo.ppo",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        importlib.import_module("rllib_synpo.algorithm")  # registers with Tune
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rllib_synpo' has no attribute {name!r}")
