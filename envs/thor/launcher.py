"""Where the THOR player comes from: the launch options and build resolution.

In order: ``local_executable_path`` (a player on disk), else the build ai2thor caches under
``~/.ai2thor/releases`` for its pinned commit, else a download (only when ``allow_download``
and the machine is online). Nothing here imports ai2thor or touches the network; every
failure is one clear error naming the option to fix.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from synpo_envs.checks import is_int
from synpo_envs.thor.constants import (
    DEFAULT_FRAME_SIZE,
    DEFAULT_GRID_SIZE,
    DEFAULT_SERVER_START_TIMEOUT,
    DEFAULT_SERVER_TIMEOUT,
    DEFAULT_VISIBILITY_DISTANCE,
    PLATFORMS,
)
from synpo_envs.thor.errors import ThorBuildNotFoundError, ThorStartError


@dataclass(frozen=True)
class ThorLaunchOptions:
    """How to find and start the THOR player (keyword options of `ThorKitchen`)."""

    local_executable_path: str | None = None  # a THOR 5.0 player on disk (no spaces in the path)
    x_display: str | None = None  # e.g. ":0"; default: $DISPLAY
    platform: str = "auto"  # "auto": Linux64 when a display is known, else CloudRendering
    allow_download: bool = True  # let ai2thor download its build when none is cached
    width: int = DEFAULT_FRAME_SIZE
    height: int = DEFAULT_FRAME_SIZE
    grid_size: float = DEFAULT_GRID_SIZE
    visibility_distance: float = DEFAULT_VISIBILITY_DISTANCE
    server_timeout: float = DEFAULT_SERVER_TIMEOUT
    server_start_timeout: float = DEFAULT_SERVER_START_TIMEOUT

    def __post_init__(self) -> None:
        if self.platform not in PLATFORMS:
            raise ValueError(f"platform {self.platform!r}; expected one of {PLATFORMS}")
        for name in ("width", "height"):
            value = getattr(self, name)
            if not is_int(value) or value < 1:
                raise ValueError(f"{name} must be a positive integer (pixels), got {value!r}")
            object.__setattr__(self, name, int(value))  # a numpy integer would not serialize for the player
        for name in ("grid_size", "visibility_distance", "server_timeout", "server_start_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        for name in ("local_executable_path", "x_display"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (str, os.PathLike)) and str(value)):
                raise ValueError(f"{name} must be a non-empty path/string or None, got {value!r}")

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> ThorLaunchOptions:
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"unknown THOR option(s) {unknown}; expected some of {sorted(known)}")
        return cls(**kwargs)


@dataclass(frozen=True)
class BuildChoice:
    """Where the player comes from: ``source`` is "local", "cached" or "download"."""

    source: str
    platform: str  # "Linux64" or "CloudRendering"
    executable: str | None  # known for "local" and "cached"

    def describe(self) -> str:
        where = self.executable or "ai2thor's download"
        return f"{self.platform} player ({self.source}: {where})"


def thor_home() -> str:
    """The folder ai2thor writes under (``~/.ai2thor``: builds, locks, the player's log)."""
    return os.path.join(os.path.expanduser("~"), ".ai2thor")


def player_log_path() -> str:
    return os.path.join(thor_home(), "log", "unity.log")


def check_thor_home_writable() -> None:
    """ai2thor creates ``~/.ai2thor`` on start; say so clearly when HOME cannot take it."""
    folder = thor_home()
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ThorStartError(
            f"ai2thor writes its builds and logs to {folder}, but {existing} is not writable; "
            "set HOME to a writable folder"
        )


def resolve_platform(options: ThorLaunchOptions, environ: Mapping[str, str]) -> str:
    if options.platform != "auto":
        return options.platform
    return "Linux64" if (options.x_display or environ.get("DISPLAY")) else "CloudRendering"


def cached_build_executable(platform: str, commit_id: str, thor_folder: str) -> str | None:
    """The player ai2thor would find in its cache for ``commit_id``, if it is there."""
    name = f"thor-{platform}-{commit_id}"  # ai2thor.build.build_name for public builds
    executable = os.path.join(thor_folder, "releases", name, name)
    return executable if os.path.isfile(executable) else None


def check_local_executable(path: str | os.PathLike) -> str:
    """``local_executable_path`` made absolute, after the checks ai2thor would fail on obscurely."""
    resolved = os.path.abspath(os.path.expanduser(os.fspath(path)))
    if not os.path.exists(resolved):
        raise ThorBuildNotFoundError(f"local_executable_path {resolved!r} does not exist")
    if not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        raise ThorBuildNotFoundError(
            f"local_executable_path {resolved!r} is not an executable file (chmod +x it)"
        )
    # ai2thor builds the player's command line as one string and shlex-splits it.
    if shlex.split(resolved) != [resolved]:
        raise ThorBuildNotFoundError(
            f"local_executable_path {resolved!r} contains spaces or quotes, which ai2thor cannot "
            "launch; move the build to a path without them"
        )
    return resolved


def resolve_build(
    options: ThorLaunchOptions, commit_id: str, environ: Mapping[str, str] | None = None
) -> BuildChoice:
    """Decide where the player comes from, without touching the network."""
    environ = os.environ if environ is None else environ
    platform = resolve_platform(options, environ)
    if options.local_executable_path is not None:
        return BuildChoice("local", platform, check_local_executable(options.local_executable_path))
    cached = cached_build_executable(platform, commit_id, thor_home())
    if cached is not None:
        return BuildChoice("cached", platform, cached)
    if options.allow_download:
        return BuildChoice("download", platform, None)
    raise ThorBuildNotFoundError(no_build_message(platform, commit_id, "allow_download=False"))


def no_build_message(platform: str, commit_id: str, why: str) -> str:
    name = f"thor-{platform}-{commit_id}"
    return (
        f"no AI2-THOR {platform} build available ({why}): pass local_executable_path=<path to a "
        f"THOR 5.0 player>, or extract {name}.zip into {os.path.join(thor_home(), 'releases', name)}"
    )
