"""MTL baseline (SynPo paper, section 4): "a degenerated version of our method, where we ignore
the distinctions of environments. We simply replace the environment embeddings by zeros for the
coefficient functions. The disentanglement loss on task embeddings is still used."

So: SynPo's network with ``[e_task; 0]`` as the input of alpha, beta (and of the value head),
and only the task disentanglement term. The environment disentanglement term is dropped: the
paper keeps only the task one, and the authors' released ``GridWorldMTL`` has no environment
embedding or environment classifier at all. ``env_embedding`` is kept for the shared interface
(adaptation code may grow it) but nothing reads it; ``disentangle_scores`` gives uniform (zero)
environment scores: MTL cannot tell environments apart.
"""

from __future__ import annotations

import torch

from rllib_synpo.losses import POLICY_LOSS, REWARD_LOSS, TASK_DISENTANGLE_LOSS
from rllib_synpo.networks.synpo import SynPoNetwork


class MTLNetwork(SynPoNetwork):
    """SynPo with the environment embedding replaced by zeros; same sizes and arguments."""

    LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS, TASK_DISENTANGLE_LOSS})

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.env_head = None  # no environment classifier (g): MTL has no environment term

    def coefficients(
        self, env_id: torch.Tensor, task_id: torch.Tensor, phase: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[e_task; 0] for every row: the environment never reaches alpha, beta or the value."""
        task = self.task_rows(task_id, phase)
        return torch.cat([task, torch.zeros_like(task)], dim=-1)

    def disentangle_scores(self, sa_taken: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Uniform (zero) environment scores and SynPo's task scores (via h)."""
        env_scores = sa_taken.new_zeros(len(sa_taken), self.env_embedding.num_embeddings)
        task_scores = self.task_head(sa_taken) @ self.task_embedding.weight.T
        return env_scores, task_scores
