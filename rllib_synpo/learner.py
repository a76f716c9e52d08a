"""`SynPoTorchLearner`: computes SynPo's loss and nothing else."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner

from rllib_synpo.losses import disentangle_loss, policy_loss, relabelled_policy_loss, reward_loss, synpo_total, taken
from rllib_synpo.rl_module import REWARD_PREDICTIONS, SA_FEATURES

# Batch columns besides the observation.
EXPERT_ACTION = "expert_action"
EXECUTED_ACTION = "executed_action"
TASK_LABELS = "task_labels"  # (N, T) expert actions for every seen task, -1 none (relabelling)


def synpo_loss_terms(module, batch: dict[str, Any], fwd_out: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The four named terms on one batch (shared by the imitation and the PPO learners)."""
    expert = batch[EXPERT_ACTION].long()
    obs = batch[Columns.OBS]
    env_scores, task_scores = module.disentangle_scores(taken(fwd_out[SA_FEATURES], expert))
    if TASK_LABELS in batch:
        task_logits = module.net.task_logits(fwd_out[SA_FEATURES], obs["env_id"].long())
        imitation = relabelled_policy_loss(task_logits, batch[TASK_LABELS])
    else:
        imitation = policy_loss(fwd_out[Columns.ACTION_DIST_INPUTS], expert)
    return {
        "policy_loss": imitation,
        "reward_loss": reward_loss(fwd_out[REWARD_PREDICTIONS], batch[EXECUTED_ACTION].long(), batch[Columns.REWARDS]),
        "env_disentangle_loss": disentangle_loss(env_scores, obs["env_id"].long()),
        "task_disentangle_loss": disentangle_loss(task_scores, obs["task_id"].long()),
    }


class SynPoTorchLearner(TorchLearner):
    """``CE(pi, a_expert) + l1 * MSE(r_hat, r) + l2 * CE_env + l3 * CE_task``, each term logged."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        terms = synpo_loss_terms(self.module[module_id].unwrapped(), batch, fwd_out)
        total = synpo_total(terms, config.l1, config.l2, config.l3)
        with torch.no_grad():
            accuracy = (fwd_out[Columns.ACTION_DIST_INPUTS].argmax(-1) == batch[EXPERT_ACTION].long()).float().mean()
        for name, value in {**terms, "action_accuracy": accuracy}.items():
            self.metrics.log_value((module_id, name), value.detach(), window=1)
        return total
