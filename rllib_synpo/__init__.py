"""SynPo for Ray RLlib: network, RLModule, imitation and PPO algorithms, evaluation, command line.

The plain torch parts (`rllib_synpo.networks`, `rllib_synpo.losses`) import no Ray; the RLlib
parts load on first use (``from rllib_synpo import SynPoConfig``). Importing changes no
process-wide state: `register` makes ``run: SynPo``, ``run: SynPoPPO``, ``env: synpo_pairs``
and ``env: synpo_thor_pairs`` known to Ray Tune (the ``rllib`` command calls it; validating a
SynPo or SynPoPPO config registers the envs), and the algorithms, learners and evaluation set
flush-to-zero where they compute (`rllib_synpo.utils.denormals`).
"""

import importlib

__version__ = "0.1.0"

_LAZY = {
    "SynPo": "rllib_synpo.algorithms.synpo",
    "SynPoConfig": "rllib_synpo.algorithms.synpo",
    "MODULE_ID": "rllib_synpo.checkpoint",
    "SynPoPairsEnv": "rllib_synpo.env.pair_env",
    "PAIRS_ENV_NAME": "rllib_synpo.env.pair_env",
    "SynPoTorchRLModule": "rllib_synpo.rl_module",
    "SynPoTorchLearner": "rllib_synpo.algorithms.synpo.torch.synpo_torch_learner",
    "SynPoPPO": "rllib_synpo.algorithms.synpo_ppo",
    "SynPoPPOConfig": "rllib_synpo.algorithms.synpo_ppo",
    "SynPoPPOTorchLearner": "rllib_synpo.algorithms.synpo_ppo.torch.synpo_ppo_torch_learner",
}
__all__ = sorted([*_LAZY, "register"])


def register() -> None:
    """Makes SynPo's algorithms and envs known to Ray Tune by name (idempotent)."""
    from rllib_synpo.registration import register as register_with_tune

    register_with_tune()


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rllib_synpo' has no attribute {name!r}")
