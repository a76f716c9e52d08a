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
