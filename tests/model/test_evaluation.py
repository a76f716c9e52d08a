"""Batched evaluation without Ray: ending looping episodes of a deterministic policy early gives
the results of running them out."""

import numpy as np
import pytest
import torch
from synpo_envs.gridworld.constants import NUM_ACTIONS

from rllib_synpo.evaluation import evaluate, torch_greedy_policy, torch_policy
from rllib_synpo.networks import make_network

PAIRS = [(0, 0), (3, 7), (11, 2), (19, 19)]
WORLD = {"max_steps": 80}


def _obs_policy(obs: dict[str, np.ndarray]) -> np.ndarray:
    """A deterministic function of the observation that wanders, bumps into walls and loops."""
    return (
        obs["obs"].reshape(len(obs["obs"]), -1).astype(np.int64).sum(axis=1) // 7 + obs["task_id"]
    ) % NUM_ACTIONS


def _untrained_greedy():
    torch.manual_seed(0)
    net = make_network(
        "synpo",
        obs_shape=(12, 16, 16),
        num_actions=NUM_ACTIONS,
        num_envs=20,
        num_tasks=20,
        feature_dim=16,
        embedding_dim=8,
        basis_dim=8,
        hidden_dim=16,
        encoder_kwargs={"width": 4},
    )
    return torch_greedy_policy(net)


class _Counting:
    def __init__(self, policy) -> None:
        self.policy, self.states = policy, 0

    def __call__(self, obs):
        self.states += len(obs["obs"])
        return self.policy(obs)


@pytest.mark.parametrize(
    "make_policy", [lambda: _obs_policy, _untrained_greedy], ids=["scripted", "untrained-greedy"]
)
def test_ending_loops_early_changes_no_result(make_policy):
    policy = make_policy()
    runs = {}
    for deterministic in (False, True):
        counting = _Counting(policy)
        runs[deterministic] = (
            evaluate(counting, PAIRS, 6, seed=5, env_kwargs=WORLD, deterministic=deterministic),
            counting.states,
        )
    (full, full_states), (cut, cut_states) = runs[False], runs[True]
    for name in ("episodes", "successes", "first_pick_correct", "picked"):
        np.testing.assert_array_equal(getattr(cut, name), getattr(full, name), err_msg=name)
    np.testing.assert_allclose(cut.returns, full.returns, rtol=0, atol=1e-9)
    assert cut_states < full_states  # loops were found and cut
    assert full.successes.sum() < full.episodes.sum()  # there were failures to cut


def test_only_greedy_torch_policies_are_treated_as_deterministic():
    net = torch.nn.Linear(1, 1)
    assert torch_greedy_policy(net).deterministic
    assert not torch_policy(net, sample=True).deterministic


def test_summary_splits_the_unseen_pairs_by_their_first_colour():
    from synpo_envs.splits import random_split

    from rllib_synpo.evaluation import PairResults, flat_summary, summarize

    split = random_split(seed=0)
    pairs = list(split.all_pairs)
    uncovered = split.first_colour_uncovered()
    # success 1 on uncovered pairs, 0.5 on the other unseen ones, 0 on seen ones
    rates = np.array([1.0 if uncovered[p] else 0.0 if split.is_seen(p) else 0.5 for p in pairs])
    episodes = np.full(len(pairs), 4)
    zeros = np.zeros(len(pairs), np.int64)
    results = PairResults(pairs, episodes, (rates * 4).astype(np.int64), rates * 4, zeros, zeros)
    summary = summarize(results, split)
    assert summary["unseen_uncovered"]["pairs"] == 48 and summary["unseen_covered"]["pairs"] == 208
    assert summary["unseen_uncovered"]["avg_success_rate"] == 1.0
    assert summary["unseen_covered"]["avg_success_rate"] == 0.5
    assert summary["unseen"]["avg_success_rate"] == pytest.approx((48 + 0.5 * 208) / 256)
    assert summary["seen"]["avg_success_rate"] == 0.0
    assert flat_summary(results, split)["unseen_uncovered_avg_success_rate"] == 1.0
