from rllib_synpo.algorithms.synpo.synpo import SynPo, SynPoConfig

__all__ = ["SynPo", "SynPoConfig"]
