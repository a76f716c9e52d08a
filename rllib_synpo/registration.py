"""Registers SynPo's algorithms and envs with Ray Tune, by name, when asked."""

from __future__ import annotations


def register() -> None:
    """Makes ``run: SynPo``, ``run: SynPoPPO``, ``env: synpo_pairs`` and ``env:
    synpo_thor_pairs`` known to Ray Tune (idempotent)."""
    from ray.tune.registry import register_trainable

    from rllib_synpo.algorithms.synpo.synpo import SynPo
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPO
    from rllib_synpo.env.registration import register_envs

    register_envs()
    register_trainable("SynPo", SynPo)
    register_trainable("SynPoPPO", SynPoPPO)
