from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPO, SynPoPPOConfig

__all__ = ["SynPoPPO", "SynPoPPOConfig"]
