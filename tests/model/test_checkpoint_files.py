"""Checkpoint files: written whole or not at all, the replay compressed, older uncompressed
pickles still read."""

import pickle

import numpy as np
import pytest

from rllib_synpo.checkpoint import GZIP_MAGIC, atomic_pickle, atomic_write, load_pickle


def test_a_pickle_round_trips_compressed(tmp_path):
    frames = np.zeros((2000, 12, 16, 16), np.uint8)
    frames[:, 0, 3, 4] = np.arange(2000) % 7
    atomic_pickle(tmp_path / "replay.pkl", {"frames": frames, "next": 3})
    assert (tmp_path / "replay.pkl").read_bytes()[:2] == GZIP_MAGIC
    assert (tmp_path / "replay.pkl").stat().st_size < frames.nbytes / 20
    state = load_pickle(tmp_path / "replay.pkl")
    assert state["next"] == 3 and np.array_equal(state["frames"], frames)


def test_an_uncompressed_pickle_of_an_older_checkpoint_is_read(tmp_path):
    (tmp_path / "old.pkl").write_bytes(pickle.dumps({"items": [1, 2]}, protocol=pickle.HIGHEST_PROTOCOL))
    assert load_pickle(tmp_path / "old.pkl") == {"items": [1, 2]}


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("killed mid-write")


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    atomic_write(tmp_path / "meta.json", "{}")
    with pytest.raises(RuntimeError, match="killed mid-write"):
        atomic_pickle(tmp_path / "meta.json", {"frames": np.zeros(10**6, np.uint8), "last": Unpicklable()})
    assert (tmp_path / "meta.json").read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]
