"""Plain torch networks (no Ray import): encoders, the SynPo head and the paper's baselines."""

from rllib_synpo.networks.encoders import (
    ENCODERS,
    CompactEncoder,
    PaperResNetEncoder,
    make_encoder,
)
from rllib_synpo.networks.factory import NETWORKS, make_network
from rllib_synpo.networks.mlp import MLPNetwork
from rllib_synpo.networks.modulenet import ModuleNetwork
from rllib_synpo.networks.mtl import MTLNetwork
from rllib_synpo.networks.sf import EnvironmentSuccessorFeatureNetwork, SuccessorFeatureNetwork
from rllib_synpo.networks.synpo import SynPoNetwork, SynPoOutputs

__all__ = [
    "ENCODERS",
    "NETWORKS",
    "CompactEncoder",
    "EnvironmentSuccessorFeatureNetwork",
    "MLPNetwork",
    "MTLNetwork",
    "ModuleNetwork",
    "PaperResNetEncoder",
    "SuccessorFeatureNetwork",
    "SynPoNetwork",
    "SynPoOutputs",
    "make_encoder",
    "make_network",
]
