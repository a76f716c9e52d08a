"""SynPo for Ray RLlib: network, RLModule, imitation and PPO algorithms, evaluation, CLI."""

__version__ = "0.1.0"
