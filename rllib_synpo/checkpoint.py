"""The files SynPo adds to RLlib checkpoints, written atomically (a temporary file in the same
folder, then a rename: a killed run never leaves a half-written file) and read back, and where
an algorithm checkpoint keeps the module.

Every SynPo or SynPoPPO checkpoint holds `META_FILE`: the module id, the split, the gridworld
settings and the module's model config (`write_meta`), which is what evaluation, adaptation and
PPO fine-tuning read to rebuild the network and the pairs without Ray. Also finds checkpoints
(a checkpoint folder, or the newest under an experiment or trial folder) and loads a gridworld
checkpoint's network, split and settings.
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

from synpo_envs.splits import Split

META_FILE = "synpo_meta.json"
REPLAY_FILE = "synpo_replay.pkl"
# A Ray Tune trial folder: Tune's record of its config, and the evaluation `rllib evaluate`
# writes into it (what `rllib report` reads).
TRIAL_PARAMS = "params.json"
TRIAL_EVALUATION = "evaluation"
SUMMARY_FILE = "summary.json"
MATRIX_FILE = "success_matrix.csv"
HEATMAP_FILE = "heatmap.png"
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
    with (
        atomic_file(path) as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=PICKLE_COMPRESSLEVEL, mtime=0) as f,
    ):
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


def write_meta(
    checkpoint: str | os.PathLike, *, split: dict, gridworld: dict, model_config: dict, **extra: Any
) -> None:
    """Writes `META_FILE` into ``checkpoint``: ``split`` (`Split.to_dict`), the gridworld
    settings, the module's checked model config, and ``extra`` entries (e.g. ``env``, ``thor``
    or ``algorithm``)."""
    meta = {
        "module_id": MODULE_ID,
        "split": split,
        "gridworld": gridworld,
        "model_config": model_config,
        **extra,
    }
    atomic_write(Path(checkpoint) / META_FILE, json.dumps(meta, indent=1))


class CheckpointError(ValueError):
    """A path that is not a SynPo checkpoint, or a checkpoint with a missing or corrupted file."""


# What the checkpoint commands take, as their errors word it.
CHECKPOINT_EXPECTED = "expected a SynPo checkpoint folder, or a trial or experiment folder holding one"


def read_meta(checkpoint: str | os.PathLike) -> dict:
    """The `META_FILE` of ``checkpoint``; a missing, unreadable or non-object file is a
    `CheckpointError` naming it."""
    path = Path(checkpoint) / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(
            f"checkpoint {str(checkpoint)!r} has no {META_FILE}: {CHECKPOINT_EXPECTED}"
        ) from None
    except (OSError, ValueError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CheckpointError(
            f"checkpoint file {str(path)!r} is not readable JSON ({_one_line(err)}): expected the "
            "JSON object SynPo writes (the checkpoint is corrupted)"
        ) from None
    if not isinstance(meta, dict):
        kind = type(meta).__name__
        raise CheckpointError(f"checkpoint file {str(path)!r} holds a JSON {kind}: expected an object")
    return meta


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def find_checkpoint(path: str | Path) -> Path:
    """``path`` itself when it is a SynPo checkpoint, else the newest checkpoint under it (an
    experiment or trial folder of ``rllib train file``); absolute, because RLlib reads a
    relative checkpoint path as a URI and fails."""
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise CheckpointError(f"{path} is not a SynPo checkpoint and does not exist: {CHECKPOINT_EXPECTED}")
    if (path / META_FILE).is_file():
        return path
    found = sorted(
        (p.parent for p in path.glob(f"**/{META_FILE}")), key=lambda p: (p / META_FILE).stat().st_mtime
    )
    if not found:
        raise CheckpointError(
            f"{path} is not a SynPo checkpoint and holds none (no {META_FILE} under it): "
            f"{CHECKPOINT_EXPECTED}"
        )
    return found[-1]


def trial_folders(path: str | Path) -> list[Path]:
    """The Ray Tune trial folders at or under ``path`` (folders holding `TRIAL_PARAMS`), sorted."""
    path = Path(path).expanduser().resolve()
    if (path / TRIAL_PARAMS).is_file():
        return [path]
    return sorted(p.parent for p in path.glob(f"*/{TRIAL_PARAMS}"))


def read_gridworld_checkpoint(checkpoint: str | Path):
    """(checkpoint folder, RLModule, split, gridworld kwargs) of a gridworld SynPo checkpoint
    (or the newest one under a folder); a missing or corrupted file is a `CheckpointError`
    naming it."""
    path, split, gridworld = read_gridworld_meta(checkpoint)
    return path, _load_module(path), split, gridworld


def read_gridworld_meta(checkpoint: str | Path) -> tuple[Path, Split, dict]:
    """(checkpoint folder, split, gridworld kwargs) of a gridworld SynPo checkpoint (or the
    newest one under a folder), without loading its module (nor torch): a THOR checkpoint is
    refused by name, a missing or corrupted metadata file is a `CheckpointError` naming it."""
    path = find_checkpoint(checkpoint)
    meta = read_meta(path)
    if meta.get("env", "synpo_pairs") != "synpo_pairs":
        raise CheckpointError(
            f"{path} was trained on {meta['env']!r}; this command evaluates gridworld (synpo_pairs) "
            "checkpoints"
        )
    return (path, *_gridworld_meta(path, meta))


def _gridworld_meta(path: Path, meta: dict) -> tuple[Split, dict]:
    """The split and gridworld settings a gridworld checkpoint's `META_FILE` records, with the
    maze files those settings name read (they may have moved since training)."""
    from synpo_envs.gridworld.mazes import MazeFormatError, resolve_mazes

    source = str(path / META_FILE)
    if not isinstance(meta.get("split"), dict):
        raise CheckpointError(
            f"checkpoint file {source!r} has no 'split' object: expected the split SynPo records"
        )
    gridworld = meta.get("gridworld", {})
    if not isinstance(gridworld, dict):
        raise CheckpointError(
            f"checkpoint file {source!r}: 'gridworld' {gridworld!r}: expected a mapping of settings"
        )
    try:
        resolve_mazes(gridworld.get("mazes"))
    except MazeFormatError as err:  # a missing maze file too
        raise CheckpointError(f"checkpoint file {source!r}: gridworld mazes: {_one_line(err)}") from None
    return Split.from_dict(meta["split"], source=source), dict(gridworld)


def _load_module(path: Path):
    """The RLModule of an algorithm checkpoint; a missing or unloadable module is a
    `CheckpointError` naming its folder."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    module_dir = path / MODULE_COMPONENT
    if not module_dir.is_dir():
        raise CheckpointError(
            f"checkpoint {str(path)!r} has no module folder {MODULE_COMPONENT}: {CHECKPOINT_EXPECTED}"
        )
    try:
        return RLModule.from_checkpoint(module_dir)
    except Exception as err:  # a missing, truncated or foreign state file: whatever its loader raises
        detail = _one_line(err)[:300]
        raise CheckpointError(
            f"checkpoint module {str(module_dir)!r} did not load ({type(err).__name__}: {detail}): expected "
            "the module files RLlib writes (the checkpoint is truncated or corrupted)"
        ) from None


def load_checkpoint(checkpoint: str | Path):
    """(network, split, gridworld kwargs) from an algorithm checkpoint folder."""
    _, module, split, gridworld = read_gridworld_checkpoint(checkpoint)
    return module.net, split, gridworld
