"""`SynPoTorchRLModule`: the SynPo network as an RLlib (new API stack) RLModule.

Plug it into any algorithm::

    RLModuleSpec(module_class=SynPoTorchRLModule, model_config={"encoder": "compact"})

The observation space must be the gridworld's ``Dict(obs=Box(uint8), env_id=Discrete,
task_id=Discrete)``; the action space ``Discrete``. All sizes are derived from the spaces.
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

from rllib_synpo.networks import ENCODERS, SynPoNetwork

# Extra outputs of the training forward pass, read by the learner.
REWARD_PREDICTIONS = "synpo_reward_predictions"
SA_FEATURES = "synpo_sa_features"

DEFAULT_MODEL_CONFIG = {
    "encoder": "compact",
    "encoder_kwargs": {},
    "feature_dim": 128,
    "embedding_dim": 128,
    "basis_dim": 128,
    "hidden_dim": 512,
}
# RLlib merges its own defaults into every model_config; those keys are not ours to check.
_RLLIB_MODEL_KEYS = {field.name for field in dataclasses.fields(DefaultModelConfig)}


def check_model_config(model_config: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(model_config) - set(DEFAULT_MODEL_CONFIG) - _RLLIB_MODEL_KEYS)
    if unknown:
        raise ValueError(f"unknown SynPo model_config key(s) {unknown}; expected some of {sorted(DEFAULT_MODEL_CONFIG)}")
    checked = {key: model_config.get(key, default) for key, default in DEFAULT_MODEL_CONFIG.items()}
    if checked["encoder"] not in ENCODERS:
        raise ValueError(f"unknown encoder {checked['encoder']!r}; expected one of {sorted(ENCODERS)}")
    return checked


def network_from_spaces(observation_space: gym.Space, action_space: gym.Space, model_config: dict) -> SynPoNetwork:
    if not (isinstance(observation_space, gym.spaces.Dict) and {"obs", "env_id", "task_id"} <= set(observation_space.spaces)):
        raise ValueError(f"SynPo needs a Dict observation space with obs, env_id and task_id; got {observation_space}")
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"SynPo needs a Discrete action space; got {action_space}")
    return SynPoNetwork(
        obs_shape=tuple(observation_space["obs"].shape),
        num_actions=int(action_space.n),
        num_envs=int(observation_space["env_id"].n),
        num_tasks=int(observation_space["task_id"].n),
        **check_model_config(model_config or {}),
    )


class SynPoTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """SynPo policy (and, for PPO, a zero-initialized value head) over the gridworld spaces."""

    def setup(self) -> None:
        self.net = network_from_spaces(self.observation_space, self.action_space, self.model_config)

    def _inputs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        obs = batch[Columns.OBS]
        return obs["obs"], obs["env_id"].long(), obs["task_id"].long()

    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        out = self.net(*self._inputs(batch))
        return {Columns.ACTION_DIST_INPUTS: out.logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        out = self.net(*self._inputs(batch))
        return {
            Columns.ACTION_DIST_INPUTS: out.logits,
            REWARD_PREDICTIONS: out.reward,
            SA_FEATURES: out.sa_features,
            Columns.VF_PREDS: out.value,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return self.net(*self._inputs(batch)).value

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net.disentangle_scores(sa_taken)
