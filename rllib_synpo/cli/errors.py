"""The command's user errors: each is reported as one ``error: ...`` line, exit status 2."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, no traceback."""


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (line breaks too) as one space."""
    return " ".join(str(text).split())


def first_line(err: BaseException) -> str:
    """The first line of an error's message (RLlib's config errors append a line of advice)."""
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def check_output_folder(path: str | os.PathLike, option: str) -> None:
    """Refuses an output folder the command could not create or write into, before any work."""
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a file: expected a folder (created if missing)")
    existing = nearest_existing(folder)
    if not existing.is_dir():
        raise UsageError(f"{option} {str(path)!r} lies under the file {str(existing)!r}: expected a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(
            f"{option} {str(path)!r} is not writable ({str(existing)!r} is read-only): expected a folder "
            "this user can write"
        )
    if existing != folder.absolute():
        _try_to_create(folder, existing, option, str(path))


def _try_to_create(folder: Path, existing: Path, option: str, path: str) -> None:
    """Creates ``folder`` (under ``existing``, its nearest ancestor there) and removes what it
    created: a place where nothing can be made (``/proc``, a full disk) is refused now, also for
    root, whom ``os.access`` never refuses."""
    try:
        folder.mkdir(parents=True)
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UsageError(
            f"{option} {path!r} cannot be created ({reason}): expected a folder this user can create"
        ) from None
    made = folder.absolute()
    with contextlib.suppress(OSError):  # something else writing there meanwhile keeps it
        while made != existing:
            made.rmdir()
            made = made.parent


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
