"""MLP baseline (SynPo paper, section 4): "The policy network is a multilayer perceptron whose
input concatenates state features and the environment and task embeddings. We train this
baseline using the proposed losses for our approach, including the disentanglement losses."

As in the authors' released ``GridWorldMLP``: policy and reward heads are one-hidden-layer MLPs
on ``[psi_s; e_env; e_task]`` (released sizes 512 -> 1024 -> ReLU -> |A|; here
``feature_dim + 2 * embedding_dim -> hidden_dim -> |A|``), and the disentanglement classifiers
read the *state* feature psi_s (there is no state-action feature), scored by dot product against
all environment (task) embeddings like SynPo's. ``normalize_embeddings`` (the authors' MLP has
it too) feeds unit-length embeddings to the heads, as SynPo's option does to alpha and beta.

Interface: ``sa_features`` is psi_s broadcast over the actions (an expanded view, no copy), so
``taken(sa_features, a)`` is psi_s and ``task_logits`` can rebuild every task's logits from it.
"""

from __future__ import annotations

import torch
from torch import nn

from rllib_synpo.losses import SYNPO_LOSS_TERMS
from rllib_synpo.networks.encoders import make_encoder
from rllib_synpo.networks.synpo import SynPoOutputs, embedding_rows, mlp


class MLPNetwork(nn.Module):
    """Encoder + MLP heads on ``[psi; e_env; e_task]``. ``basis_dim`` is accepted for the
    shared model config and unused."""

    LOSS_TERMS = SYNPO_LOSS_TERMS

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
        normalize_embeddings: bool = False,
        encoder_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        del basis_dim  # no basis in this baseline
        self.normalize_embeddings = normalize_embeddings  # unit-length embeddings into the heads
        self.encoder = make_encoder(encoder, obs_shape, feature_dim, **(encoder_kwargs or {}))
        self.env_embedding = nn.Embedding(num_envs, embedding_dim)
        self.task_embedding = nn.Embedding(num_tasks, embedding_dim)
        inputs = feature_dim + 2 * embedding_dim
        self.feature_dim = feature_dim
        self.policy_head = mlp(inputs, hidden_dim, num_actions)
        self.reward_head = mlp(inputs, hidden_dim, num_actions)
        self.env_head = mlp(feature_dim, hidden_dim, embedding_dim)  # classifiers on psi_s
        self.task_head = mlp(feature_dim, hidden_dim, embedding_dim)
        self.value_head = nn.Linear(inputs, 1)
        nn.init.zeros_(self.value_head.weight)  # PPO starts from the imitation policy's values
        nn.init.zeros_(self.value_head.bias)

    def forward(self, obs: torch.Tensor, env_id: torch.Tensor, task_id: torch.Tensor) -> SynPoOutputs:
        psi = self.encoder(obs)
        e_env, e_task = self.embed(self.env_embedding, env_id), self.embed(self.task_embedding, task_id)
        inputs = torch.cat([psi, e_env, e_task], dim=-1)
        logits = self.policy_head(inputs)
        return SynPoOutputs(
            logits=logits,
            reward=self.reward_head(inputs),
            sa_features=psi.unsqueeze(1).expand(-1, logits.shape[-1], -1),
            value=self.value_head(inputs.detach()).squeeze(
                -1
            ),  # reads the features, never trains them (SynPoOutputs.value)
        )

    def embed(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return embedding_rows(table, ids, self.normalize_embeddings)

    def task_logits(self, sa_features: torch.Tensor, env_id: torch.Tensor) -> torch.Tensor:
        """(N, T, A) logits of every task in each row's environment. The first layer is linear
        in the concatenation, so its state/environment part is computed once per row and its
        task part once per task, then broadcast."""
        first, hidden_to_logits = self.policy_head[0], self.policy_head[2]
        psi = sa_features[:, 0]
        embedding_dim = self.env_embedding.embedding_dim
        w_state, w_env, w_task = first.weight.split([self.feature_dim, embedding_dim, embedding_dim], dim=1)
        per_row = psi @ w_state.T + self.embed(self.env_embedding, env_id) @ w_env.T + first.bias  # (N, H)
        all_tasks = torch.arange(self.task_embedding.num_embeddings, device=psi.device)
        per_task = self.embed(self.task_embedding, all_tasks) @ w_task.T  # (T, H)
        return hidden_to_logits(torch.relu(per_row.unsqueeze(1) + per_task.unsqueeze(0)))

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores of psi_s against all env embeddings (via g) and all task embeddings (via h)."""
        env_scores = self.env_head(sa_taken) @ self.env_embedding.weight.T
        task_scores = self.task_head(sa_taken) @ self.task_embedding.weight.T
        return env_scores, task_scores
