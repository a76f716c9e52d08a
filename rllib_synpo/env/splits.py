"""The ``split`` setting of a config: which (environment, task) pairs are seen in training."""

from __future__ import annotations

import os
from pathlib import Path

from synpo_envs.splits import Split, SplitError, random_split, ratio_split, transfer_split

# ``split: {NAME: {...kwargs}}`` in a config: the split maker NAME called with the kwargs.
SPLIT_MAKERS = {"random": random_split, "ratio": ratio_split, "transfer": transfer_split}
SPLIT_FILE_EXPECTED = "expected a split JSON file (Split.save writes one)"


def resolve_split(split: Split | dict | str | os.PathLike | None) -> Split:
    """``None`` (the paper's 144/256 split, seed 0), a `Split`, a split JSON file, a split dict,
    or one maker's kwargs: ``{"random": {...}}`` (`random_split`), ``{"ratio": {"fraction": ...}}``
    (`ratio_split`, the seen-ratio study's 10 x 10 pairs), ``{"transfer": {"setting": 2}}``
    (`transfer_split`: P seen, the setting's adaptation pairs unseen) or, for THOR,
    ``{"thor": {...}}`` (`thor_split`). A bad value raises `SplitError` naming it. A relative
    split file is relative to the working directory the run started in (`split_file`)."""
    if split is None:
        return random_split()
    if isinstance(split, Split):
        return split
    if isinstance(split, (str, os.PathLike)):
        path = split_file(split)
        try:
            return Split.load(path)
        except UnicodeDecodeError as err:
            reason = f"is not UTF-8 text ({err.reason})"
            raise SplitError(f"split file {str(split)!r} {reason}: {SPLIT_FILE_EXPECTED}") from None
    if isinstance(split, dict) and len(split) == 1 and next(iter(split)) in {*SPLIT_MAKERS, "thor"}:
        ((name, kwargs),) = split.items()
        if not isinstance(kwargs, dict):
            raise SplitError(
                f"split {{{name}: ...}} takes a mapping of {name}_split arguments, got {kwargs!r}"
            )
        if name == "thor":
            from rllib_synpo.env.thor_split import thor_split

            return thor_split(**kwargs)
        try:
            return SPLIT_MAKERS[name](**kwargs)
        except TypeError as err:
            raise SplitError(f"split {{{name}: {kwargs}}}: {err}") from None
    if isinstance(split, dict):
        return Split.from_dict(split, source="split")
    raise SplitError(f"split must be a Split, a JSON path or a dict, got {type(split).__name__}")


def split_file(split: str | os.PathLike) -> Path:
    """The split JSON file ``split`` names, which must exist. Inside a Ray Tune trial, whose
    working directory is the trial's folder, a relative path is taken relative to the folder
    the run started in (``TUNE_ORIG_WORKING_DIR``), where it was checked before Tune started."""
    path = Path(split).expanduser()
    if not path.is_absolute():
        path = Path(os.environ.get("TUNE_ORIG_WORKING_DIR", os.getcwd())) / path
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise SplitError(f"split file {str(split)!r} {what}: {SPLIT_FILE_EXPECTED}")
    return path
