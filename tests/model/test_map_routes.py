"""The ``map_routes`` option: shortest-path progress over the maze map, per colour and move, and
the network's basis that reads it (without Ray)."""

from collections import deque

import numpy as np
import pytest
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import (
    GRID_SIZE,
    MOVE_ACTIONS,
    NUM_COLOURS,
    TASK_COLOURS,
    TREASURES_PER_TASK,
)

from rllib_synpo.networks import SynPoNetwork
from rllib_synpo.networks.map_routes import ROUTE_FEATURES, UNREACHABLE, MapRoutes, distances_to
from rllib_synpo.networks.maze_maps import MazeMapReader
from rllib_synpo.networks.symmetries import NUM_SYMMETRIES, action_permutations, transform
from rllib_synpo.rl_module import check_model_config

OBS_SHAPE = (12, 16, 16)


def _grid(rows: list[str]) -> torch.Tensor:
    return torch.tensor([[char == "#" for char in row] for row in rows])


def test_distances_follow_the_walls_and_stop_where_no_path_leads():
    walls = _grid(
        [
            "................",
            "#######.########",
            "................",
            "################",
            ".....#..........",
        ]
        + ["." * 16] * 11
    )[None]
    targets = torch.zeros(1, 2, 16, 16, dtype=torch.bool)
    targets[0, 0, 0, 0] = True  # top left, behind the wall with one door at column 7
    targets[0, 1, 4, 0] = True  # below the full wall of row 3
    cells = torch.tensor([[2 * 16 + 0, 0 * 16 + 3, 4 * 16 + 4, 4 * 16 + 6, -1]])
    dist = distances_to(targets, walls, cells)
    assert dist[0, 0].tolist() == [7 + 2 + 7, 3, UNREACHABLE, UNREACHABLE, UNREACHABLE]
    # from (4, 6) to (4, 0): round the wall at (4, 5) through row 5
    assert dist[0, 1].tolist() == [UNREACHABLE, UNREACHABLE, 4, 8, UNREACHABLE]


def _breadth_first(walls: np.ndarray, target: int) -> np.ndarray:
    """Moves from every cell to ``target`` over the floor of ``walls`` (H, W), queue by queue."""
    dist = np.full(GRID_SIZE * GRID_SIZE, UNREACHABLE)
    dist[target] = 0
    queue = deque([target])
    while queue:
        cell = queue.popleft()
        row, col = divmod(cell, GRID_SIZE)
        for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
            nxt = r * GRID_SIZE + c
            if 0 <= r < GRID_SIZE and 0 <= c < GRID_SIZE and not walls[r, c] and dist[nxt] == UNREACHABLE:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return dist


def test_distances_match_a_plain_breadth_first_search_on_random_mazes():
    """An agent's cell and its four neighbours (-1 off the grid), against a queue-based search,
    on random walls of every density (closed pockets included) and colours with no treasure."""
    rng = np.random.default_rng(0)
    n, colours = 300, NUM_COLOURS
    walls = rng.random((n, GRID_SIZE, GRID_SIZE)) < rng.uniform(0, 0.6, (n, 1, 1))
    targets = np.zeros((n, colours, GRID_SIZE * GRID_SIZE), bool)
    cells = np.empty((n, 5), np.int64)
    expected = np.full((n, colours, 5), UNREACHABLE)
    for i in range(n):
        treasures = rng.choice(GRID_SIZE * GRID_SIZE, colours, replace=False)
        present = rng.random(colours) < 0.85
        walls[i].flat[treasures[present]] = False
        here = int(rng.integers(GRID_SIZE * GRID_SIZE))
        row, col = divmod(here, GRID_SIZE)
        around = [(row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)]
        cells[i] = [here] + [
            r * GRID_SIZE + c if 0 <= r < GRID_SIZE and 0 <= c < GRID_SIZE else -1 for r, c in around
        ]
        for k in np.flatnonzero(present):
            targets[i, k, treasures[k]] = True
            field = _breadth_first(walls[i], int(treasures[k]))
            expected[i, k] = [field[c] if c >= 0 else UNREACHABLE for c in cells[i]]
    dist = distances_to(
        torch.as_tensor(targets).view(n, colours, GRID_SIZE, GRID_SIZE),
        torch.as_tensor(walls),
        torch.as_tensor(cells),
    )
    assert (expected < UNREACHABLE).mean() > 0.3 and (expected == UNREACHABLE).any()
    np.testing.assert_array_equal(dist.numpy(), expected)


def _with_true_maps(world: BatchedGridWorld, obs: dict) -> torch.Tensor:
    walls = np.stack([world.grid_spec.mazes[env].walls.flatten() for env in obs["env_id"]])
    logits = torch.as_tensor(walls).float() * 2 - 1
    return MazeMapReader(OBS_SHAPE).with_map(torch.as_tensor(obs["obs"]), logits)


def test_every_expert_move_makes_progress_towards_the_tasks_next_treasure():
    """The expert is optimal: along its episodes, with every maze's true map, each move it makes
    brings the agent one step closer to the colour it goes for, and picking up comes where that
    colour's treasure is under the agent (the frame no longer shows it: no progress to make)."""
    world = BatchedGridWorld(64)
    obs, info = world.reset(seed=3)
    routes = MapRoutes()
    moves = picks = 0
    for _ in range(40):
        progress = routes(_with_true_maps(world, obs)).reshape(-1, NUM_COLOURS, len(MOVE_ACTIONS))
        assert set(progress.unique().tolist()) <= {-1.0, 0.0, 1.0}
        state = world.state
        colour = TASK_COLOURS[state.task_id, np.minimum(state.stage, TREASURES_PER_TASK - 1)]
        for row, action in enumerate(info["expert_action"].tolist()):
            if action in MOVE_ACTIONS:
                assert progress[row, colour[row], MOVE_ACTIONS.index(action)] == 1
                moves += 1
            else:
                assert not progress[row, colour[row]].any()
                picks += 1
        obs, _, _, _, info = world.step(info["expert_action"])
    assert moves > 1000 and picks > 20


@pytest.mark.parametrize("symmetry", range(NUM_SYMMETRIES))
def test_route_features_turn_with_the_frames(symmetry):
    world = BatchedGridWorld(16)
    obs, _ = world.reset(seed=5)
    encoder_input = _with_true_maps(world, obs)
    routes = MapRoutes()
    plain = routes(encoder_input).reshape(-1, NUM_COLOURS, len(MOVE_ACTIONS))
    turned = routes(transform(encoder_input, symmetry)).reshape(-1, NUM_COLOURS, len(MOVE_ACTIONS))
    moved_to = action_permutations()[symmetry][list(MOVE_ACTIONS)]
    assert torch.equal(turned[:, :, moved_to], plain)
    assert plain.abs().sum() > 0


def test_the_network_reads_routes_through_its_own_basis_and_never_trains_the_map_by_them():
    torch.manual_seed(0)
    kwargs = dict(
        obs_shape=OBS_SHAPE, num_actions=5, num_envs=4, num_tasks=6, feature_dim=16, embedding_dim=8,
        basis_dim=8, hidden_dim=16, maze_map=True,
    )  # fmt: skip
    net = SynPoNetwork(**kwargs, map_routes=True)
    assert net.route_basis.shape == (5, ROUTE_FEATURES, 8)
    world = BatchedGridWorld(6)
    obs, _ = world.reset(seed=0, options={"pairs": [(e % 4, e) for e in range(6)]})
    state = torch.as_tensor(obs["obs"])
    env_id, task_id = torch.as_tensor(obs["env_id"]).long(), torch.as_tensor(obs["task_id"]).long()
    out = net(state, env_id, task_id)
    out.logits.sum().backward()
    assert net.route_basis.grad.abs().sum() > 0
    assert net.maze_map.weight.grad is None or not net.maze_map.weight.grad.any()
    with torch.no_grad():  # without its routes the network is the maze_map network
        net.route_basis.zero_()
    plain = SynPoNetwork(**kwargs)
    plain.load_state_dict({k: v for k, v in net.state_dict().items() if k != "route_basis"})
    assert torch.allclose(net(state, env_id, task_id).logits, plain(state, env_id, task_id).logits)


def test_bad_map_routes_settings_are_refused():
    with pytest.raises(ValueError, match="map_routes must be true or false, got 'yes'"):
        check_model_config({"maze_map": True, "map_routes": "yes"})
    with pytest.raises(ValueError, match="map_routes plans over the maze's map; set maze_map: true"):
        check_model_config({"map_routes": True})
    with pytest.raises(ValueError, match="applies to networks"):
        check_model_config({"network": "mlp", "map_routes": True})
    assert check_model_config({"maze_map": True, "map_routes": True})["map_routes"]
    with pytest.raises(ValueError, match="set maze_map: true"):
        SynPoNetwork(obs_shape=OBS_SHAPE, num_actions=5, num_envs=4, num_tasks=6, map_routes=True)
