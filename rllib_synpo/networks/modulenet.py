"""ModuleNet baseline (SynPo paper, section 4, following Devin et al. 2017, "Learning Modular
Neural Network Policies for Multi-Task and Multi-Robot Transfer"): one module per task and one
per environment; the policy of a pair composes the two.

As in Devin et al. (task modules read the observation, robot modules map the task module's
output to actions): the task module ``psi_s -> h = ReLU(W_task psi_s + b_task)`` (``basis_dim``
wide: the interface between the two modules), the environment module
``h -> [policy logits (|A|); reward (|A|); value (1)] = W_env h + b_env``. The modules are the
per-id parameters, stored flattened as the rows of ``task_embedding`` (``feature_dim *
basis_dim + basis_dim`` per task) and ``env_embedding`` (``basis_dim * O + O`` per environment,
``O = 2|A| + 1``) and applied batched (gathered rows and einsum, no loop over ids).

Adaptation: those two tables are the model's "embeddings", so learning only new rows with
everything else frozen learns a new environment (task) module from demonstrations, as the other
networks learn new embeddings; new rows should start like `init_module_rows` initializes them.
There is no embedding *vector* to retrieve, so no disentanglement terms: ModuleNet trains the
policy and reward terms, and ``disentangle_scores`` raises. ``sa_features`` is psi_s broadcast
over the actions (an expanded view), from which ``task_logits`` rebuilds every task's policy.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rllib_synpo.losses import POLICY_LOSS, REWARD_LOSS
from rllib_synpo.networks.encoders import make_encoder
from rllib_synpo.networks.synpo import SynPoOutputs

MODULE_KINDS = ("env", "task")


class ModuleNetwork(nn.Module):
    """Encoder + per-task and per-environment modules. ``embedding_dim`` and ``hidden_dim`` are
    accepted for the shared model config and unused (the module sizes follow ``feature_dim``,
    ``basis_dim`` and the number of actions)."""

    LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS})

    def __init__(
        self,
        *,
        obs_shape: tuple[int, int, int],
        num_actions: int,
        num_envs: int,
        num_tasks: int,
        encoder: str = "compact",
        feature_dim: int = 128,
        embedding_dim: int = 128,
        basis_dim: int = 128,
        hidden_dim: int = 512,
        encoder_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        del embedding_dim, hidden_dim  # the modules are the embeddings
        self.encoder = make_encoder(encoder, obs_shape, feature_dim, **(encoder_kwargs or {}))
        self.feature_dim, self.module_dim, self.num_actions = feature_dim, basis_dim, num_actions
        self.env_outputs = 2 * num_actions + 1  # logits, reward, value
        self.task_embedding = nn.Embedding(num_tasks, feature_dim * basis_dim + basis_dim)
        self.env_embedding = nn.Embedding(num_envs, basis_dim * self.env_outputs + self.env_outputs)
        for kind in MODULE_KINDS:
            self.init_module_rows(kind)

    @torch.no_grad()
    def init_module_rows(self, kind: str, start: int = 0) -> None:
        """Initializes the modules of ids ``start..`` of ``kind`` ("env" or "task") like an
        ``nn.Linear`` (uniform in +-1/sqrt(fan_in)); the value output starts at zero."""
        if kind not in MODULE_KINDS:
            raise ValueError(f"unknown module kind {kind!r}; expected one of {list(MODULE_KINDS)}")
        table = self.task_embedding if kind == "task" else self.env_embedding
        rows = table.weight[start:]
        fan_in = self.feature_dim if kind == "task" else self.module_dim
        bound = 1.0 / math.sqrt(fan_in)
        rows.uniform_(-bound, bound)
        if kind == "env":
            weights, biases = self._env_modules(rows)  # copies: write the zeros back below
            weights[..., -1] = 0.0
            biases[..., -1] = 0.0
            rows.copy_(torch.cat([weights.flatten(1), biases], dim=1))

    def _env_modules(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Environment-module rows (N, K*O + O) -> weights (N, K, O) and biases (N, O)."""
        split = self.module_dim * self.env_outputs
        return rows[:, :split].reshape(len(rows), self.module_dim, self.env_outputs), rows[:, split:]

    def _task_preactivations(self, psi: torch.Tensor) -> torch.Tensor:
        """(N, T, K): every task module's pre-activation for every row, as one matrix product."""
        table = self.task_embedding.weight
        split = self.feature_dim * self.module_dim
        weights = table[:, :split].reshape(len(table), self.feature_dim, self.module_dim)  # (T, F, K)
        flat = psi @ weights.permute(1, 0, 2).reshape(self.feature_dim, -1)  # (N, T*K)
        return flat.view(len(psi), len(table), self.module_dim) + table[:, split:]

    def forward(self, obs: torch.Tensor, env_id: torch.Tensor, task_id: torch.Tensor) -> SynPoOutputs:
        psi = self.encoder(obs)
        rows = torch.arange(len(psi), device=psi.device)
        hidden = torch.relu(self._task_preactivations(psi)[rows, task_id])  # (N, K)
        weights, biases = self._env_modules(self.env_embedding(env_id))
        out = torch.einsum("nk,nko->no", hidden, weights) + biases
        actions = self.num_actions
        return SynPoOutputs(
            logits=out[:, :actions],
            reward=out[:, actions : 2 * actions],
            sa_features=psi.unsqueeze(1).expand(-1, actions, -1),
            value=out[:, -1],
        )

    def task_logits(self, sa_features: torch.Tensor, env_id: torch.Tensor) -> torch.Tensor:
        """(N, T, A): every task module composed with each row's environment module."""
        hidden = torch.relu(self._task_preactivations(sa_features[:, 0]))  # (N, T, K)
        weights, biases = self._env_modules(self.env_embedding(env_id))
        actions = self.num_actions
        return torch.einsum("ntk,nka->nta", hidden, weights[..., :actions]) + biases[:, None, :actions]

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError(
            "ModuleNet has no environment/task embedding vectors to retrieve (its embeddings are "
            "whole modules), hence no disentanglement heads; it trains the policy and reward terms"
        )
