"""`SynPoTorchRLModule`: the SynPo network as an RLlib (new API stack) RLModule.

Plug it into any algorithm::

    RLModuleSpec(module_class=SynPoTorchRLModule, model_config={"encoder": "compact"})

``model_config["network"]`` picks SynPo (default) or one of the paper's baselines ("mlp", "mtl",
"modulenet", "sf"; `rllib_synpo.networks.make_network`): same module, algorithm and data.
The observation space must be the gridworld's ``Dict(obs=Box(uint8), env_id=Discrete,
task_id=Discrete)`` or THOR's ``Dict(features=Box(float32, (frames, D)), held=Discrete,
env_id, task_id)`` (encoder "thor", `rllib_synpo.thor`); the action space ``Discrete``. All
sizes are derived from the spaces.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule

from rllib_synpo.columns import EXPERT_ACTION, TASK_LABELS
from rllib_synpo.losses import loss_inputs
from rllib_synpo.networks import ENCODERS, SynPoOutputs, make_network
from rllib_synpo.networks.encoders import check_encoder_kwargs
from rllib_synpo.networks.factory import LAYER_SIZE_KEYS, NETWORK_RULE, OPTION_DEFAULTS, OPTION_NETWORKS
from rllib_synpo.networks.subgoals import SUBGOAL_MODES
from rllib_synpo.networks.synpo import COEFFICIENT_FUNCTIONS, option_conflict
from rllib_synpo.utils.checks import (
    BOOLEAN,
    DROPOUT,
    DROPOUT_OR_SCHEDULE,
    POSITIVE_INT,
    check_settings,
    one_of,
)
from rllib_synpo.utils.console import quiet_rllib_notices

# Extra outputs of the training forward pass, read by the learner.
REWARD_PREDICTIONS = "synpo_reward_predictions"
SA_FEATURES = "synpo_sa_features"
EXTRA_PREFIX = "synpo_extra_"  # + the key of a network-specific output (`SynPoOutputs.extras`)

DEFAULT_MODEL_CONFIG = {
    "network": "synpo",
    "encoder": "compact",
    "encoder_kwargs": {},
    "feature_dim": 128,
    "embedding_dim": 128,
    "basis_dim": 128,
    "hidden_dim": 512,
}
# RLlib merges its own defaults into every model_config; those keys are not ours to check.
# The observation entries the encoder reads (its ``INPUT_KEYS``): the gridworld's image stack or
# THOR's frame features and held object; every observation also has env_id and task_id.
IMAGE_KEYS = ("obs",)
THOR_STATE_KEYS = ("features", "held")
ID_KEYS = ("env_id", "task_id")
_RLLIB_MODEL_KEYS = {field.name for field in dataclasses.fields(DefaultModelConfig)}


def check_model_config(model_config: dict[str, Any]) -> dict[str, Any]:
    """The network's settings from an RLModule's ``model_config``: the layer sizes and the
    options (`OPTION_DEFAULTS`) its network takes; a ValueError names an unknown key, a bad
    value, or an option set for a network that does not take it."""
    ours = {**DEFAULT_MODEL_CONFIG, **OPTION_DEFAULTS}
    unknown = sorted(set(model_config) - set(ours) - _RLLIB_MODEL_KEYS)
    if unknown:
        raise ValueError(f"unknown SynPo model_config key(s) {unknown}; expected some of {sorted(ours)}")
    checked = {key: model_config.get(key, default) for key, default in DEFAULT_MODEL_CONFIG.items()}
    options = {key: model_config.get(key, default) for key, default in OPTION_DEFAULTS.items()}
    check_settings(
        options,
        {
            one_of(COEFFICIENT_FUNCTIONS): ("coefficient_function",),
            one_of(SUBGOAL_MODES): ("subgoal_embedding",),
            DROPOUT: ("coefficient_dropout",),
            DROPOUT_OR_SCHEDULE: ("env_dropout",),
            BOOLEAN: ("normalize_embeddings", "hidden_env_symmetries", "maze_map", "map_routes"),
        },
    )
    check_settings(
        checked,
        {one_of(sorted(ENCODERS)): ("encoder",), NETWORK_RULE: ("network",), POSITIVE_INT: LAYER_SIZE_KEYS},
    )
    check_encoder_kwargs(checked["encoder"], checked["encoder_kwargs"])
    network = checked["network"]
    for key, value in options.items():
        if network in OPTION_NETWORKS[key]:
            checked[key] = value
        elif value != OPTION_DEFAULTS[key]:
            raise ValueError(
                f"model_config {key!r} applies to networks {list(OPTION_NETWORKS[key])} only, not {network!r}"
            )
    conflict = option_conflict(
        options["env_dropout"], options["hidden_env_symmetries"], options["maze_map"], options["map_routes"]
    )
    if conflict:
        raise ValueError(conflict)
    return checked


def state_keys(observation_space: gym.Space) -> tuple[str, ...]:
    """The observation entries the state encoder reads: `IMAGE_KEYS` (gridworld) or
    `THOR_STATE_KEYS`."""
    spaces = set(observation_space.spaces) if isinstance(observation_space, gym.spaces.Dict) else set()
    for keys in (IMAGE_KEYS, THOR_STATE_KEYS):
        if {*keys, *ID_KEYS} <= spaces:
            return keys
    raise ValueError(
        "SynPo needs a Dict observation space with env_id, task_id and obs (gridworld) or features "
        f"and held (THOR); got {observation_space}"
    )


def network_from_spaces(
    observation_space: gym.Space, action_space: gym.Space, model_config: dict
) -> torch.nn.Module:
    keys = state_keys(observation_space)
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"SynPo needs a Discrete action space; got {action_space}")
    sizes = check_model_config(model_config or {})
    encoder_keys = tuple(getattr(ENCODERS[sizes["encoder"]], "INPUT_KEYS", IMAGE_KEYS))
    if encoder_keys != keys:
        raise ValueError(
            f"encoder {sizes['encoder']!r} reads the observation entries {list(encoder_keys)}, but the "
            f"observation has {list(keys)}: use encoder 'thor' for THOR, another one for the gridworld"
        )
    if keys == THOR_STATE_KEYS:
        # THOR: the encoder reads features (frames, D) and embeds held (one of n values).
        obs_shape = tuple(observation_space["features"].shape)
        sizes["encoder_kwargs"] = {**sizes["encoder_kwargs"], "num_held": int(observation_space["held"].n)}
    else:
        obs_shape = tuple(observation_space["obs"].shape)
    return make_network(
        sizes.pop("network"),
        obs_shape=obs_shape,
        num_actions=int(action_space.n),
        num_envs=int(observation_space["env_id"].n),
        num_tasks=int(observation_space["task_id"].n),
        **sizes,
    )


def outputs_from_fwd_out(fwd_out: dict[str, Any]) -> SynPoOutputs:
    """The network's outputs back from `SynPoTorchRLModule._forward_train`'s dict (the value
    may be left out: no loss term reads it)."""
    return SynPoOutputs(
        logits=fwd_out[Columns.ACTION_DIST_INPUTS],
        reward=fwd_out[REWARD_PREDICTIONS],
        sa_features=fwd_out[SA_FEATURES],
        value=fwd_out.get(Columns.VF_PREDS),
        extras={
            key[len(EXTRA_PREFIX) :]: value for key, value in fwd_out.items() if key.startswith(EXTRA_PREFIX)
        },
    )


class SynPoTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """SynPo (or a baseline) policy and, for PPO, a value head starting at zero, over the
    gridworld's or THOR's spaces."""

    def __init__(self, *args, **kwargs) -> None:
        quiet_rllib_notices()  # RLlib's RLModule.__init__ warns about its own RLModuleConfig
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        self.net = network_from_spaces(self.observation_space, self.action_space, self.model_config)
        self._state_keys = state_keys(self.observation_space)

    def _inputs(self, batch: dict[str, Any]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """(encoder input, env_id, task_id): the gridworld's image tensor, or THOR's dict of
        features and held."""
        obs = batch[Columns.OBS]
        state = obs["obs"] if self._state_keys == IMAGE_KEYS else {key: obs[key] for key in self._state_keys}
        return state, obs["env_id"].long(), obs["task_id"].long()

    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        out = self.net(*self._inputs(batch))
        return {Columns.ACTION_DIST_INPUTS: out.logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """The network's outputs and the loss inputs that read further parameters
        (`rllib_synpo.losses.loss_inputs`), for the expert's actions (imitation) or the actions
        taken (PPO), so that data-parallel learners see every parameter a loss uses."""
        state, env_id, task_id = self._inputs(batch)
        out = self.net(state, env_id, task_id)
        actions = batch.get(EXPERT_ACTION, batch.get(Columns.ACTIONS))
        out.extras.update(loss_inputs(self.net, out, state, env_id, actions, relabelled=TASK_LABELS in batch))
        return {
            Columns.ACTION_DIST_INPUTS: out.logits,
            REWARD_PREDICTIONS: out.reward,
            SA_FEATURES: out.sa_features,
            Columns.VF_PREDS: out.value,
            **{EXTRA_PREFIX + key: value for key, value in out.extras.items()},
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.net(*self._inputs(batch)).value

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net.disentangle_scores(sa_taken)
