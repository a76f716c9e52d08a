"""The SynPo network: a state encoder and the synthesized-policy head. Plain torch, no Ray.

``pi(a|s, env, task) ∝ exp(psi_s^T Theta_a alpha(e_env, e_task) + b_pi[a])``: the basis tensor
Theta maps the state feature to one K-dimensional state-action feature per action,
``sa[n, a] = psi[n] @ Theta[a]``; the coefficients alpha (policy) and beta (reward) are MLPs of
the two embeddings. The disentanglement heads g, h read ``sa[n, a_expert]`` and score it against
every environment (task) embedding.

With ``env_dropout`` (not the paper's), a training state's environment is hidden with that
probability: its policy is then conditioned on a learned unknown-environment embedding
(environment id `UNKNOWN_ENV`) instead of its environment's, so the network also learns to act
in an environment it cannot tell, the starting point adaptation can give a new one
(`rllib_synpo.adaptation`). ``env_dropout`` may also be a schedule ``[[0, p0], [t1, p1], ...]``
(piecewise linear on the algorithm's learning-rate clock): the network then starts at ``p0``
and `SynPoTorchLearner` sets the current probability before every update. Hiding from the first
update can hold the network on the plateau where its policy reads neither the environment nor
the task (results/transfer.md); a schedule that starts hiding later lets it leave that first.
With ``hidden_env_symmetries`` (gridworld only) each hidden state is also seen rotated or
mirrored (`rllib_synpo.networks.symmetries`), its state-action features mapped back to the
original actions.

With ``maze_map`` (not the paper's; gridworld only) each environment also has a wall map,
learnt from the walls its frames show (the ``maze_map_loss`` term), which the encoder reads as
one more input channel (`rllib_synpo.networks.maze_maps`); a state whose environment
``env_dropout`` hides keeps its maze's map. With ``map_routes`` (needs ``maze_map``) the
state-action features also carry, through a basis of their own, the progress each move makes
towards each colour's treasure on that map (`rllib_synpo.networks.map_routes`).

With ``subgoal_embedding`` (not the paper's; gridworld only) the task's input to alpha and beta
also carries the treasure colour the task goes for next (`rllib_synpo.networks.subgoals`):
"add" sums its embedding with e_task, "replace" feeds it alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from rllib_synpo.losses import (
    CONDITIONED_ENV_ID,
    MAZE_MAP_LOGITS,
    MAZE_MAP_LOSS,
    REMAINING_COLOURS,
    SYNPO_LOSS_TERMS,
)
from rllib_synpo.networks.encoders import make_encoder
from rllib_synpo.networks.map_routes import ROUTE_FEATURES, MapRoutes
from rllib_synpo.networks.maze_maps import MazeMapReader, maze_map_table
from rllib_synpo.networks.subgoals import SubgoalEmbedding, read_remaining_colours
from rllib_synpo.networks.symmetries import HiddenEnvSymmetries

UNKNOWN_ENV = -1  # the environment id of the unknown-environment embedding (``env_dropout``)


def env_dropout_probabilities(env_dropout: float | list) -> list[float]:
    """The probabilities ``env_dropout`` (a number, or a schedule ``[[t, p], ...]``) hides with,
    the first one first."""
    if isinstance(env_dropout, (list, tuple)):
        return [float(p) for _, p in env_dropout]
    return [float(env_dropout)]


def env_dropout_hides(env_dropout: float | list) -> bool:
    """Whether ``env_dropout`` (a number or a schedule) ever hides an environment."""
    return max(env_dropout_probabilities(env_dropout)) > 0


def option_conflict(
    env_dropout: float | list, hidden_env_symmetries: bool, maze_map: bool, map_routes: bool
) -> str | None:
    """Why these SynPo options do not go together, or None: the one message for the network and
    `check_model_config` (which refuses them before Ray starts)."""
    if hidden_env_symmetries and not env_dropout_hides(env_dropout):
        return (
            "hidden_env_symmetries transforms the states env_dropout hides; "
            f"env_dropout is {env_dropout!r}, set it above 0"
        )
    if map_routes and not maze_map:
        return "map_routes plans over the maze's map; set maze_map: true"
    return None


@dataclass
class SynPoOutputs:
    logits: torch.Tensor  # (N, A)
    reward: torch.Tensor  # (N, A): predicted reward of every action
    sa_features: torch.Tensor  # (N, A, K)
    # (N,) state value, for PPO. The value heads read the state features and embeddings through
    # a stop-gradient: fine-tuning changes them through the policy loss only. With the value
    # loss flowing into them, PPO at the paper's settings took an 83.5% (seen AvgSR) imitation
    # policy to 20% within 10 iterations (results/ppo_finetuning.md). ModuleNet's value is an
    # output of its composed modules and shares them.
    value: torch.Tensor
    # Network-specific tensors some loss terms read (SF: "features" phi, "task_weights" w).
    extras: dict[str, torch.Tensor] = field(default_factory=dict)


def embedding_rows(table: nn.Embedding, ids: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Rows ``ids`` of an embedding table, L2-normalized when ``normalize`` (the authors' code
    option ``--norm``: unit-length embeddings where they enter the policy)."""
    rows = table(ids)
    return F.normalize(rows, dim=-1) if normalize else rows


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))


class ProductCoefficients(nn.Module):
    """``f_task(e_task) * f_env(e_env)`` (elementwise) from the input ``[e_task; e_env]``: a
    factorized coefficient function, each factor trained by every pair of its task
    (environment). Not the paper's (a single MLP on the concatenation). On the gridworld it
    composes worse than the paper's without unit-length embeddings and BatchNorm, and better
    with them (results/learning_efficiency.md)."""

    def __init__(self, embedding_dim: int, hidden_dim: int, basis_dim: int) -> None:
        super().__init__()
        self.task = mlp(embedding_dim, hidden_dim, basis_dim)
        self.env = mlp(embedding_dim, hidden_dim, basis_dim)

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        task, env = embeddings.chunk(2, dim=-1)
        return self.task(task) * self.env(env)


COEFFICIENT_FUNCTIONS = ("mlp", "product")  # "mlp": the paper's


def pair_grid(
    num_envs: int, num_tasks: int, device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(env ids, task ids), each (num_envs, num_tasks): every (env, task) pair."""
    return torch.meshgrid(
        torch.arange(num_envs, device=device), torch.arange(num_tasks, device=device), indexing="ij"
    )


def make_coefficient_function(kind: str, embedding_dim: int, hidden_dim: int, basis_dim: int) -> nn.Module:
    """alpha or beta: maps ``[e_task; e_env]`` to K coefficients."""
    if kind == "mlp":
        return mlp(2 * embedding_dim, hidden_dim, basis_dim)
    if kind == "product":
        return ProductCoefficients(embedding_dim, hidden_dim, basis_dim)
    raise ValueError(f"unknown coefficient function {kind!r}; expected one of {COEFFICIENT_FUNCTIONS}")


class SynPoNetwork(nn.Module):
    """Encoder + SynPo head. Sizes come from the arguments (the env's spaces and the config)."""

    LOSS_TERMS = SYNPO_LOSS_TERMS  # the terms `rllib_synpo.losses.imitation_losses` trains

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
        coefficient_function: str = "mlp",
        coefficient_dropout: float = 0.0,
        normalize_embeddings: bool = False,
        env_dropout: float | list = 0.0,
        subgoal_embedding: str = "none",
        hidden_env_symmetries: bool = False,
        maze_map: bool = False,
        map_routes: bool = False,
        encoder_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        # The per-maze wall maps (an embedding of each environment, trained by maze_map_loss only).
        self.maze_map = maze_map_table(num_envs) if maze_map else None
        self.map_reader = MazeMapReader(obs_shape) if maze_map else None
        frames_shape = obs_shape  # the environment's frames (the subgoal is read from them)
        if maze_map:
            self.LOSS_TERMS = SYNPO_LOSS_TERMS | {MAZE_MAP_LOSS}
            obs_shape = (obs_shape[0] + 1, *obs_shape[1:])  # the map: one more input channel
        conflict = option_conflict(env_dropout, hidden_env_symmetries, maze_map, map_routes)
        if conflict:
            raise ValueError(conflict)
        self.routes = MapRoutes() if map_routes else None
        self.encoder = make_encoder(encoder, obs_shape, feature_dim, **(encoder_kwargs or {}))
        self.env_embedding = nn.Embedding(num_envs, embedding_dim)
        self.task_embedding = nn.Embedding(num_tasks, embedding_dim)
        self.subgoal_mode = subgoal_embedding
        self.subgoals = (
            SubgoalEmbedding(num_tasks, embedding_dim, frames_shape) if subgoal_embedding != "none" else None
        )
        # The probability that a training state's environment is hidden (`hide_envs`), now, and
        # the embedding of the unknown environment (drawn like an embedding row), where any is.
        self.env_dropout = env_dropout_probabilities(env_dropout)[0]
        self.unknown_env = (
            nn.Parameter(torch.randn(embedding_dim)) if env_dropout_hides(env_dropout) else None
        )
        self.symmetries = HiddenEnvSymmetries(obs_shape, num_actions) if hidden_env_symmetries else None
        # Dropout on [e_task; e_env] where it enters alpha and beta (training only; not the paper's).
        self.coefficient_dropout = nn.Dropout(coefficient_dropout)
        # Unit-length embeddings where they enter alpha and beta (`embedding_rows`).
        self.normalize_embeddings = normalize_embeddings
        self.alpha = make_coefficient_function(coefficient_function, embedding_dim, hidden_dim, basis_dim)
        self.beta = make_coefficient_function(coefficient_function, embedding_dim, hidden_dim, basis_dim)
        # Theta_a for every action, scaled so sa features start with unit-order variance.
        self.basis = nn.Parameter(torch.randn(num_actions, feature_dim, basis_dim) / feature_dim**0.5)
        # The same for the route features (``map_routes``).
        self.route_basis = (
            nn.Parameter(torch.randn(num_actions, ROUTE_FEATURES, basis_dim) / ROUTE_FEATURES**0.5)
            if map_routes
            else None
        )
        self.policy_bias = nn.Parameter(torch.zeros(num_actions))
        self.reward_bias = nn.Parameter(torch.zeros(num_actions))
        self.env_head = mlp(basis_dim, hidden_dim, embedding_dim)  # g
        self.task_head = mlp(basis_dim, hidden_dim, embedding_dim)  # h
        self.value_head = nn.Linear(feature_dim + 2 * embedding_dim, 1)
        nn.init.zeros_(self.value_head.weight)  # PPO starts from the imitation policy's values
        nn.init.zeros_(self.value_head.bias)

    def embed(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return embedding_rows(table, ids, self.normalize_embeddings)

    def env_rows(self, env_id: torch.Tensor) -> torch.Tensor:
        """e_env of every row; `UNKNOWN_ENV` ids get the unknown-environment embedding (a
        network trained with ``env_dropout`` only)."""
        if self.unknown_env is None:
            return self.embed(self.env_embedding, env_id)
        unknown = env_id == UNKNOWN_ENV
        known_rows = self.env_embedding(env_id.masked_fill(unknown, 0))
        rows = torch.where(unknown.unsqueeze(-1), self.unknown_env, known_rows)
        return F.normalize(rows, dim=-1) if self.normalize_embeddings else rows

    def hide_envs(self, env_id: torch.Tensor) -> torch.Tensor:
        """In training, each id replaced by `UNKNOWN_ENV` with probability ``env_dropout``
        (drawn from torch's seeded generator, as dropout's masks); otherwise the ids."""
        if not self.training or self.env_dropout == 0:
            return env_id
        hidden = torch.rand(env_id.shape, device=env_id.device) < self.env_dropout
        return env_id.masked_fill(hidden, UNKNOWN_ENV)

    def task_rows(self, task_id: torch.Tensor, phase: torch.Tensor | None = None) -> torch.Tensor:
        """The task's input to alpha and beta: e_task, with ``subgoal_embedding`` the embedding of
        the colour it goes for in ``phase`` (0: its first, 1: its second) added or instead."""
        if self.subgoals is None:
            return self.embed(self.task_embedding, task_id)
        subgoal = self.embed(self.subgoals.table, self.subgoals.colours(task_id, phase))
        if self.subgoal_mode == "replace":
            return subgoal
        return self.embed(self.task_embedding, task_id) + subgoal

    def coefficients(
        self, env_id: torch.Tensor, task_id: torch.Tensor, phase: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[task row; e_env] for every row (the input of alpha and beta)."""
        return torch.cat([self.task_rows(task_id, phase), self.env_rows(env_id)], dim=-1)

    def forward(self, obs: torch.Tensor, env_id: torch.Tensor, task_id: torch.Tensor) -> SynPoOutputs:
        extras = {}
        encoder_input = obs
        if self.maze_map is not None:  # the maze's map, also where env_dropout hides its identity
            known = env_id != UNKNOWN_ENV  # an unknown maze's map knows nothing: logits 0
            extras[MAZE_MAP_LOGITS] = self.maze_map(env_id.masked_fill(~known, 0)) * known.unsqueeze(-1)
            encoder_input = self.map_reader.with_map(obs, extras[MAZE_MAP_LOGITS])
        env_id = self.hide_envs(env_id)
        symmetry = None
        if self.symmetries is not None and self.training:
            symmetry = self.symmetries.draw(env_id == UNKNOWN_ENV)
            encoder_input = self.symmetries.frames(encoder_input, symmetry)
        psi = self.encoder(encoder_input)
        phase = None
        if self.subgoals is not None:
            extras[REMAINING_COLOURS] = read_remaining_colours(obs)
            phase = self.subgoals.phases(task_id, extras[REMAINING_COLOURS])
        embeddings = self.coefficients(env_id, task_id, phase)
        sa = torch.einsum("nf,afk->nak", psi, self.basis)
        if self.routes is not None:  # planned on the frames as the encoder sees them
            sa = sa + torch.einsum("nr,ark->nak", self.routes(encoder_input), self.route_basis)
        if symmetry is not None:
            sa = self.symmetries.features_back(sa, symmetry)
        coefficient_inputs = self.coefficient_dropout(embeddings)
        logits = torch.einsum("nak,nk->na", sa, self.alpha(coefficient_inputs)) + self.policy_bias
        reward = torch.einsum("nak,nk->na", sa, self.beta(coefficient_inputs)) + self.reward_bias
        value = self.value_head(torch.cat([psi, embeddings], dim=-1).detach()).squeeze(
            -1
        )  # reads the features, never trains them (SynPoOutputs.value)
        if self.unknown_env is not None:
            extras[CONDITIONED_ENV_ID] = env_id
        return SynPoOutputs(logits=logits, reward=reward, sa_features=sa, value=value, extras=extras)

    def pair_coefficients(self, device: torch.device | str | None = None) -> torch.Tensor:
        """(E, T, K): alpha of every (env, task) pair (one coefficient pass per pair); with
        ``env_dropout`` (E + 1, T, K), the unknown environment last, so that indexing with
        `UNKNOWN_ENV` (-1) selects it. With ``subgoal_embedding`` (E, T, 2, K): each task going
        for its first colour, then for its second."""
        envs, tasks = pair_grid(self.env_embedding.num_embeddings, self.task_embedding.num_embeddings, device)
        if self.unknown_env is not None:
            envs = torch.cat([envs, torch.full_like(envs[:1], UNKNOWN_ENV)])
            tasks = torch.cat([tasks, tasks[:1]])
        if self.subgoals is None:
            return self.alpha(self.coefficient_dropout(self.coefficients(envs, tasks)))
        phases = [torch.full_like(tasks, phase) for phase in (0, 1)]
        return torch.stack(
            [self.alpha(self.coefficient_dropout(self.coefficients(envs, tasks, phase))) for phase in phases],
            dim=2,
        )

    def task_logits(
        self, sa_features: torch.Tensor, env_id: torch.Tensor, remaining_colours: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(N, T, A): the policy logits of every task in each row's environment (the ids the
        outputs were conditioned on), from the state-action features of `forward` (and, with
        ``subgoal_embedding``, its `REMAINING_COLOURS`, which set each task's subgoal)."""
        alpha = self.pair_coefficients(env_id.device)[env_id]
        if self.subgoals is not None:
            tasks = torch.arange(alpha.shape[1], device=env_id.device).expand(len(env_id), -1)
            phase = self.subgoals.phases(tasks, remaining_colours)  # (N, T)
            alpha = alpha.gather(2, phase[:, :, None, None].expand(-1, -1, 1, alpha.shape[-1])).squeeze(2)
        return torch.einsum("nak,ntk->nta", sa_features, alpha) + self.policy_bias

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores of x = sa[n, a] against all env embeddings (via g) and all task embeddings (h)."""
        env_scores = self.env_head(sa_taken) @ self.env_embedding.weight.T
        task_scores = self.task_head(sa_taken) @ self.task_embedding.weight.T
        return env_scores, task_scores
