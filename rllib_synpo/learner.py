"""`SynPoTorchLearner`: computes SynPo's loss (or a baseline network's) and nothing else."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import DEFAULT_OPTIMIZER
from ray.rllib.core.learner.torch.torch_learner import TorchLearner

from rllib_synpo.losses import SF_TD_WEIGHT, TOTAL_LOSS, LossWeights, imitation_losses
from rllib_synpo.optimizers import finite_norm, fused_adam_options
from rllib_synpo.precision import resolve_precision, training_autocast
from rllib_synpo.rl_module import outputs_from_fwd_out

# Batch columns besides the observation.
EXPERT_ACTION = "expert_action"
EXECUTED_ACTION = "executed_action"
TASK_LABELS = "task_labels"  # (N, T) expert actions for every seen task, -1 none (relabelling)
NEXT_ROW = "next_row"  # (N,) row of the next step in the batch, -1 at an episode's end (SF's TD)
# learner_config_dict key of the SF TD term's weight (`config.learners(learner_config_dict=...)`).
SF_TD_WEIGHT_KEY = "sf_td_weight"


def synpo_loss_terms(module, batch: dict[str, Any], fwd_out: dict[str, Any], weights: LossWeights | None = None) -> dict[str, torch.Tensor]:
    """The named terms of the module's network on one batch, and their weighted ``total_loss``
    (shared by the imitation and the PPO learners)."""
    obs = batch[Columns.OBS]
    return imitation_losses(
        module.net,
        outputs_from_fwd_out(fwd_out),
        expert_actions=batch[EXPERT_ACTION].long(),
        executed_actions=batch[EXECUTED_ACTION].long(),
        rewards=batch[Columns.REWARDS],
        env_id=obs["env_id"].long(),
        task_id=obs["task_id"].long(),
        weights=weights or LossWeights(),
        task_labels=batch.get(TASK_LABELS),
        next_rows=batch.get(NEXT_ROW),
    )


def loss_weights(config) -> LossWeights:
    """l1, l2, l3 from the algorithm config; SF's TD weight from its ``learner_config_dict``."""
    return LossWeights(config.l1, config.l2, config.l3, config.learner_config_dict.get(SF_TD_WEIGHT_KEY, SF_TD_WEIGHT))


def register_module_optimizer(
    learner: TorchLearner, module_id, config, optimizer_class=torch.optim.Adam, *, params=None, name: str = DEFAULT_OPTIMIZER, lr=None, **options
) -> None:
    """An ``optimizer_class`` with the config's ``weight_decay`` over ``params`` (default: all
    the module's) at ``lr`` (default: ``config.lr``); shared by the imitation and PPO learners."""
    params = learner.get_parameters(learner.module[module_id]) if params is None else list(params)
    optimizer = optimizer_class(params, weight_decay=config.weight_decay, **options)
    # RLlib's scheduler sets (and updates) the learning rate from lr_or_lr_schedule.
    learner.register_optimizer(
        module_id=module_id, optimizer_name=name, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr if lr is None else lr
    )


class SynPoTorchLearner(TorchLearner):
    """``CE(pi, a_expert) + l1 * MSE(r_hat, r) + l2 * CE_env + l3 * CE_task`` (for baseline
    networks: their own terms, `rllib_synpo.losses.imitation_losses`), each term logged.
    The optimizer is (fused) Adam with the config's ``weight_decay``; the forward pass runs at
    the config's ``precision``."""

    def build(self) -> None:
        super().build()
        self.precision = resolve_precision(self.config.precision, self._device or "cpu")

    def _uncompiled_update(self, batch, **kwargs):
        # The autocast also spans TorchLearner's backward and optimizer step (one method): the
        # backward runs each op in the dtype its forward used either way, and Adam's elementwise
        # ops are not autocast ops, so this equals autocasting the forward pass alone (tested).
        with training_autocast(self.precision, self._device or "cpu"):
            return super()._uncompiled_update(batch, **kwargs)

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        register_module_optimizer(self, module_id, config, **fused_adam_options(self.module[module_id].parameters()))

    def apply_gradients(self, gradients_dict) -> None:
        # RLlib's own checks each gradient for nan/inf twice, one tensor at a time (a profile's
        # visible share of an update); one reduction tells whether its handling is needed (it
        # also steps normally where a finite norm merely overflowed).
        if (
            self._lr_scheduler_classes is not None
            or self._grad_scalers is not None
            or self.config.torch_skip_nan_gradients
            or not finite_norm(gradients_dict.values())
        ):
            return super().apply_gradients(gradients_dict)  # e.g. zeroes nan/inf gradients, with a warning
        for param_ref, gradient in gradients_dict.items():
            self._params[param_ref].grad = gradient
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self.get_optimizer(module_id, optimizer_name).step()

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        terms = synpo_loss_terms(self.module[module_id].unwrapped(), batch, fwd_out, loss_weights(config))
        total = terms.pop(TOTAL_LOSS)
        with torch.no_grad():
            accuracy = (fwd_out[Columns.ACTION_DIST_INPUTS].argmax(-1) == batch[EXPERT_ACTION].long()).float().mean()
        for name, value in {**terms, "action_accuracy": accuracy}.items():
            self.metrics.log_value((module_id, name), value.detach(), window=1)
        return total
