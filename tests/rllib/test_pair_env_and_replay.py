"""The multi-agent pair env and the trajectory replay, without Ray running."""

import numpy as np
import pytest
from synpo_envs.gridworld import GridWorld

from rllib_synpo.env.pair_env import SynPoPairsEnv, shard_pairs
from rllib_synpo.env.trajectory import Trajectory
from rllib_synpo.losses import NO_TRANSITION
from rllib_synpo.replay import TrajectoryReplay

PAIRS = [(e, t) for e in range(3) for t in range(4)]


class _Context(dict):
    """What RLlib passes: a dict knowing its env runner."""

    def __init__(self, config, worker_index, num_workers):
        super().__init__(config)
        self.worker_index, self.num_workers = worker_index, num_workers


def test_pairs_are_sharded_between_env_runners():
    shards = [SynPoPairsEnv(_Context({"pairs": PAIRS}, i, 3)).pairs for i in (1, 2, 3)]
    assert sorted(p for shard in shards for p in shard) == sorted(PAIRS)
    assert SynPoPairsEnv(_Context({"pairs": PAIRS}, 0, 3)).pairs == PAIRS  # the local runner
    assert shard_pairs(PAIRS[:1], 2, 3) == PAIRS[:1]


def _play(env):
    obs, infos = env.reset()
    episodes = {a: {"obs": [obs[a]], "infos": [infos[a]], "rewards": []} for a in obs}
    done = False
    while not done:
        actions = {a: 0 for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        for agent in rewards:
            episodes[agent]["obs"].append(obs[agent])
            episodes[agent]["infos"].append(infos[agent])
            episodes[agent]["rewards"].append(rewards[agent])
        done = terms["__all__"]
    return episodes


def test_expert_behaviour_plays_the_expert_and_labels_every_observation():
    env = SynPoPairsEnv({"pairs": PAIRS, "num_slots": 5, "seed": 0})
    episodes = _play(env)
    assert len(episodes) == 5
    for episode in episodes.values():
        infos = episode["infos"]
        assert infos[-1]["success"] and infos[-1]["expert_action"] == -1
        assert [i["executed_action"] for i in infos[1:]] == [i["expert_action"] for i in infos[:-1]]
        assert (episode["obs"][0]["env_id"], episode["obs"][0]["task_id"]) in PAIRS


def test_seeded_env_replays_and_epsilon_perturbs():
    first = _play(SynPoPairsEnv({"pairs": PAIRS, "num_slots": 3, "seed": 7}))
    again = _play(SynPoPairsEnv({"pairs": PAIRS, "num_slots": 3, "seed": 7}))
    assert all(
        np.array_equal(a["obs"][-1]["obs"], b["obs"][-1]["obs"])
        for a, b in zip(first.values(), again.values())
    )
    noisy = _play(SynPoPairsEnv({"pairs": PAIRS, "num_slots": 8, "seed": 7, "expert_epsilon": 0.5}))
    differ = [
        i["executed_action"] != j["expert_action"]
        for e in noisy.values()
        for j, i in zip(e["infos"][:-1], e["infos"][1:])
    ]
    assert 0.2 < np.mean(differ) < 0.6


def test_policy_behaviour_needs_an_action_per_active_agent():
    env = SynPoPairsEnv({"pairs": PAIRS, "num_slots": 2, "behaviour": "policy"})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="slot_1"):
        env.step({"slot_0": 1})


@pytest.mark.parametrize(
    "config, message",
    [
        ({"colour": 1}, "colour"),
        ({"behaviour": "random"}, "random"),
        ({"expert_epsilon": 2}, "expert_epsilon"),
    ],
)
def test_bad_env_config_is_named(config, message):
    with pytest.raises(ValueError, match=message):
        SynPoPairsEnv(config)


def _trajectory(seed, frame_stack=4):
    env = GridWorld(frame_stack=frame_stack)
    obs, info = env.reset(seed=seed)
    observations, labels, rewards, done = [obs["obs"]], [info["expert_action"]], [], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(labels[-1])
        observations.append(obs["obs"])
        labels.append(info["expert_action"])
        rewards.append(reward)
        done = terminated or truncated
    stacked = np.stack(observations[:-1])
    trajectory = Trajectory(
        stacked[:, -3:].copy(),
        *env.pair,
        np.array(labels[:-1]),
        np.array(labels[:-1]),
        np.array(rewards, np.float32),
    )
    return trajectory, stacked


def test_stacks_rebuilt_from_frames_equal_the_env_observations():
    trajectory, stacked = _trajectory(seed=4)
    assert np.array_equal(trajectory.stacked_obs(4), stacked)


def test_state_samples_are_rows_of_the_stored_trajectories():
    replay = TrajectoryReplay(capacity=4, frame_stack=4, seed=0)
    trajectories = [_trajectory(seed)[0] for seed in range(3)]
    replay.add(trajectories)
    batch = replay.sample_states(64)
    rows = {
        (t.env_id, t.task_id, int(t.expert_action[i]), float(t.reward[i]), obs.tobytes())
        for t in trajectories
        for i, obs in enumerate(t.stacked_obs(4))
    }
    sampled = zip(batch["env_id"], batch["task_id"], batch["expert_action"], batch["reward"], batch["obs"])
    assert all((int(e), int(k), int(a), float(r), o.tobytes()) in rows for e, k, a, r, o in sampled)
    assert len(set(map(bytes, batch["obs"]))) > 16  # independent states, not one trajectory
    again = TrajectoryReplay(capacity=4, frame_stack=4, seed=0)
    again.add(trajectories)
    assert np.array_equal(again.sample_states(64)["obs"], batch["obs"])
    pairs = replay.sample_states(32, successors=True)
    rows = np.flatnonzero(pairs["next_row"] >= 0)
    assert len(rows) > 16 and (pairs["next_row"][32:] == NO_TRANSITION).all()
    for row in rows:  # the successor's stack is the state's stack shifted by one frame
        assert np.array_equal(pairs["obs"][pairs["next_row"][row]][:-3], pairs["obs"][row][3:])


def test_replay_is_a_seeded_fifo_and_small():
    replay = TrajectoryReplay(capacity=3, frame_stack=4, seed=0)
    trajectories = [_trajectory(seed)[0] for seed in range(5)]
    replay.add(trajectories)
    assert len(replay) == 3 and replay.added == 5
    kept = {t.env_id * 100 + t.task_id for t in replay.trajectories()}
    assert kept == {t.env_id * 100 + t.task_id for t in trajectories[2:]}
    batch = replay.sample(2)
    assert batch["obs"].dtype == np.uint8 and len(batch["obs"]) == len(batch["reward"])
    ends = np.flatnonzero(batch["next_row"] < 0)
    assert ends[-1] == len(batch["reward"]) - 1 and len(ends) == 2
    assert np.array_equal(batch["next_row"][: ends[0]], np.arange(1, ends[0] + 1))
    again = TrajectoryReplay(capacity=3, frame_stack=4, seed=0)
    again.add(trajectories)
    assert np.array_equal(again.sample(2)["obs"], batch["obs"])
    per_step = sum(t.nbytes for t in trajectories) / sum(len(t) for t in trajectories)
    full_replay_gb = 20_000 * 40 * per_step / 1e9  # 40 steps: above the expert's mean length
    assert full_replay_gb < 1.5, full_replay_gb


def test_state_samples_follow_the_fifo_and_a_restored_replay():
    """Only the kept trajectories are drawn, after the FIFO overwrote older ones of other
    lengths, and a replay restored from its state draws the same states."""
    trajectories = [_trajectory(seed)[0] for seed in range(7)]
    replay = TrajectoryReplay(capacity=3, frame_stack=4, seed=0)
    replay.add(trajectories)
    kept = replay.trajectories()
    assert replay.num_steps == sum(len(t) for t in kept) and len({len(t) for t in trajectories}) > 1
    stored = {obs.tobytes() for t in kept for obs in t.stacked_obs(4)}
    restored = TrajectoryReplay(capacity=3, frame_stack=4)
    restored.set_state(replay.get_state())
    batch = replay.sample_states(256)
    assert {obs.tobytes() for obs in batch["obs"]} <= stored
    assert restored.num_steps == replay.num_steps
    assert np.array_equal(
        restored.sample_states(256)["obs"], batch["obs"]
    )  # the state was saved before that draw
    too_small = TrajectoryReplay(capacity=2, frame_stack=4)
    with pytest.raises(ValueError, match="holds 3 trajectories, more than this replay's capacity 2"):
        too_small.set_state(replay.get_state())


def _synthetic(rng, length, pair=(1, 2)):
    """A trajectory of random small frames and labels (with relabelled task labels)."""
    return Trajectory(
        rng.integers(0, 256, (length, 3, 2, 2), dtype=np.uint8),
        *pair,
        rng.integers(0, 5, length).astype(np.int8),
        rng.integers(0, 5, length).astype(np.int8),
        rng.standard_normal(length).astype(np.float32),
        task_labels=rng.integers(-1, 5, (length, 20)).astype(np.int8),
    )


def _same(a, b):
    return (a.env_id, a.task_id) == (b.env_id, b.task_id) and all(
        np.array_equal(getattr(a, name), getattr(b, name))
        for name in ("frames", "expert_action", "action", "reward", "task_labels")
    )


def test_the_ring_keeps_the_newest_trajectories_intact_in_bounded_memory(monkeypatch):
    import rllib_synpo.replay as replay_module

    monkeypatch.setattr(replay_module, "INITIAL_STEP_ROWS", 8)  # grow, wrap and wrap early from the start
    rng = np.random.default_rng(0)
    replay, added = TrajectoryReplay(capacity=7, frame_stack=4, seed=0), []
    for i in range(400):
        added.append(_synthetic(rng, int(rng.integers(1, 40)), pair=(i % 20, i % 13)))
        replay.add(added[-1:])
        newest = added[-7:]
        slots = [(i - len(newest) + 1 + k) % 7 for k in range(len(newest))]  # the slot of each, FIFO order
        assert all(_same(replay.trajectories()[slot], t) for slot, t in zip(slots, newest))
    assert replay.num_steps == sum(len(t) for t in added[-7:]) and replay.steps_added == sum(
        len(t) for t in added
    )
    assert len(replay._steps["frames"]) <= 2 * 7 * 40  # it stopped growing near the live rows
    restored = TrajectoryReplay(capacity=7, frame_stack=4, seed=0)
    restored.set_state(replay.get_state())  # wrapped around: the layout comes back as it was
    for replay_ in (replay, restored):
        replay_.add([_synthetic(np.random.default_rng(9), n) for n in (30, 2, 39)])
    assert all(_same(a, b) for a, b in zip(restored.trajectories(), replay.trajectories()))
    assert np.array_equal(restored.sample_states(64)["obs"], replay.sample_states(64)["obs"])


def test_state_batches_are_the_stacks_of_the_drawn_steps():
    rng = np.random.default_rng(1)
    replay = TrajectoryReplay(capacity=5, frame_stack=4, seed=3)
    replay.add([_synthetic(rng, int(n)) for n in rng.integers(1, 30, 12)])
    kept, draws = replay.trajectories(), np.random.default_rng(3)
    batch = replay.sample_states(200)
    # The same draws as the replay's generator: a step uniformly over all stored steps.
    lengths = np.array([len(t) for t in kept])
    flat = draws.integers(lengths.sum(), size=200)
    which = np.searchsorted(np.cumsum(lengths), flat, side="right")
    steps = flat - (np.cumsum(lengths) - lengths)[which]
    assert np.array_equal(batch["obs"], np.stack([kept[w].stacked_obs(4)[s] for w, s in zip(which, steps)]))
    assert np.array_equal(
        batch["task_labels"], np.stack([kept[w].task_labels[s] for w, s in zip(which, steps)])
    )
    assert np.array_equal(batch["reward"], np.array([kept[w].reward[s] for w, s in zip(which, steps)]))
    assert (
        batch["obs"].dtype == np.uint8 and batch["expert_action"].dtype == batch["env_id"].dtype == np.int64
    )


def test_a_replay_restores_from_an_older_checkpoints_trajectory_list():
    rng = np.random.default_rng(2)
    replay = TrajectoryReplay(capacity=4, frame_stack=4, seed=0)
    replay.add([_synthetic(rng, int(n)) for n in (5, 9, 2, 7, 3, 11)])
    older = {
        **{k: replay.get_state()[k] for k in ("next", "added", "steps_added", "rng")},
        "items": replay.trajectories(),
    }
    restored = TrajectoryReplay(capacity=4, frame_stack=4)
    restored.set_state(older)
    assert all(_same(a, b) for a, b in zip(restored.trajectories(), replay.trajectories()))
    assert np.array_equal(restored.sample_states(64)["obs"], replay.sample_states(64)["obs"])
    restored.add([_synthetic(rng, 6)])  # and goes on as a FIFO from where it was
    replay.add(restored.trajectories()[replay._next : replay._next + 1])
    assert all(_same(a, b) for a, b in zip(restored.trajectories(), replay.trajectories()))


def test_relabel_gives_expert_labels_for_every_configured_pair():
    env = SynPoPairsEnv({"pairs": PAIRS, "num_slots": 4, "seed": 1, "relabel": True})
    for episode in _play(env).values():
        env_id, task_id = int(episode["obs"][0]["env_id"]), int(episode["obs"][0]["task_id"])
        for info in episode["infos"][:-1]:
            labels = info["task_labels"]
            assert labels[task_id] == info["expert_action"]
            assert all(labels[t] == -1 for t in range(20) if (env_id, t) not in PAIRS)


def test_repeating_a_seed_continues_instead_of_replaying():
    env = SynPoPairsEnv({"pairs": PAIRS, "num_slots": 3})
    first = env.reset(seed=5)[0]["slot_0"]["obs"]
    assert not np.array_equal(env.reset(seed=5)[0]["slot_0"]["obs"], first)  # RLlib re-sends its seed
    assert np.array_equal(
        SynPoPairsEnv({"pairs": PAIRS, "num_slots": 3}).reset(seed=5)[0]["slot_0"]["obs"], first
    )
