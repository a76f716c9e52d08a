"""The ``subgoal_embedding`` option: the treasures that remain, read from the gridworld's frames,
and the network's use of the task's next colour (without Ray)."""

import numpy as np
import pytest
import torch
from synpo_envs.gridworld.constants import NUM_TASKS, TASK_COLOURS
from synpo_envs.gridworld.env import GridWorld

from rllib_synpo.losses import REMAINING_COLOURS, every_task_logits
from rllib_synpo.networks import SynPoNetwork
from rllib_synpo.networks.subgoals import read_remaining_colours
from rllib_synpo.rl_module import check_model_config

OBS_SHAPE = (12, 16, 16)


def _net(mode, **kwargs):
    return SynPoNetwork(
        obs_shape=OBS_SHAPE, num_actions=5, num_envs=4, num_tasks=NUM_TASKS, feature_dim=16,
        embedding_dim=8, basis_dim=8, hidden_dim=16, subgoal_embedding=mode, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize("frame_stack", [1, 4])
def test_remaining_colours_read_from_frames_follow_the_treasures_along_expert_episodes(frame_stack):
    """Every step of expert episodes (the agent standing on a treasure before it picks it
    included): the colours read from the frames are those the env has not picked."""
    env = GridWorld(frame_stack=frame_stack)
    checked_under_agent = 0
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            truth = env.treasure_pos[:, 0] >= 0
            read = read_remaining_colours(torch.as_tensor(obs["obs"])[None])[0].numpy()
            under_agent = (env.treasure_pos == np.array(env.agent_pos)).all(axis=1).any()
            if frame_stack > 1 or not under_agent:  # one frame cannot show it
                assert np.array_equal(read, truth), (seed, env.agent_pos)
                checked_under_agent += int(under_agent)
            obs, _, terminated, truncated, _ = env.step(env.expert_action())
            done = terminated or truncated
    assert frame_stack == 1 or checked_under_agent >= 6  # each episode stands on its treasures


@pytest.mark.parametrize("mode", ["add", "replace"])
def test_the_policy_reads_the_next_colour_of_the_task(mode):
    net = _net(mode, coefficient_function="product", normalize_embeddings=True).eval()
    env = GridWorld()
    obs, _ = env.reset(seed=0, options={"pair": (0, 0)})
    first, second = TASK_COLOURS[0]
    state = torch.as_tensor(obs["obs"])[None]
    env_id, task_id = torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long)
    out = net(state, env_id, task_id)
    assert out.extras[REMAINING_COLOURS].all()
    with torch.no_grad():  # the first colour's row moves the policy, the second's does not
        net.subgoals.table.weight[second] += 1.0
        assert torch.allclose(net(state, env_id, task_id).logits, out.logits)
        net.subgoals.table.weight[first] += 1.0
        assert not torch.allclose(net(state, env_id, task_id).logits, out.logits)
    if mode == "replace":  # the task's own row is not read
        with torch.no_grad():
            net.task_embedding.weight[0] += 1.0
            before = net(state, env_id, task_id).logits
            net.task_embedding.weight[0] += 1.0
            assert torch.allclose(net(state, env_id, task_id).logits, before)


@pytest.mark.parametrize("mode", ["add", "replace"])
def test_every_task_logits_set_each_task_subgoal_from_the_state(mode):
    """Relabelling's logits of every task equal the policy conditioned on each task, in states
    where some tasks go for their first colour and others for their second."""
    net = _net(mode).eval()
    obs = torch.zeros(8, *OBS_SHAPE, dtype=torch.uint8)
    env_id = torch.arange(8) % 4
    out_any = net(obs, env_id, torch.zeros(8, dtype=torch.long))
    remaining = torch.rand(8, 5, generator=torch.Generator().manual_seed(0)) < 0.5
    out_any.extras[REMAINING_COLOURS] = remaining
    every = every_task_logits(net, out_any, env_id)
    assert every.shape == (8, NUM_TASKS, 5)
    for task in range(NUM_TASKS):
        task_id = torch.full((8,), task)
        phase = net.subgoals.phases(task_id, remaining)
        alpha = net.alpha(net.coefficients(env_id, task_id, phase))
        expected = torch.einsum("nak,nk->na", out_any.sa_features, alpha) + net.policy_bias
        assert torch.allclose(every[:, task], expected, atol=1e-5)


@pytest.mark.parametrize("map_routes", [False, True])
def test_the_subgoal_is_read_from_the_frames_beside_a_maze_map(map_routes):
    """With ``maze_map`` (and ``map_routes``) the encoder reads one more channel, the map; the
    subgoal is still read from the environment's frames, as without it."""
    net = _net("add", maze_map=True, map_routes=map_routes).eval()
    plain = _net("add").eval()
    env = GridWorld()
    obs, _ = env.reset(seed=0, options={"pair": (0, 0)})
    state = torch.as_tensor(obs["obs"])[None]
    env_id, task_id = torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long)
    out = net(state, env_id, task_id)
    assert torch.equal(out.extras[REMAINING_COLOURS], plain(state, env_id, task_id).extras[REMAINING_COLOURS])
    first, second = TASK_COLOURS[0]
    with torch.no_grad():  # the task's next colour moves the policy, the colour after it does not
        net.subgoals.table.weight[second] += 1.0
        assert torch.allclose(net(state, env_id, task_id).logits, out.logits)
        net.subgoals.table.weight[first] += 1.0
        assert not torch.allclose(net(state, env_id, task_id).logits, out.logits)


def test_subgoal_embedding_is_checked():
    with pytest.raises(ValueError, match=r"subgoal_embedding must be one of \[.*\], got 'sum'"):
        check_model_config({"subgoal_embedding": "sum"})
    with pytest.raises(ValueError, match="applies to networks \\['synpo'\\] only, not 'mlp'"):
        check_model_config({"network": "mlp", "subgoal_embedding": "add"})
    with pytest.raises(ValueError, match="the gridworld's 20 tasks and stacked RGB frames"):
        SynPoNetwork(obs_shape=(16, 16, 16), num_actions=5, num_envs=4, num_tasks=20, subgoal_embedding="add")
    assert _net("none").subgoals is None
