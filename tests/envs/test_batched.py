"""BatchedGridWorld: equivalent to N single envs, auto-reset (or none), pinned pairs, validation."""

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from synpo_envs.gridworld import BatchedGridWorld, GridWorld


@pytest.mark.parametrize("window, frame_stack", [(1, 4), (0, 2), (3, 1)])
def test_slot_i_replays_single_env_seeded_with_seed_plus_i(window, frame_stack):
    n, seed, steps = 6, 11, 250
    kwargs = dict(
        window=window,
        frame_stack=frame_stack,
        max_steps=60,
        pairs=[(e, t) for e in range(5) for t in range(7)],
    )
    batched = BatchedGridWorld(n, **kwargs)
    singles = [GridWorld(**kwargs) for _ in range(n)]
    obs_b, info_b = batched.reset(seed=seed)
    obs_s = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    action_rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(steps):
        for i in range(n):
            for key in ("obs", "env_id", "task_id"):
                assert np.array_equal(obs_b[key][i], obs_s[i][key])
        # Mostly expert actions (so episodes end by success), some random ones.
        actions = np.where(
            action_rng.random(n) < 0.2, action_rng.integers(5, size=n), info_b["expert_action"]
        )
        obs_b, reward, terminated, truncated, info_b = batched.step(actions)
        for i, env in enumerate(singles):
            obs_i, reward_i, term_i, trunc_i, info_i = env.step(int(actions[i]))
            assert (reward[i], terminated[i], truncated[i]) == pytest.approx((reward_i, term_i, trunc_i))
            assert info_b["success"][i] == info_i["success"]
            if term_i or trunc_i:
                episodes += 1
                assert np.array_equal(info_b["final_obs"][i]["obs"], obs_i["obs"])
                obs_i, info_i = env.reset()
            obs_s[i] = obs_i
            assert info_b["expert_action"][i] == info_i["expert_action"]
    assert episodes > 10


def test_episode_statistics_and_autoreset():
    env = BatchedGridWorld(8, max_steps=5)
    obs, _ = env.reset(seed=0)
    for _step in range(5):
        obs, reward, terminated, truncated, info = env.step(np.zeros(8, dtype=int))
    done = terminated | truncated
    assert done.all() and np.array_equal(info["_episode"], done)
    assert (info["episode_length"] == 5).all()
    assert np.allclose(info["episode_return"][truncated], -0.05, atol=0.06)
    assert not obs["obs"][:, :-3].any()  # the new episodes' first observations


def test_without_autoreset_a_finished_slot_waits_for_its_reset_mask():
    n = 6
    env = BatchedGridWorld(n, autoreset_mode=AutoresetMode.DISABLED)
    assert env.metadata["autoreset_mode"] == AutoresetMode.DISABLED
    assert BatchedGridWorld.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP  # the class's stays
    singles = [GridWorld() for _ in range(n)]
    obs, info = env.reset(seed=3)
    for i, single in enumerate(singles):
        single.reset(seed=3 + i)
    finished, last = np.zeros(n, bool), {}
    while not finished.all():  # the expert, with pick-ups, so every slot ends by success
        actions = info["expert_action"]
        obs, reward, terminated, truncated, info = env.step(actions)
        assert "final_obs" not in info
        for i in range(n):
            if finished[i]:  # it ignores its actions and stays as it ended
                assert (reward[i], terminated[i], truncated[i]) == (0.0, False, False)
                assert np.array_equal(obs["obs"][i], last[i])
                continue
            single_obs, single_reward, *single_ends, _ = singles[i].step(int(actions[i]))
            assert reward[i] == pytest.approx(single_reward)
            assert [terminated[i], truncated[i]] == single_ends
            assert np.array_equal(obs["obs"][i], single_obs["obs"])  # the episode's last, when done
            if terminated[i] or truncated[i]:
                finished[i], last[i] = True, obs["obs"][i].copy()
    # The masked slots' next episodes start from their own streams, as the single env's reset
    # does; the others wait on.
    mask = np.arange(n) % 2 == 0
    obs, info = env.reset(options={"reset_mask": mask})
    for i in range(n):
        expected = singles[i].reset()[0]["obs"] if mask[i] else last[i]
        assert np.array_equal(obs["obs"][i], expected)
    assert (env.state.steps[mask] == 0).all() and (env.state.steps[~mask] > 0).all()


@pytest.mark.parametrize(
    "kwargs, reset, message",
    [
        ({"autoreset_mode": AutoresetMode.NEXT_STEP}, {}, "autoreset_mode must be one of"),
        ({}, {"options": {"reset_mask": np.ones(2, bool)}}, "needs autoreset_mode"),
        (
            {"autoreset_mode": AutoresetMode.DISABLED},
            {"options": {"reset_mask": np.ones(3, bool)}},
            "2 booleans, got shape",
        ),
        (
            {"autoreset_mode": AutoresetMode.DISABLED},
            {"seed": 1, "options": {"reset_mask": np.ones(2, bool)}},
            "reset it fully first",
        ),
    ],
)
def test_bad_autoreset_settings_are_named(kwargs, reset, message):
    with pytest.raises(ValueError, match=message):
        env = BatchedGridWorld(2, **kwargs)
        env.reset(seed=0)
        env.reset(**reset)


def test_pinned_pairs_persist_across_autoresets():
    pairs = [(e, e % 20) for e in range(10)]
    env = BatchedGridWorld(10)
    obs, info = env.reset(seed=2, options={"pairs": pairs})
    for _ in range(200):
        obs, _, _, _, info = env.step(info["expert_action"])
        assert [tuple(p) for p in zip(obs["env_id"], obs["task_id"])] == pairs
    with pytest.raises(ValueError, match="one per env"):
        env.reset(options={"pairs": pairs[:3]})


def test_copy_false_returns_views_and_true_returns_copies():
    env = BatchedGridWorld(2, copy=True)
    obs, info = env.reset(seed=0)
    before = obs["obs"].copy()
    env.step(info["expert_action"])
    assert np.array_equal(obs["obs"], before)


def test_perturbed_expert_actions():
    env = BatchedGridWorld(1000)
    env.reset(seed=0)
    optimal = env.expert_actions()
    perturbed = env.expert_actions(epsilon=0.5)
    assert 0.3 < np.mean(perturbed != optimal) < 0.5
    again = BatchedGridWorld(1000)
    again.reset(seed=0)
    assert np.array_equal(again.expert_actions(epsilon=0.5), perturbed)


@pytest.mark.parametrize(
    "actions, message",
    [(np.zeros(3, dtype=int), "4 integers"), (np.full(4, 5), r"\[0, 5\)"), (np.zeros(4), "dtype float")],
)
def test_bad_actions_are_named(actions, message):
    env = BatchedGridWorld(4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(actions)


def test_bad_num_envs():
    with pytest.raises(ValueError, match="num_envs"):
        BatchedGridWorld(0)
