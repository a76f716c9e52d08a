"""The expert is optimal (checked against an independent BFS) and always succeeds."""

import numpy as np
import pytest
from synpo_envs.gridworld import BatchedGridWorld, GridWorld, builtin_mazes
from synpo_envs.gridworld.constants import TASK_COLOURS

from tests.helpers import bfs_distances

NUM_MAZES = len(builtin_mazes())


@pytest.mark.parametrize("env_id", range(NUM_MAZES))
def test_expert_is_optimal_and_succeeds_on_every_maze(env_id):
    env = GridWorld()
    walls = builtin_mazes()[env_id].walls
    for episode in range(10):
        task_id = (env_id + 7 * episode) % 20
        env.reset(seed=1000 * env_id + episode, options={"pair": (env_id, task_id)})
        first, second = (tuple(env.treasure_pos[c]) for c in TASK_COLOURS[task_id])
        shortest = bfs_distances(walls, env.agent_pos)[first] + 1 + bfs_distances(walls, first)[second] + 1
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, info = env.step(env.expert_action())
            steps += 1
            done = terminated or truncated
        assert info["success"] and not truncated
        assert steps == shortest <= 300


def test_expert_statistics_over_many_episodes():
    env = BatchedGridWorld(256)
    _, info = env.reset(seed=0)
    actions = info["expert_action"]
    lengths, successes = [], []
    for _ in range(300):
        _, _, _, _, info = env.step(actions)
        actions = info["expert_action"]
        done = info["_episode"]
        lengths += info["episode_length"][done].tolist()
        successes += info["success"][done].tolist()
    assert len(lengths) > 1000 and all(successes)
    assert 25 < np.mean(lengths) < 50 and max(lengths) < 300


def test_expert_ties_follow_action_order():
    env = GridWorld()
    # Target diagonal from the agent inside an open room: both up and left shorten the path.
    env.reset(
        options={
            "pair": (0, 0),
            "agent_pos": (3, 3),
            "treasure_pos": [(2, 2), (4, 4), (1, 1), (1, 4), (4, 1)],
        }
    )
    assert env.expert_action() == 0  # up before left
    env.reset(
        options={
            "pair": (0, 0),
            "agent_pos": (3, 3),
            "treasure_pos": [(4, 2), (1, 4), (1, 1), (2, 4), (4, 1)],
        }
    )
    assert env.expert_action() == 1  # down before left


def test_perturbed_expert_is_seeded_and_random_at_the_given_rate():
    def actions(seed):
        env = GridWorld()
        env.reset(seed=seed)
        return [env.expert_action(epsilon=0.5) for _ in range(400)]

    assert actions(3) == actions(3)
    env = GridWorld()
    env.reset(seed=3)
    optimal = env.expert_action()
    differ = np.mean([a != optimal for a in actions(3)])
    assert 0.3 < differ < 0.5  # half are random, 4 in 5 of those differ from the optimum
    with pytest.raises(ValueError, match="epsilon"):
        env.expert_action(epsilon=1.5)


def test_expert_labels_for_every_task_at_a_state():
    env = BatchedGridWorld(64)
    _, info = env.reset(seed=5)
    for _ in range(40):
        state = env.state
        labels, possible = env.grid_spec.task_expert_actions(state.env_id, state.agent, state.treasures)
        assert (
            labels.shape == (64, 20) and labels.dtype == np.int64 and labels.min() >= 0 and labels.max() < 5
        )
        rows = np.arange(64)
        assert (
            np.array_equal(labels[rows, state.task_id], info["expert_action"])
            and possible[rows, state.task_id].all()
        )
        second_gone = state.treasures[:, TASK_COLOURS[:, 1]] < 0
        assert np.array_equal(possible, ~second_gone)
        _, _, _, _, info = env.step(info["expert_action"])
