"""Registers the pairs envs with Ray Tune by name (``env: synpo_pairs``, ``env:
synpo_thor_pairs``), when asked."""

from __future__ import annotations


def register_envs() -> None:
    """Makes ``synpo_pairs`` and ``synpo_thor_pairs`` known to Ray Tune (idempotent)."""
    from ray.tune.registry import register_env

    from rllib_synpo.env.pair_env import PAIRS_ENV_NAME, SynPoPairsEnv
    from rllib_synpo.env.thor_pair_env import THOR_PAIRS_ENV_NAME, ThorPairsEnv

    register_env(PAIRS_ENV_NAME, SynPoPairsEnv)
    register_env(THOR_PAIRS_ENV_NAME, ThorPairsEnv)
