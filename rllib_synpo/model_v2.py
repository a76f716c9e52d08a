"""A thin old-API-stack adapter: the same SynPo network as a ``TorchModelV2``, registered with
``ModelCatalog`` as ``"synpo"`` (``model={"custom_model": "synpo", "custom_model_config": {...}}``).
The old stack is on its way out of RLlib; new code should use `SynPoTorchRLModule`."""

from __future__ import annotations

import torch
from ray.rllib.models import ModelCatalog
from ray.rllib.models.torch.torch_modelv2 import TorchModelV2
from torch import nn

from rllib_synpo.rl_module import network_from_spaces

CUSTOM_MODEL_NAME = "synpo"


def _ids(values: torch.Tensor) -> torch.Tensor:
    """The old stack hands Discrete parts of a Dict observation over one-hot encoded."""
    return values.argmax(-1) if values.dim() > 1 else values.long()


class SynPoTorchModelV2(TorchModelV2, nn.Module):
    def __init__(
        self, obs_space, action_space, num_outputs, model_config, name, **custom_model_config
    ) -> None:
        TorchModelV2.__init__(self, obs_space, action_space, num_outputs, model_config, name)
        nn.Module.__init__(self)
        original = getattr(obs_space, "original_space", obs_space)
        self.net = network_from_spaces(original, action_space, custom_model_config)
        self._value: torch.Tensor | None = None

    def forward(self, input_dict, state, seq_lens):
        obs = input_dict["obs"]
        out = self.net(obs["obs"], _ids(obs["env_id"]), _ids(obs["task_id"]))
        self._value = out.value
        return out.logits, state

    def value_function(self) -> torch.Tensor:
        if self._value is None:
            raise RuntimeError("value_function() called before forward()")
        return self._value


ModelCatalog.register_custom_model(CUSTOM_MODEL_NAME, SynPoTorchModelV2)
