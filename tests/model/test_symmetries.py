"""The ``hidden_env_symmetries`` option: the square's symmetries on the gridworld's frames and
actions, and the network's use of them on the states whose maze is hidden (without Ray)."""

import numpy as np
import pytest
import torch
from synpo_envs.gridworld.constants import AGENT_RGB, DOWN, LEFT, PICK_UP, RIGHT, UP
from synpo_envs.gridworld.env import GridWorld

from rllib_synpo.losses import CONDITIONED_ENV_ID
from rllib_synpo.networks import SynPoNetwork
from rllib_synpo.networks.symmetries import NUM_SYMMETRIES, action_permutations, transform
from rllib_synpo.networks.synpo import UNKNOWN_ENV
from rllib_synpo.rl_module import check_model_config

OBS_SHAPE = (12, 16, 16)
MOVES = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}


def _agent_cell(frames: torch.Tensor) -> tuple[int, int]:
    newest = frames[-3:]
    (row,), (col,) = np.nonzero((newest.permute(1, 2, 0).numpy() == AGENT_RGB).all(-1))
    return int(row), int(col)


def test_the_symmetries_are_eight_distinct_maps_that_keep_picking_up():
    cells = torch.arange(16 * 16).reshape(16, 16)
    assert (
        len({tuple(transform(cells, s).flatten().tolist()) for s in range(NUM_SYMMETRIES)}) == NUM_SYMMETRIES
    )
    permutations = action_permutations()
    assert permutations[0].tolist() == [0, 1, 2, 3, 4]
    for row in permutations.tolist():
        assert sorted(row) == [0, 1, 2, 3, 4] and row[PICK_UP] == PICK_UP
    assert permutations[1].tolist()[:4] != permutations[0].tolist()[:4]  # a quarter turn moves every move


@pytest.mark.parametrize("symmetry", range(NUM_SYMMETRIES))
def test_an_action_moves_the_agent_of_the_transformed_frames_as_its_mapped_action_says(symmetry):
    """Along real episodes: the agent's cell in the transformed frames moves by the step of the
    action the permutation maps the taken action to."""
    env = GridWorld()
    permutation = action_permutations()[symmetry]
    checked = set()
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        for step in range(40):
            action = (seed + step) % 4
            before = _agent_cell(transform(torch.as_tensor(obs["obs"]), symmetry))
            obs, _, terminated, truncated, _ = env.step(action)
            after = _agent_cell(transform(torch.as_tensor(obs["obs"]), symmetry))
            if after != before:  # not into a wall
                assert (after[0] - before[0], after[1] - before[1]) == MOVES[int(permutation[action])]
                checked.add(action)
            if terminated or truncated:
                break
    assert checked == set(MOVES)


def _net(**kwargs):
    return SynPoNetwork(
        obs_shape=OBS_SHAPE, num_actions=5, num_envs=4, num_tasks=6, feature_dim=16, embedding_dim=8,
        basis_dim=8, hidden_dim=16, **kwargs,
    )  # fmt: skip


def test_hidden_states_are_seen_transformed_and_their_features_mapped_back(monkeypatch):
    torch.manual_seed(0)
    net = _net(env_dropout=0.5, hidden_env_symmetries=True, coefficient_function="product").train()
    n = 32
    obs = torch.randint(0, 256, (n, *OBS_SHAPE), dtype=torch.uint8)
    env_id, task_id = torch.randint(0, 4, (n,)), torch.randint(0, 6, (n,))
    wanted = torch.arange(n) % NUM_SYMMETRIES
    monkeypatch.setattr(net.symmetries, "draw", lambda hidden: torch.where(hidden, wanted, 0))
    out = net(obs, env_id, task_id)
    conditioned = out.extras[CONDITIONED_ENV_ID]
    hidden = conditioned == UNKNOWN_ENV
    assert 0 < int(hidden.sum()) < n
    net.eval()  # hides and transforms nothing; no BatchNorm in this encoder, so the same features
    permutations = action_permutations()
    for row in range(n):
        symmetry = int(wanted[row]) if hidden[row] else 0
        seen = transform(obs[row : row + 1], symmetry)
        reference = net(seen, conditioned[row : row + 1], task_id[row : row + 1])
        expected = reference.sa_features[0, permutations[symmetry]]
        assert torch.allclose(out.sa_features[row], expected, atol=1e-5), row
        if hidden[row] and symmetry:
            assert not torch.allclose(out.sa_features[row], reference.sa_features[0], atol=1e-3)
    alpha = net.alpha(net.coefficients(conditioned, task_id))
    logits = torch.einsum("nak,nk->na", out.sa_features, alpha) + net.policy_bias
    assert torch.allclose(out.logits, logits, atol=1e-5)


def test_bad_hidden_env_symmetries_settings_are_refused():
    with pytest.raises(ValueError, match="env_dropout is 0.0"):
        check_model_config({"hidden_env_symmetries": True})
    with pytest.raises(ValueError, match="hidden_env_symmetries must be true or false, got 'yes'"):
        check_model_config({"hidden_env_symmetries": "yes", "env_dropout": 0.25})
    with pytest.raises(ValueError, match="applies to networks"):
        check_model_config({"network": "mlp", "hidden_env_symmetries": True})
    assert check_model_config({"hidden_env_symmetries": True, "env_dropout": [[0, 0.0], [60, 0.25]]})[
        "hidden_env_symmetries"
    ]
    with pytest.raises(ValueError, match="env_dropout is 0.0, set it above 0"):
        _net(hidden_env_symmetries=True)
    with pytest.raises(
        ValueError, match=r"16 x 16 frames and 5 actions; got observations of shape \(12, 8, 8\)"
    ):
        SynPoNetwork(obs_shape=(12, 8, 8), num_actions=5, num_envs=4, num_tasks=6, env_dropout=0.5,
                     hidden_env_symmetries=True)  # fmt: skip
