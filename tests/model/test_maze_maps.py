"""The ``maze_map`` option: the walls a frame shows, a wall map per maze learnt from them by its
own loss term, and the encoder reading it as one more channel (without Ray)."""

import numpy as np
import pytest
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.env import GridWorld

from rllib_synpo.losses import (
    CONDITIONED_ENV_ID,
    MAZE_MAP_LOGITS,
    MAZE_MAP_LOSS,
    SHOWN_WALLS,
    UNLABELLED_CELL,
    LossWeights,
    imitation_losses,
    loss_inputs,
    maze_map_loss,
)
from rllib_synpo.networks import SynPoNetwork
from rllib_synpo.networks.maze_maps import MAP_SHARPNESS, MazeMapReader
from rllib_synpo.networks.synpo import UNKNOWN_ENV
from rllib_synpo.rl_module import check_model_config

OBS_SHAPE = (12, 16, 16)


def _net(**kwargs):
    return SynPoNetwork(
        obs_shape=OBS_SHAPE, num_actions=5, num_envs=4, num_tasks=6, feature_dim=16, embedding_dim=8,
        basis_dim=8, hidden_dim=16, maze_map=True, **kwargs,
    )  # fmt: skip


def test_the_walls_a_frame_shows_are_the_mazes_walls_in_the_agents_window():
    env = GridWorld()
    reader = MazeMapReader(OBS_SHAPE)
    labelled_counts = set()
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        for step in range(30):
            shown = reader.shown_walls(torch.as_tensor(obs["obs"])[None])[0].reshape(16, 16)
            row, col = env.unwrapped.agent_pos
            labelled = np.argwhere((shown != UNLABELLED_CELL).numpy())
            assert (np.abs(labelled - [row, col]).max(1) <= 1).all()  # inside the 3 x 3 window
            for r, c in labelled:
                assert shown[r, c] == float(env.unwrapped.walls[r, c])
            treasures = {tuple(p) for p in env.unwrapped.treasure_pos.tolist()}
            window = {(row + dr, col + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)} - {(row, col)}
            assert {tuple(cell) for cell in labelled.tolist()} == window - treasures
            labelled_counts.add(len(labelled))
            obs, _, terminated, truncated, _ = env.step((seed + step) % 4)
            if terminated or truncated:
                break
    assert 8 in labelled_counts


def test_hidden_states_keep_their_mazes_map_and_the_encoder_reads_it(monkeypatch):
    torch.manual_seed(0)
    net = _net(env_dropout=1.0).train()
    with torch.no_grad():
        net.maze_map.weight.normal_()
    seen = {}
    forward = net.encoder.forward

    def encoder_forward(encoder_input):
        seen["input"] = encoder_input
        return forward(encoder_input)

    monkeypatch.setattr(net.encoder, "forward", encoder_forward)
    obs = torch.randint(0, 256, (6, *OBS_SHAPE), dtype=torch.uint8)
    env_id, task_id = torch.tensor([0, 1, 2, 3, 0, 1]), torch.arange(6)
    out = net(obs, env_id, task_id)
    assert (out.extras[CONDITIONED_ENV_ID] == UNKNOWN_ENV).all()  # every identity hidden
    assert torch.equal(out.extras[MAZE_MAP_LOGITS], net.maze_map.weight[env_id])  # but not the map
    assert seen["input"].shape == (6, 13, 16, 16)
    assert torch.equal(seen["input"][:, :12], obs.float())
    expected = torch.sigmoid(MAP_SHARPNESS * net.maze_map.weight[env_id]).reshape(6, 16, 16) * 255
    assert torch.allclose(seen["input"][:, 12], expected)
    net.eval()  # an unknown maze's map knows nothing
    unknown = net(obs, torch.full_like(env_id, UNKNOWN_ENV), task_id).extras[MAZE_MAP_LOGITS]
    assert torch.equal(unknown, torch.zeros_like(unknown))


def test_the_map_channel_reads_wall_or_floor_whatever_the_logits_scale():
    """A trained map under weight decay has logits near 1, an adapted one without it grows them:
    the encoder must see the same map from both (and one half where the map knows nothing)."""
    reader = MazeMapReader(OBS_SHAPE)
    obs = torch.zeros(3, *OBS_SHAPE, dtype=torch.uint8)
    signs = torch.where(torch.rand(3, 256, generator=torch.Generator().manual_seed(0)) < 0.5, -1.0, 1.0)
    small, large = reader.with_map(obs, 0.5 * signs)[:, 12], reader.with_map(obs, 8.0 * signs)[:, 12]
    walls = (signs > 0).reshape(3, 16, 16)
    assert (small[walls] > 250).all() and (small[~walls] < 5).all()
    assert (small - large).abs().max() < 2  # pixel units, of 255
    unknown = reader.with_map(obs, torch.zeros(3, 256))[:, 12]
    assert torch.allclose(unknown, torch.full_like(unknown, 127.5))


def test_only_the_map_loss_trains_the_maps_and_only_their_shown_rows():
    torch.manual_seed(0)
    net = _net(env_dropout=0.5, hidden_env_symmetries=True).train()
    assert MAZE_MAP_LOSS in net.LOSS_TERMS and MAZE_MAP_LOSS not in SynPoNetwork.LOSS_TERMS
    world = BatchedGridWorld(4)
    obs, info = world.reset(seed=0, options={"pairs": [(0, 0), (0, 1), (2, 2), (2, 3)]})
    env_id, task_id = torch.as_tensor(obs["env_id"]).long(), torch.as_tensor(obs["task_id"]).long()
    state = torch.as_tensor(obs["obs"])
    out = net(state, env_id, task_id)
    actions = torch.as_tensor(info["expert_action"]).long()

    def losses():
        return imitation_losses(
            net, out, expert_actions=actions, executed_actions=actions, rewards=torch.zeros(4),
            env_id=env_id, task_id=task_id, weights=LossWeights(),
        )  # fmt: skip

    assert SHOWN_WALLS not in out.extras  # acting never reads the frames' walls: a loss input
    with pytest.raises(ValueError, match="loss_inputs"):
        losses()
    out.extras.update(loss_inputs(net, out, state, env_id, actions, relabelled=False))
    terms = losses()
    assert set(terms) >= {MAZE_MAP_LOSS, "policy_loss"}
    assert torch.isclose(terms[MAZE_MAP_LOSS], torch.log(torch.tensor(2.0)))  # maps start at p = 1/2
    (terms["policy_loss"] + terms["env_disentangle_loss"]).backward(retain_graph=True)
    assert net.maze_map.weight.grad is None or not net.maze_map.weight.grad.any()
    terms[MAZE_MAP_LOSS].backward()
    grad = net.maze_map.weight.grad
    assert grad[[0, 2]].any(dim=1).all() and not grad[[1, 3]].any()
    shown = out.extras[SHOWN_WALLS] != UNLABELLED_CELL
    assert not grad[0][~(shown[0] | shown[1])].any()  # cells no frame of maze 0 shows


def test_a_maze_map_learns_the_walls_its_frames_show():
    """Adam on the map loss alone over expert episodes in maze 3: every cell the frames showed
    ends on the right side of one half, every other cell where it started."""
    torch.manual_seed(0)
    net = _net()
    world = BatchedGridWorld(8)
    obs, info = world.reset(seed=1, options={"pairs": [(3, t) for t in range(8)]})
    frames = []
    for _ in range(20):
        frames.append(torch.as_tensor(obs["obs"]))
        obs, _, _, _, info = world.step(info["expert_action"])
    frames = torch.cat(frames)
    shown_walls = net.map_reader.shown_walls(frames)
    optimizer = torch.optim.Adam([net.maze_map.weight], lr=0.1)
    env_id = torch.full((len(frames),), 3)
    for _ in range(100):
        optimizer.zero_grad()
        maze_map_loss(net.maze_map(env_id), shown_walls).backward()
        optimizer.step()
    learnt = torch.sigmoid(net.maze_map.weight[3].detach())
    labels = shown_walls.max(0).values  # a cell's label is the same in every frame that shows it
    shown = labels != UNLABELLED_CELL
    assert shown.sum() > 60
    walls = torch.as_tensor(world.grid_spec.mazes[3].walls.flatten())
    assert torch.equal(labels[shown], walls[shown].float())
    assert torch.equal(learnt[shown] > 0.5, walls[shown])
    assert torch.equal(learnt[~shown], torch.full_like(learnt[~shown], 0.5))
    assert not net.maze_map.weight[[0, 1, 2]].any()


def test_bad_maze_map_settings_are_refused():
    with pytest.raises(ValueError, match="maze_map must be true or false, got 1"):
        check_model_config({"maze_map": 1})
    with pytest.raises(ValueError, match="applies to networks"):
        check_model_config({"network": "mtl", "maze_map": True})
    assert check_model_config({"maze_map": True})["maze_map"]
    with pytest.raises(ValueError, match=r"16 x 16 RGB frames; got observations of shape \(12, 8, 8\)"):
        SynPoNetwork(obs_shape=(12, 8, 8), num_actions=5, num_envs=4, num_tasks=6, maze_map=True)
