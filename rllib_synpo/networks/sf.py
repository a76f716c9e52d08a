"""SF baseline (SynPo paper, section 4): successor features (Barreto et al. 2017) trained by
Q-imitation, with the learning objectives of Kulkarni et al. 2016 ("Deep Successor Reinforcement
Learning").

- state-action features ``phi(s, a) = psi_s @ Phi[a]`` (one ``feature_dim x basis_dim`` map per
  action, as SynPo parameterizes ``Theta phi_a``);
- successor features per environment ``m(s, a; e_env)``: a one-hidden-layer MLP on
  ``[psi_s; e_env]`` with ``|A| x basis_dim`` outputs;
- task reward weights ``w_task = W e_task`` (a linear map of the task embedding, so that new
  tasks are learnt as new embeddings like everywhere else);
- ``Q(s, a) = m(s, a) . w_task`` are the policy logits, ``r_hat(s, a) = phi(s, a) . w_task``.

Objectives (`rllib_synpo.losses`): Q-imitation (softmax cross-entropy of Q against the expert's
action), reward regression and the successor features' TD consistency
``m(s, a) ≈ phi(s, a) + discount * m(s', a'_expert)``. Kulkarni et al.'s reconstruction
(autoencoder) term is not used (the state feature is learnt through the other terms), nor is a
target network. There are no disentanglement terms (not among Kulkarni et al.'s objectives):
``disentangle_scores`` raises.

Interface: ``sa_features`` are the successor features m (N, A, K), so ``task_logits`` is
``m . w_t`` for every task t; ``extras`` carry phi ("features") and w ("task_weights").
"""

from __future__ import annotations

import torch
from torch import nn

from rllib_synpo.losses import POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS
from rllib_synpo.networks.encoders import make_encoder
from rllib_synpo.networks.synpo import SynPoOutputs, mlp

SF_DISCOUNT = 0.99  # Kulkarni et al.'s discount


class SuccessorFeatureNetwork(nn.Module):
    """Encoder + state-action features, per-environment successor features and task weights."""

    LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS})

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
        discount: float = SF_DISCOUNT,
    ) -> None:
        super().__init__()
        self.encoder = make_encoder(encoder, obs_shape, feature_dim, **(encoder_kwargs or {}))
        self.env_embedding = nn.Embedding(num_envs, embedding_dim)
        self.task_embedding = nn.Embedding(num_tasks, embedding_dim)
        self.num_actions, self.basis_dim, self.discount = num_actions, basis_dim, discount
        self.feature_basis = nn.Parameter(torch.randn(num_actions, feature_dim, basis_dim) / feature_dim**0.5)
        self.successor = mlp(feature_dim + embedding_dim, hidden_dim, num_actions * basis_dim)
        self.task_weights = nn.Linear(embedding_dim, basis_dim, bias=False)
        self.value_head = nn.Linear(feature_dim + 2 * embedding_dim, 1)
        nn.init.zeros_(self.value_head.weight)  # PPO starts from the imitation policy's values
        nn.init.zeros_(self.value_head.bias)

    def forward(self, obs: torch.Tensor, env_id: torch.Tensor, task_id: torch.Tensor) -> SynPoOutputs:
        psi = self.encoder(obs)
        e_env, e_task = self.env_embedding(env_id), self.task_embedding(task_id)
        features = torch.einsum("nf,afk->nak", psi, self.feature_basis)  # phi(s, a)
        successor = self.successor(torch.cat([psi, e_env], dim=-1)).view(
            len(psi), self.num_actions, self.basis_dim
        )
        w = self.task_weights(e_task)
        return SynPoOutputs(
            logits=torch.einsum("nak,nk->na", successor, w),  # Q(s, a)
            reward=torch.einsum("nak,nk->na", features, w),
            sa_features=successor,
            value=self.value_head(torch.cat([psi, e_env, e_task], dim=-1).detach()).squeeze(
                -1
            ),  # reads the features, never trains them (SynPoOutputs.value)
            extras={"features": features, "task_weights": w},
        )

    def task_logits(self, sa_features: torch.Tensor, env_id: torch.Tensor) -> torch.Tensor:
        """(N, T, A): Q of every task, ``m(s, a; e_env) . w_t`` (m does not depend on the task)."""
        return torch.einsum("nak,tk->nta", sa_features, self.task_weights(self.task_embedding.weight))

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError(
            "SF follows Kulkarni et al. 2016's objectives (Q-imitation, reward regression, SF TD), "
            "which have no disentanglement heads"
        )
