"""The gymnasium contract: check_env, registration, spaces, seeding, pickling, no heavy imports."""

import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import synpo_envs
from gymnasium.utils.env_checker import check_env
from synpo_envs.gridworld import BatchedGridWorld, GridWorld


@pytest.mark.parametrize("window", [0, 1, 2])
@pytest.mark.parametrize("frame_stack", [1, 4])
@pytest.mark.parametrize("agent_channel", [False, True])
def test_check_env(window, frame_stack, agent_channel):
    env = GridWorld(
        window=window, frame_stack=frame_stack, agent_channel=agent_channel, pairs=[(0, 0), (7, 13), (19, 19)]
    )
    check_env(env, skip_render_check=True)
    assert env.observation_space["obs"].shape == ((3 + agent_channel) * frame_stack, 16, 16)


def test_registered_ids():
    env = gym.make(synpo_envs.GRIDWORLD_ID, window=0, render_mode="rgb_array")
    obs, info = env.reset(seed=3)
    assert obs["obs"].dtype == np.uint8 and obs["obs"].shape == (12, 16, 16)
    assert env.render().shape == (256, 256, 3)
    check_env(env.unwrapped)
    vec = gym.make_vec(synpo_envs.GRIDWORLD_ID, num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(vec, BatchedGridWorld)
    assert vec.reset(seed=0)[0]["obs"].shape == (3, 12, 16, 16)


def test_spaces_follow_mazes_and_tasks(tmp_path):
    from synpo_envs.gridworld import builtin_mazes

    env = GridWorld(mazes=builtin_mazes()[:3])
    assert env.observation_space["env_id"].n == 3
    assert env.observation_space["task_id"].n == 20
    assert env.action_space.n == 5


def _rollout(env, seed, steps=400):
    obs, info = env.reset(seed=seed)
    trace = [obs["obs"].copy()]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(int(env.np_random.integers(5)))
        trace.append((obs["obs"].copy(), reward, info["env_id"], info["task_id"]))
        if terminated or truncated:
            obs, info = env.reset()
            trace.append(obs["obs"].copy())
    return trace


def _same(a, b):
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else all(np.array_equal(u, v) for u, v in zip(x, y))
        for x, y in zip(a, b, strict=True)
    )


def test_same_seed_same_trajectory():
    assert _same(_rollout(GridWorld(), seed=5), _rollout(GridWorld(), seed=5))
    assert not _same(_rollout(GridWorld(), seed=5), _rollout(GridWorld(), seed=6))


def test_pickle_mid_episode_continues_identically():
    env = GridWorld()
    env.reset(seed=1)
    for _ in range(5):
        env.step(env.expert_action())
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(10):
        action = env.expert_action()
        a = env.step(action)
        b = clone.step(action)
        assert np.array_equal(a[0]["obs"], b[0]["obs"]) and a[1:4] == b[1:4]
    assert pickle.loads(pickle.dumps(BatchedGridWorld(4))).num_envs == 4


def test_import_pulls_in_neither_ray_nor_torch():
    code = "import sys, synpo_envs, synpo_envs.splits; print(sorted({'ray', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": -1}, "window"),
        ({"frame_stack": 0}, "frame_stack"),
        ({"max_steps": 2.5}, "max_steps"),
        ({"pairs": [(20, 0)]}, "out of range"),
        ({"pairs": [(0, 20)]}, "out of range"),
        ({"pairs": []}, "pairs is empty"),
        ({"reward": {"stpe": -1}}, "stpe"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GridWorld(**kwargs)


def test_bad_reset_and_step_arguments_are_named():
    env = GridWorld()
    with pytest.raises(ValueError, match="colour"):
        env.reset(options={"colour": 1})
    with pytest.raises(ValueError, match=r"\(0, 99\)"):
        env.reset(options={"pair": (0, 99)})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action 7"):
        env.step(7)
