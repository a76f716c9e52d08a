"""`SynPoTorchLearner`: computes SynPo's loss (or a baseline network's) and nothing else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import DEFAULT_OPTIMIZER
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
from ray.rllib.utils.schedules.scheduler import Scheduler

from rllib_synpo.columns import EXECUTED_ACTION, EXPERT_ACTION, NEXT_ROW, TASK_LABELS
from rllib_synpo.losses import (
    SF_RECONSTRUCTION_WEIGHT,
    SF_TD_WEIGHT,
    TOTAL_LOSS,
    LossWeights,
    imitation_losses,
)
from rllib_synpo.rl_module import outputs_from_fwd_out
from rllib_synpo.utils.denormals import flush_denormals_where_wanted
from rllib_synpo.utils.optimizers import finite_norm, fused_adam_options
from rllib_synpo.utils.precision import resolve_precision, training_autocast

# The batch columns, re-exported for the modules that build batches.
__all__ = [
    "EXECUTED_ACTION",
    "EXPERT_ACTION",
    "NEXT_ROW",
    "TASK_LABELS",
    "SynPoTorchLearner",
    "synpo_loss_terms",
]

# learner_config_dict keys of the SF TD and reconstruction terms' weights
# (`config.learners(learner_config_dict=...)`).
SF_TD_WEIGHT_KEY = "sf_td_weight"
SF_RECONSTRUCTION_WEIGHT_KEY = "sf_reconstruction_weight"
# learner_config_dict key that restricts training to chosen embedding rows (adaptation to new
# environments and tasks): ``{"env_embedding": [ids...], "task_embedding": [ids...]}``, see
# `SynPoTorchLearner`.
ADAPT_ROWS_KEY = "train_only_embedding_rows"


def synpo_loss_terms(
    module, batch: dict[str, Any], fwd_out: dict[str, Any], weights: LossWeights | None = None
) -> dict[str, torch.Tensor]:
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


def embedding_rows(config) -> dict[str, list[int]] | None:
    """The config's `ADAPT_ROWS_KEY` entry as ``{embedding name: sorted row ids}``, or None
    where the learner trains the whole module."""
    rows = config.learner_config_dict.get(ADAPT_ROWS_KEY)
    if rows is None:
        return None
    if not isinstance(rows, Mapping) or not rows:
        raise ValueError(
            f"learner_config_dict[{ADAPT_ROWS_KEY!r}] must map embedding names to row ids, got {rows!r}"
        )
    return {name: sorted({int(row) for row in ids}) for name, ids in rows.items()}


def row_masks(net: torch.nn.Module, rows: Mapping[str, Sequence[int]]) -> dict[str, torch.Tensor]:
    """``{name: (num_embeddings,) bool mask of the listed rows}`` for each ``nn.Embedding``
    attribute ``name`` of ``net`` (the RLModule's network) that lists at least one row."""
    children = net.named_children()
    embeddings = {name: child for name, child in children if isinstance(child, torch.nn.Embedding)}
    masks = {}
    for name, ids in rows.items():
        if name not in embeddings:
            raise ValueError(f"{ADAPT_ROWS_KEY}: the network {type(net).__name__} has no embedding {name!r}")
        embedding = embeddings[name]
        outside = [row for row in ids if not 0 <= row < embedding.num_embeddings]
        if outside:
            last = embedding.num_embeddings - 1
            raise ValueError(f"{ADAPT_ROWS_KEY}: rows {outside} are not rows of {name} (0..{last})")
        if ids:
            mask = torch.zeros(embedding.num_embeddings, dtype=torch.bool, device=embedding.weight.device)
            mask[list(ids)] = True
            masks[name] = mask
    if not masks:
        raise ValueError(f"{ADAPT_ROWS_KEY}: {dict(rows)} lists no row to train")
    return masks


def _eval_mode_pre_hook(network: torch.nn.Module, args) -> None:
    """Forward pre-hook: the network runs in eval mode (normalization layers use and keep their
    running statistics, dropout is off) even right after RLlib's ``forward_train`` switched the
    whole RLModule to train mode."""
    network.eval()


def loss_weights(config) -> LossWeights:
    """l1, l2, l3 from the algorithm config; SF's TD and reconstruction weights from its
    ``learner_config_dict``."""
    learner_config = config.learner_config_dict
    return LossWeights(
        config.l1,
        config.l2,
        config.l3,
        learner_config.get(SF_TD_WEIGHT_KEY, SF_TD_WEIGHT),
        learner_config.get(SF_RECONSTRUCTION_WEIGHT_KEY, SF_RECONSTRUCTION_WEIGHT),
    )


def register_module_optimizer(
    learner: TorchLearner,
    module_id,
    config,
    optimizer_class=torch.optim.Adam,
    *,
    params=None,
    name: str = DEFAULT_OPTIMIZER,
    lr=None,
    **options,
) -> None:
    """An ``optimizer_class`` with the config's ``weight_decay`` over ``params`` (default: all
    the module's) at ``lr`` (default: ``config.lr``); shared by the imitation and PPO learners."""
    params = learner.get_parameters(learner.module[module_id]) if params is None else list(params)
    optimizer = optimizer_class(params, weight_decay=config.weight_decay, **options)
    # RLlib's scheduler sets (and updates) the learning rate from lr_or_lr_schedule.
    learner.register_optimizer(
        module_id=module_id,
        optimizer_name=name,
        optimizer=optimizer,
        params=params,
        lr_or_lr_schedule=config.lr if lr is None else lr,
    )


class SynPoTorchLearner(TorchLearner):
    """``CE(pi, a_expert) + l1 * MSE(r_hat, r) + l2 * CE_env + l3 * CE_task`` (for baseline
    networks: their own terms, `rllib_synpo.losses.imitation_losses`), each term logged.
    The optimizer is (fused) Adam with the config's ``weight_decay``; the forward pass runs at
    the config's ``precision``.

    Training only chosen embedding rows (``config.learners(learner_config_dict={ADAPT_ROWS_KEY:
    {"env_embedding": [20], "task_embedding": [19]}})``, what `rllib_synpo.adaptation` does for new
    environments and tasks): the names are ``nn.Embedding`` attributes of the module's network.
    Then every other parameter is frozen (``requires_grad`` off), the optimizer is (fused) Adam
    at the config's ``lr`` over the listed embeddings' weights only and without weight decay
    (with a zero gradient, Adam leaves a row exactly as it is), `postprocess_gradients_for_module`
    zeroes the gradient of every row not listed, and the module's networks run in eval mode
    during updates, so BatchNorm's running statistics are used and never change and dropout is
    off: every parameter and buffer except the listed rows stays bit-identical. Without the key
    the whole module trains as described above."""

    def build(self) -> None:
        # {module_id: {parameter reference: (rows, 1) mask of the rows that train}}; filled by
        # `configure_optimizers_for_module` (which `super().build()` calls) where the config
        # restricts training to embedding rows.
        self.trained_row_masks: dict[Any, dict[Any, torch.Tensor]] = {}
        flush_denormals_where_wanted()  # a remote learner's process: before torch's threads start
        super().build()
        self.precision = resolve_precision(self.config.precision, self.device or "cpu")
        # {module_id: Scheduler} of the modules whose model_config gives env_dropout a schedule.
        self.env_dropout_schedulers = {}
        for module_id in self.module.keys():
            env_dropout = self.module[module_id].unwrapped().model_config.get("env_dropout")
            if isinstance(env_dropout, (list, tuple)):
                self.env_dropout_schedulers[module_id] = Scheduler(env_dropout)
        # Each trained parameter by its reference (what gradient dicts are keyed by).
        self.parameters_by_ref = {
            self.get_param_ref(param): param
            for module_id in self.module.keys()
            for param in self.get_parameters(self.module[module_id])
        }

    def update(self, *args, **kwargs):
        # The autocast spans each minibatch's forward pass, losses, backward and optimizer step
        # (RLlib runs them inside `update`): the backward runs each op in the dtype its forward
        # used either way, and Adam's elementwise ops are not autocast ops, so this equals
        # autocasting the forward pass alone (tested).
        with training_autocast(self.precision, self.device or "cpu"):
            return super().update(*args, **kwargs)

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        # An env_dropout schedule moves on the clock of the learning-rate schedules.
        for module_id, scheduler in self.env_dropout_schedulers.items():
            clock = timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
            self.module[module_id].unwrapped().net.env_dropout = scheduler.update(clock)

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        rows = embedding_rows(config)
        if rows is not None:
            self._configure_embedding_rows(module_id, config, rows)
            return
        register_module_optimizer(
            self, module_id, config, **fused_adam_options(self.module[module_id].parameters())
        )

    def _configure_embedding_rows(self, module_id, config, rows: dict[str, list[int]]) -> None:
        """Freezes ``module_id`` but for the ``rows`` of its network's embeddings: registers
        Adam (no weight decay) over those embeddings' weights, keeps the row masks for
        `postprocess_gradients_for_module` and makes the module's networks run in eval mode."""
        module = self.module[module_id].unwrapped()
        masks = row_masks(module.net, rows)
        params = [getattr(module.net, name).weight for name in masks]
        for param in module.parameters():
            param.requires_grad_(any(param is p for p in params))
        self.trained_row_masks[module_id] = {
            self.get_param_ref(param): mask.unsqueeze(-1) for param, mask in zip(params, masks.values())
        }
        # RLlib's TorchRLModule.forward_train calls `self.train()` at every update (after any
        # learner hook such as `before_gradient_based_update` has run), so eval mode is set by
        # a forward pre-hook on each of the module's child networks, which runs after it.
        for child in module.children():
            child.register_forward_pre_hook(_eval_mode_pre_hook)
        optimizer = torch.optim.Adam(params, weight_decay=0.0, **fused_adam_options(params))
        self.register_optimizer(
            module_id=module_id, optimizer=optimizer, params=params, lr_or_lr_schedule=config.lr
        )

    def postprocess_gradients_for_module(self, *, module_id, config=None, module_gradients_dict):
        # Where only chosen embedding rows train: every other row's gradient is exactly zero
        # (before RLlib's optional clipping, so a clipping norm counts the trained rows only).
        masks = self.trained_row_masks.get(module_id)
        if masks:
            module_gradients_dict = {
                ref: grad.masked_fill(~masks[ref], 0.0) if ref in masks and grad is not None else grad
                for ref, grad in module_gradients_dict.items()
            }
        return super().postprocess_gradients_for_module(
            module_id=module_id, config=config, module_gradients_dict=module_gradients_dict
        )

    def apply_gradients(self, gradients_dict) -> None:
        # RLlib's own checks each gradient for nan/inf one tensor at a time (a profile's visible
        # share of an update); one reduction tells whether its handling is needed (it also
        # steps normally where a finite norm merely overflowed). Torch learning-rate schedulers
        # and gradient scalers (`config.experimental(_torch_lr_scheduler_classes=...,
        # _torch_grad_scaler_class=...)`, Ray internals pinned in tests/rllib/test_ray_internals.py)
        # are RLlib's to step.
        if (
            self.config._torch_lr_scheduler_classes is not None
            or self.config._torch_grad_scaler_class is not None
            or self.config.torch_skip_nan_gradients
            or not finite_norm(gradients_dict.values())
        ):
            return super().apply_gradients(gradients_dict)  # e.g. zeroes nan/inf gradients, with a warning
        for param_ref, gradient in gradients_dict.items():
            self.parameters_by_ref[param_ref].grad = gradient
        for module_id in self.module.keys():
            for _, optimizer in self.get_optimizers_for_module(module_id):
                optimizer.step()

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        terms = synpo_loss_terms(self.module[module_id].unwrapped(), batch, fwd_out, loss_weights(config))
        total = terms.pop(TOTAL_LOSS)
        with torch.no_grad():
            accuracy = (
                (fwd_out[Columns.ACTION_DIST_INPUTS].argmax(-1) == batch[EXPERT_ACTION].long()).float().mean()
            )
        for name, value in {**terms, "action_accuracy": accuracy}.items():
            self.metrics.log_value((module_id, name), value.detach(), window=1)
        return total
