"""`SynPoPPOTorchLearner`: PPO's loss plus SynPo's auxiliary terms and a KL penalty towards
the imitation policy."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns

from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import register_module_optimizer, synpo_loss_terms
from rllib_synpo.algorithms.synpo_ppo.imitation_checkpoint import load_imitation_module
from rllib_synpo.columns import EXECUTED_ACTION, EXPERT_ACTION
from rllib_synpo.losses import IMITATION_KL_LOSS, LossWeights, kl_to_reference
from rllib_synpo.utils.denormals import flush_denormals_where_wanted
from rllib_synpo.utils.optimizers import fused_adam_options

AUX_LOSSES = {"reward_loss": "l1", "env_disentangle_loss": "l2", "task_disentangle_loss": "l3"}
RMSPROP_ALPHA, RMSPROP_EPS = 0.99, 1e-5
VALUE_OPTIMIZER = "value"  # the value head's optimizer (the rest keeps RLlib's default name)


def loss_rows(batch: dict[str, Any], x: torch.Tensor) -> torch.Tensor:
    """The rows of ``x`` (one per row of a PPO train batch) that are real timesteps: RLlib adds
    one masked step per episode."""
    mask = batch.get(Columns.LOSS_MASK)
    return x if mask is None else x[mask]


def masked_rows(batch: dict[str, Any], fwd_out: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The real timesteps of a PPO train batch (`loss_rows`) in the columns
    `synpo_loss_terms` reads; the action taken stands in for the expert's."""
    actions_all = batch[Columns.ACTIONS]
    actions = loss_rows(batch, actions_all).long()
    aux_batch = {
        Columns.OBS: {key: loss_rows(batch, value) for key, value in batch[Columns.OBS].items()},
        EXPERT_ACTION: actions,
        EXECUTED_ACTION: actions,
        Columns.REWARDS: loss_rows(batch, batch[Columns.REWARDS]),
    }
    aux_out = {
        key: loss_rows(batch, value)
        for key, value in fwd_out.items()
        if torch.is_tensor(value) and value.shape[:1] == actions_all.shape[:1]
    }
    return aux_batch, aux_out


class SynPoPPOTorchLearner(PPOTorchLearner):
    """PPO's loss ``+ l1 * MSE(r_hat) + l2 * CE_env + l3 * CE_task`` on the taken actions'
    state-action features ``+ imitation_kl_coeff * KL(pi_imitation || pi)``; every auxiliary
    term is logged under its own name. The optimizer is RMSProp (the paper) or Adam, with
    weight decay."""

    def build(self) -> None:
        flush_denormals_where_wanted()  # a remote learner's process: before torch's threads start
        super().build()
        # The frozen imitation policy of the KL penalty: not a module of the learner, so neither
        # trained, nor checkpointed, nor sent to the env runners (a resumed run reloads it).
        self.imitation_reference = None
        if self.config.imitation_kl_coeff > 0:
            _, reference = load_imitation_module(self.config.imitation_checkpoint)
            self.imitation_reference = reference.to(self.device).eval().requires_grad_(False)

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        optimizer_class, options = (torch.optim.Adam, fused_adam_options(self.module[module_id].parameters()))
        if config.optimizer_type == "rmsprop":
            optimizer_class, options = torch.optim.RMSprop, {"alpha": RMSPROP_ALPHA, "eps": RMSPROP_EPS}
        value_head = getattr(self.module[module_id].unwrapped().net, "value_head", None)
        if value_head is None:  # ModuleNet: the value is an output of its modules
            register_module_optimizer(self, module_id, config, optimizer_class, **options)
            return
        # The value head (on detached features) gets its own optimizer: its own learning rate,
        # and its large early gradients clipped apart from the policy's.
        value_params = {id(p) for p in value_head.parameters()}
        params = self.get_parameters(self.module[module_id])
        register_module_optimizer(
            self,
            module_id,
            config,
            optimizer_class,
            params=[p for p in params if id(p) not in value_params],
            **options,
        )
        register_module_optimizer(
            self,
            module_id,
            config,
            optimizer_class,
            params=[p for p in params if id(p) in value_params],
            name=VALUE_OPTIMIZER,
            lr=config.value_lr,
            **options,
        )

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        total = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        aux_batch, aux_out = masked_rows(batch, fwd_out)
        # Only the named auxiliary terms are used (PPO's surrogate replaces the imitation term).
        weights = LossWeights(l1=config.l1, l2=config.l2, l3=config.l3, sf_td=0.0, sf_reconstruction=0.0)
        terms = synpo_loss_terms(self.module[module_id].unwrapped(), aux_batch, aux_out, weights)
        for name, weight in AUX_LOSSES.items():
            if name not in terms:  # a baseline network without this term
                continue
            total = total + getattr(config, weight) * terms[name]
            self.metrics.log_value((module_id, name), terms[name].detach(), window=1)
        if self.imitation_reference is not None:
            with torch.no_grad():
                reference_logits = self.imitation_reference.forward_inference(
                    {Columns.OBS: batch[Columns.OBS]}
                )[Columns.ACTION_DIST_INPUTS]
            kl = kl_to_reference(loss_rows(batch, reference_logits), aux_out[Columns.ACTION_DIST_INPUTS])
            total = total + config.imitation_kl_coeff * kl
            self.metrics.log_value((module_id, IMITATION_KL_LOSS), kl.detach(), window=1)
        return total
