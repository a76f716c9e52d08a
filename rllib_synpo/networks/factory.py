"""`make_network`: the SynPo network or one of the paper's baselines, by name.

Every network has the interface the learners and the evaluation use: ``forward(obs, env_id,
task_id) -> SynPoOutputs``, ``task_logits(sa_features, env_id)`` (N, T, A),
``disentangle_scores(sa_taken)``, ``env_embedding`` / ``task_embedding`` (``nn.Embedding``
tables of per-id parameters: what adaptation to new environments and tasks learns) and
``LOSS_TERMS`` (the names of the terms `rllib_synpo.losses.imitation_losses` trains).
"""

from __future__ import annotations

from torch import nn

from rllib_synpo.networks.mlp import MLPNetwork
from rllib_synpo.networks.modulenet import ModuleNetwork
from rllib_synpo.networks.mtl import MTLNetwork
from rllib_synpo.networks.sf import EnvironmentSuccessorFeatureNetwork, SuccessorFeatureNetwork
from rllib_synpo.networks.synpo import SynPoNetwork
from rllib_synpo.utils.checks import POSITIVE_INT, check_settings, one_of

NETWORKS: dict[str, type[nn.Module]] = {
    "synpo": SynPoNetwork,
    "mlp": MLPNetwork,
    "mtl": MTLNetwork,
    "modulenet": ModuleNetwork,
    "sf": SuccessorFeatureNetwork,
    "sf_env": EnvironmentSuccessorFeatureNetwork,
}
NETWORK_RULE = one_of(sorted(NETWORKS))  # model_config "network", checked here and in check_model_config

# The options beyond the layer sizes, with their defaults (the paper's), and the networks that
# take each; the others refuse a value other than the default.
OPTION_DEFAULTS = {
    "coefficient_function": "mlp",
    "coefficient_dropout": 0.0,
    "normalize_embeddings": False,
    "env_dropout": 0.0,
    "subgoal_embedding": "none",
    "hidden_env_symmetries": False,
    "maze_map": False,
    "map_routes": False,
}
COEFFICIENT_NETWORKS = ("synpo", "mtl")  # built on SynPo's coefficient functions
OPTION_NETWORKS = {
    "coefficient_function": COEFFICIENT_NETWORKS,
    "coefficient_dropout": COEFFICIENT_NETWORKS,
    # every network whose embeddings are vectors fed to a function (ModuleNet's are its modules)
    "normalize_embeddings": ("synpo", "mtl", "mlp", "sf", "sf_env"),
    "env_dropout": ("synpo",),
    "subgoal_embedding": ("synpo",),
    "hidden_env_symmetries": ("synpo",),
    "maze_map": ("synpo",),
    "map_routes": ("synpo",),
}
LAYER_SIZE_KEYS = ("feature_dim", "embedding_dim", "basis_dim", "hidden_dim")


def make_network(
    kind: str, *, obs_shape: tuple[int, int, int], num_actions: int, num_envs: int, num_tasks: int, **sizes
) -> nn.Module:
    """The network ``kind`` (one of `NETWORKS`) for these spaces; ``sizes`` are the shared model
    config (encoder, encoder_kwargs, feature_dim, embedding_dim, basis_dim, hidden_dim)."""
    check_settings({"network": kind}, {NETWORK_RULE: ("network",)})
    # Checked here, where every network is built: a negative size would fail
    # deep in torch and a zero one build an empty layer.
    check_settings({key: sizes.get(key, 1) for key in LAYER_SIZE_KEYS}, {POSITIVE_INT: LAYER_SIZE_KEYS})
    return NETWORKS[kind](
        obs_shape=obs_shape, num_actions=num_actions, num_envs=num_envs, num_tasks=num_tasks, **sizes
    )
