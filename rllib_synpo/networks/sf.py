"""SF baselines: successor features (Barreto et al. 2017) trained by Q-imitation, with the
learning objectives of Kulkarni et al. 2016 ("Deep Successor Reinforcement Learning").

`SuccessorFeatureNetwork` (``network: sf``) is the SynPo paper's SF (section 4): "The key
difference of SF from our approach is its lack of capability in capturing the environmental
priors", so nothing in it reads the environment embedding; the task enters only through its
reward weights.

- state feature ``psi_s`` (the encoder) and state-action features ``phi(s, a) = psi_s @ Phi[a]``
  (one ``feature_dim x basis_dim`` map per action, as SynPo parameterizes ``Theta phi_a``);
- successor features ``m(s, a)``: a one-hidden-layer MLP on ``psi_s`` with ``|A| x basis_dim``
  outputs (Kulkarni et al.'s ``u_alpha(phi_s, a)``);
- task reward weights ``w_task = W e_task`` (a linear map of the task embedding, so that new
  tasks are learnt as new embeddings like everywhere else);
- ``Q(s, a) = m(s, a) . w_task`` are the policy logits, ``r_hat(s, a) = phi(s, a) . w_task``;
- a decoder ``g(psi_s)`` that reconstructs the observation (Kulkarni et al.'s autoencoder).

Objectives (`rllib_synpo.losses`): Q-imitation (softmax cross-entropy of Q against the expert's
action), reward regression, the successor features' TD consistency ``m(s, a) ≈ phi(s, a) +
discount * m(s', a'_expert)`` and the reconstruction of the observation. No target network (the
TD target is not differentiated). There are no disentanglement terms (not among Kulkarni et
al.'s objectives): ``disentangle_scores`` raises. ``env_embedding`` exists for the shared
interface (the adaptation code grows it) and nothing reads it.

`EnvironmentSuccessorFeatureNetwork` (``network: sf_env``, beyond the paper): the same with the
successor features conditioned on the environment, ``m(s, a; e_env)`` an MLP on ``[psi_s;
e_env]``, and without the reconstruction term.

Interface: ``sa_features`` are the successor features m (N, A, K), so ``task_logits`` is
``m . w_t`` for every task t; ``extras`` carry phi ("features"), w ("task_weights") and, for
``sf``, psi ("state_features"). The reconstruction and its target (``reconstruction_target``)
are loss inputs, built in training only (`rllib_synpo.losses.loss_inputs`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rllib_synpo.losses import (
    POLICY_LOSS,
    REWARD_LOSS,
    SF_RECONSTRUCTION_LOSS,
    SF_TD_LOSS,
    STATE_FEATURES,
)
from rllib_synpo.networks.encoders import PIXEL_SCALE, make_encoder
from rllib_synpo.networks.synpo import SynPoOutputs, embedding_rows, mlp

SF_DISCOUNT = 0.99  # Kulkarni et al.'s discount


class SuccessorFeatureNetwork(nn.Module):
    """The paper's SF: encoder, state-action features, successor features of the state alone,
    task weights and the observation's decoder."""

    LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS, SF_RECONSTRUCTION_LOSS})
    ENVIRONMENT_CONDITIONED = False

    def __init__(
        self,
        *,
        obs_shape: tuple[int, ...],
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
        discount: float = SF_DISCOUNT,
    ) -> None:
        super().__init__()
        self.encoder = make_encoder(encoder, obs_shape, feature_dim, **(encoder_kwargs or {}))
        self.env_embedding = nn.Embedding(num_envs, embedding_dim)
        self.task_embedding = nn.Embedding(num_tasks, embedding_dim)
        self.normalize_embeddings = normalize_embeddings
        self.num_actions, self.basis_dim, self.discount = num_actions, basis_dim, discount
        self.feature_basis = nn.Parameter(torch.randn(num_actions, feature_dim, basis_dim) / feature_dim**0.5)
        successor_inputs = feature_dim + embedding_dim * self.ENVIRONMENT_CONDITIONED
        self.successor = mlp(successor_inputs, hidden_dim, num_actions * basis_dim)
        self.task_weights = nn.Linear(embedding_dim, basis_dim, bias=False)
        if SF_RECONSTRUCTION_LOSS in self.LOSS_TERMS:
            self.decoder = mlp(feature_dim, hidden_dim, math.prod(obs_shape))
        self.value_head = nn.Linear(successor_inputs + embedding_dim, 1)
        nn.init.zeros_(self.value_head.weight)  # PPO starts from the imitation policy's values
        nn.init.zeros_(self.value_head.bias)

    def embed(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return embedding_rows(table, ids, self.normalize_embeddings)

    def successor_inputs(self, psi: torch.Tensor, env_id: torch.Tensor) -> torch.Tensor:
        """What m reads: psi_s (the paper's SF), or ``[psi_s; e_env]`` (``sf_env``)."""
        if not self.ENVIRONMENT_CONDITIONED:
            return psi
        return torch.cat([psi, self.embed(self.env_embedding, env_id)], dim=-1)

    def forward(self, obs, env_id: torch.Tensor, task_id: torch.Tensor) -> SynPoOutputs:
        psi = self.encoder(obs)
        inputs = self.successor_inputs(psi, env_id)
        e_task = self.embed(self.task_embedding, task_id)
        features = torch.einsum("nf,afk->nak", psi, self.feature_basis)  # phi(s, a)
        successor = self.successor(inputs).view(len(psi), self.num_actions, self.basis_dim)
        w = self.task_weights(e_task)
        extras = {"features": features, "task_weights": w}
        if SF_RECONSTRUCTION_LOSS in self.LOSS_TERMS:
            extras[STATE_FEATURES] = psi
        return SynPoOutputs(
            logits=torch.einsum("nak,nk->na", successor, w),  # Q(s, a)
            reward=torch.einsum("nak,nk->na", features, w),
            sa_features=successor,
            # reads the features, never trains them (SynPoOutputs.value)
            value=self.value_head(torch.cat([inputs, e_task], dim=-1).detach()).squeeze(-1),
            extras=extras,
        )

    def task_logits(self, sa_features: torch.Tensor, env_id: torch.Tensor) -> torch.Tensor:
        """(N, T, A): Q of every task, ``m(s, a) . w_t`` (m does not depend on the task)."""
        all_tasks = torch.arange(self.task_embedding.num_embeddings, device=sa_features.device)
        return torch.einsum(
            "nak,tk->nta", sa_features, self.task_weights(self.embed(self.task_embedding, all_tasks))
        )

    def reconstruct(self, state_features: torch.Tensor) -> torch.Tensor:
        """(N, D): the decoder's reconstruction of the observation from psi_s."""
        return self.decoder(state_features)

    @staticmethod
    def reconstruction_target(state) -> torch.Tensor:
        """(N, D) what `reconstruct` is trained towards: the gridworld's image stack scaled to
        [0, 1], or THOR's frame features (a dict's ``features``), flattened."""
        if isinstance(state, dict):
            return state["features"].float().flatten(1)
        return state.float().flatten(1) / PIXEL_SCALE

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError(
            "SF follows Kulkarni et al. 2016's objectives (Q-imitation, reward regression, SF TD, "
            "reconstruction), which have no disentanglement heads"
        )


class EnvironmentSuccessorFeatureNetwork(SuccessorFeatureNetwork):
    """SF with environment-conditioned successor features ``m(s, a; e_env)`` and no
    reconstruction term (beyond the paper)."""

    LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS})
    ENVIRONMENT_CONDITIONED = True
