"""Reading the imitation checkpoint that PPO fine-tuning starts from (and, with a KL penalty,
stays close to)."""

from __future__ import annotations

import os
from pathlib import Path

from rllib_synpo.checkpoint import MODULE_COMPONENT, CheckpointError, find_checkpoint, read_meta


class ImitationCheckpointError(ValueError):
    """The imitation checkpoint is missing, does not fit the module, or did not load."""


def read_imitation_meta(checkpoint: str | Path) -> tuple[Path, dict]:
    """(checkpoint folder, its ``synpo_meta.json``); ``checkpoint`` may be an experiment or
    trial folder of ``rllib train file`` (its newest checkpoint is used); a relative path is
    relative to the working directory ``rllib train file`` was started in."""
    checkpoint = Path(checkpoint).expanduser()
    if not checkpoint.is_absolute():  # inside a Tune trial the working directory is the trial's
        checkpoint = Path(os.environ.get("TUNE_ORIG_WORKING_DIR", os.getcwd())) / checkpoint
    try:
        path = find_checkpoint(checkpoint)
    except CheckpointError as err:
        raise ImitationCheckpointError(f"imitation_checkpoint: {err}") from None
    module_dir = path / MODULE_COMPONENT
    if not module_dir.is_dir():
        raise ImitationCheckpointError(f"imitation_checkpoint {path} has no module folder {MODULE_COMPONENT}")
    return path, read_meta(path)


def load_error(module_dir: Path, err: Exception) -> ImitationCheckpointError:
    detail = " ".join(str(err).split())  # one line
    return ImitationCheckpointError(
        f"could not load the imitation module {module_dir}: {type(err).__name__}: {detail[:600]}"
    )


def load_imitation_module(checkpoint: str | Path):
    """(the module folder of an imitation checkpoint, its module loaded on its own); a module
    that does not load is an `ImitationCheckpointError` naming the folder."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    path, _ = read_imitation_meta(checkpoint)
    module_dir = path / MODULE_COMPONENT
    try:
        return module_dir, RLModule.from_checkpoint(module_dir)
    except Exception as err:  # unreadable or truncated state files, ...
        raise load_error(module_dir, err) from err
