"""Plain torch networks (no Ray import): encoders and the SynPo head."""

from rllib_synpo.networks.encoders import ENCODERS, CompactEncoder, PaperResNetEncoder, make_encoder
from rllib_synpo.networks.synpo import SynPoNetwork, SynPoOutputs

__all__ = ["ENCODERS", "CompactEncoder", "PaperResNetEncoder", "SynPoNetwork", "SynPoOutputs", "make_encoder"]
