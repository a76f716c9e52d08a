"""SynPo's four loss terms, each its own function (plain torch; the learner only adds them).

``L = CE(pi, a_expert) + l1 * MSE(r_hat(s, a_expert), r) + l2 * CE_env + l3 * CE_task``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def policy_loss(logits: torch.Tensor, expert_actions: torch.Tensor, action_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Behaviour cloning: cross-entropy of the policy against the expert's action (optionally
    weighting each action class, e.g. the rare pick-up)."""
    return F.cross_entropy(logits, expert_actions, weight=action_weights)


def relabelled_policy_loss(task_logits: torch.Tensor, task_labels: torch.Tensor, action_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy against the expert's action for every task of a state that has a label
    (``task_labels[n, t] >= 0``: a seen pair for which the state is possible)."""
    mask = task_labels >= 0
    return F.cross_entropy(task_logits[mask], task_labels[mask].long(), weight=action_weights)


def taken(values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """values[n, actions[n], ...] for every row n."""
    return values[torch.arange(len(actions), device=values.device), actions]


def reward_loss(predicted_rewards: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """MSE between the predicted reward of the action taken and the reward received."""
    return F.mse_loss(taken(predicted_rewards, actions), rewards.float())


def disentangle_loss(scores: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of scores against all environment (or task) embeddings for the true id."""
    return F.cross_entropy(scores, ids)


def synpo_total(terms: dict[str, torch.Tensor], l1: float, l2: float, l3: float) -> torch.Tensor:
    """The paper's weighted sum of the four named terms."""
    return (
        terms["policy_loss"]
        + l1 * terms["reward_loss"]
        + l2 * terms["env_disentangle_loss"]
        + l3 * terms["task_disentangle_loss"]
    )
