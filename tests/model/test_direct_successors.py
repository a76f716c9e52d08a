"""Successor states in the Ray-free direct trainer's state replay (SF's TD term): each sampled
state's successor is the environment's next observation of the same episode, episode ends have
none, and networks without the TD term get their batches unchanged."""

import numpy as np
import pytest
import torch

from rllib_synpo.direct import (
    NO_SUCCESSOR,
    PENDING_SUCCESSOR,
    DirectConfig,
    DirectImitation,
    StateReplay,
)
from rllib_synpo.losses import NO_TRANSITION

SLOTS = 3


def _add_step(replay: StateReplay, step: int, ended: list[bool]) -> None:
    """Slot i's state at ``step`` is the number 10 * step + i."""
    values = 10 * step + np.arange(SLOTS)
    replay.add(
        ended=np.array(ended), obs=values.reshape(SLOTS, 1).astype(np.uint8),
        env_id=np.zeros(SLOTS, np.int64), task_id=np.zeros(SLOTS, np.int64),
    )


@pytest.mark.parametrize("capacity", [7, 4])  # not a multiple of the slots; below two steps
def test_hand_checked_links_in_a_small_ring(capacity):
    replay = StateReplay(capacity, (1,), track_successors=True)
    ends = [[False, True, False], [False, False, False], [True, False, False], [False, False, True], [False] * 3]
    for step, ended in enumerate(ends):
        _add_step(replay, step, ended)
        for row in range(replay.size):
            value, target = int(replay.obs[row, 0]), replay.next_index[row]
            step_of, slot = divmod(value, 10)
            if ends[step_of][slot]:
                assert target == NO_SUCCESSOR, (row, value)
            elif step_of == step:
                assert target == PENDING_SUCCESSOR, (row, value)
            else:  # the same slot one step later
                assert replay.obs[target, 0] == value + 10, (row, value)
    batch = replay.sample(np.random.default_rng(0), 50)
    states, next_row = batch["obs"][:50, 0].astype(int), batch["next_row"]
    assert (states // 10 < len(ends) - 1).all()  # rows still waiting for a successor are not drawn
    for j, value in enumerate(states):
        step_of, slot = divmod(value, 10)
        if ends[step_of][slot]:
            assert next_row[j] == NO_SUCCESSOR
        else:
            assert batch["obs"][next_row[j], 0] == value + 10
    assert (next_row[50:] == NO_TRANSITION).all() and len(next_row) == len(batch["obs"])


def _tiny_config(network: str, **overrides) -> DirectConfig:
    tiny = {
        "network": network, "feature_dim": 16, "embedding_dim": 8, "encoder_kwargs": {"width": 4},
        "num_collectors": 8, "batch_size": 32, "replay_capacity": 60, "warmup_states": 16,
        "epsilon": 0.3, "env_kwargs": {"max_steps": 6},
    }
    return DirectConfig(**{**tiny, **overrides})


def _record_steps(trainer: DirectImitation) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Wraps the trainer's env so that every step's (observation before, next observation,
    episode ended) is recorded, independently of the replay."""
    records, step = [], trainer.env.step

    def recording_step(actions):
        before = trainer.obs["obs"].copy()
        obs, reward, terminated, truncated, info = step(actions)
        records.append((before, obs["obs"].copy(), terminated | truncated))
        return obs, reward, terminated, truncated, info

    trainer.env.step = recording_step
    return records


def test_sf_batches_carry_the_envs_next_observations():
    trainer = DirectImitation(_tiny_config("sf"), [(0, 0), (1, 3), (2, 5)], seed=3)
    records = _record_steps(trainer)
    for _ in range(20):  # 160 states through a ring of 60: overwritten rows included
        trainer.collect()
    successors: dict[bytes, list] = {}
    for before, after, ended in records:
        for slot in range(len(before)):
            successors.setdefault(before[slot].tobytes(), []).append(None if ended[slot] else after[slot])
    assert any(f is None for found in successors.values() for f in found)  # some episodes ended
    count = 64
    batch = trainer.replay.sample(np.random.default_rng(1), count)
    linked = 0
    for j in range(count):
        found = successors[batch["obs"][j].tobytes()]
        if batch["next_row"][j] == NO_SUCCESSOR:
            assert any(f is None for f in found)
        else:
            linked += 1
            assert any(f is not None and np.array_equal(batch["obs"][batch["next_row"][j]], f) for f in found)
    assert len(batch["obs"]) == count + linked and linked > count // 2


def test_sf_update_trains_the_td_term_and_counts_the_successor_rows():
    trainer = DirectImitation(_tiny_config("sf"), [(0, 0), (1, 3)], seed=0)
    stats = trainer.step()
    assert trainer.replay.track_successors
    assert np.isfinite(stats["sf_td_loss"]) and stats["sf_td_loss"] > 0
    assert trainer.config.batch_size < trainer.states_trained <= 2 * trainer.config.batch_size


@pytest.mark.parametrize("network, overrides", [("synpo", {}), ("mlp", {}), ("sf", {"sf_td_weight": 0.0})])
def test_other_batches_are_unchanged(network, overrides):
    trainer = DirectImitation(_tiny_config(network, **overrides), [(0, 0), (1, 3)], seed=0)
    for _ in range(4):
        trainer.collect()
    assert not trainer.replay.track_successors
    rng_state = np.random.default_rng(7)
    batch = trainer.replay.sample(np.random.default_rng(7), 10)
    rows = rng_state.integers(trainer.replay.size, size=10)  # the uniform draw of every row
    assert "next_row" not in batch and np.array_equal(batch["obs"], trainer.replay.obs[rows])
    torch.manual_seed(0)
    trainer.step()
    assert trainer.states_trained == trainer.config.batch_size


def test_td_term_needs_room_for_successors():
    with pytest.raises(ValueError, match="replay_capacity"):
        DirectImitation(_tiny_config("sf", replay_capacity=8), [(0, 0)], seed=0)
