"""The files SynPo adds to RLlib checkpoints, written atomically (a temporary file in the same
folder, then a rename: a killed run never leaves a half-written file) and read back, and where
an algorithm checkpoint keeps the module.

Every SynPo or SynPoPPO checkpoint holds `META_FILE`: the module id, the split, the gridworld
settings and the module's model config (`write_meta`), which is what evaluation, adaptation and
PPO fine-tuning read to rebuild the network and the pairs without Ray.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

META_FILE = "synpo_meta.json"
REPLAY_FILE = "synpo_replay.pkl"
# A Ray Tune trial folder: Tune's record of its config, and the evaluation `rllib evaluate`
# writes into it (what `rllib report` reads).
TRIAL_PARAMS = "params.json"
TRIAL_EVALUATION = "evaluation"
SUMMARY_FILE = "summary.json"
MATRIX_FILE = "success_matrix.csv"
MODULE_ID = "synpo"  # every pair slot maps to this one shared module
# Where an algorithm checkpoint keeps the module (also the `component` argument that restores it).
MODULE_COMPONENT = f"learner_group/learner/rl_module/{MODULE_ID}"

# Level 1: the replay's uint8 frames shrink ~20x (199 MB -> 10 MB for 6,400 gridworld
# trajectories) and compressing them is faster than writing them uncompressed.
PICKLE_COMPRESSLEVEL = 1
GZIP_MAGIC = b"\x1f\x8b"


@contextmanager
def atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A binary file that appears at ``path`` only once it is completely written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def atomic_write(path: Path, data: bytes | str) -> None:
    with atomic_file(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)


def atomic_pickle(path: Path, obj: Any) -> None:
    """Pickles ``obj`` gzip-compressed, streamed (no uncompressed copy in memory)."""
    with atomic_file(path) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=PICKLE_COMPRESSLEVEL, mtime=0) as f:
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)


def load_pickle(path: Path) -> Any:
    """What `atomic_pickle` wrote; also reads the uncompressed pickles of older checkpoints."""
    with open(path, "rb") as f:
        compressed = f.read(len(GZIP_MAGIC)) == GZIP_MAGIC
        f.seek(0)
        if not compressed:
            return pickle.load(f)
        with gzip.GzipFile(fileobj=f, mode="rb") as unzipped:
            return pickle.load(unzipped)


def write_meta(checkpoint: str | os.PathLike, *, split: dict, gridworld: dict, model_config: dict, **extra: Any) -> None:
    """Writes `META_FILE` into ``checkpoint``: ``split`` (`Split.to_dict`), the gridworld
    settings, the module's checked model config, and ``extra`` entries (e.g. ``env``, ``thor``
    or ``algorithm``)."""
    meta = {"module_id": MODULE_ID, "split": split, "gridworld": gridworld, "model_config": model_config, **extra}
    atomic_write(Path(checkpoint) / META_FILE, json.dumps(meta, indent=1))


def read_meta(checkpoint: str | os.PathLike) -> dict:
    """The `META_FILE` of ``checkpoint``."""
    return json.loads((Path(checkpoint) / META_FILE).read_text())
