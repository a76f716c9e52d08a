"""Running an ai2thor ``Controller`` on the resolved build, and turning its failures into
clear errors.

ai2thor itself is imported only when a player is started, so creating an env, its spaces or
its options never launches (or even imports) THOR.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from synpo_envs.thor.errors import (
    ThorBuildNotFoundError,
    ThorPlayerCrashedError,
    ThorStartError,
)
from synpo_envs.thor.launcher import (
    BuildChoice,
    ThorLaunchOptions,
    check_thor_home_writable,
    no_build_message,
    player_log_path,
    resolve_build,
)

# ai2thor 5.0 launches a local_executable_path build as its Linux64 (X11) platform and puts
# DISPLAY into the player's environment; with no display known that value is None and the
# launch dies with a TypeError. A CloudRendering (Vulkan) player ignores DISPLAY, so it gets
# this placeholder.
CLOUD_RENDERING_PLACEHOLDER_DISPLAY = ":0"
WATCHDOG_POLL_SECONDS = 0.2
EXIT_STATUS_WAIT_SECONDS = 5.0  # a crashed player is reaped within moments
# An END_OF_MESSAGE header of ai2thor's FIFO protocol (struct "!BI": type 255, length 0).
_END_OF_MESSAGE = struct.pack("!BI", 255, 0)
_T = TypeVar("_T")


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _how_it_ended(err: BaseException, process: subprocess.Popen | None) -> str:
    if isinstance(err, TimeoutError):
        return f"stopped answering ({_one_line(err)})"
    try:
        code = None if process is None else process.wait(timeout=EXIT_STATUS_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        code = None
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


class PlayerWatchdog:
    """Wakes ai2thor up when its player dies.

    ai2thor 5.0 reads the player's pipe with ``select`` and a timeout, and an end-of-file there
    never ends the read: a crashed player costs the full ``server_timeout`` (100 s by default)
    of busy waiting before a TimeoutError. This thread waits for the player process and, if it
    exits while the session still uses it, writes an end-of-message into the pipe, so the
    pending read returns at once (as "no metadata") and the session reports the crash.
    """

    def __init__(self, process: subprocess.Popen, pipe_path: str) -> None:
        self._process = process
        self._pipe_path = pipe_path
        self._armed = True
        threading.Thread(target=self._watch, name="thor-player-watchdog", daemon=True).start()

    def disarm(self) -> None:
        self._armed = False

    def _watch(self) -> None:
        # Polling, not a blocking wait(): that would hold Popen's wait lock and make ai2thor's
        # own poll() calls report a dead player as running.
        while self._armed and self._process.poll() is None:
            time.sleep(WATCHDOG_POLL_SECONDS)
        if not self._armed:
            return
        try:
            # Non-blocking: should ai2thor not hold the pipe open for reading, open fails, and
            # the next call fails on the dead player's closed pipe instead. If python is between
            # calls, that next call fails the same way and this message is never read.
            descriptor = os.open(self._pipe_path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            os.write(descriptor, _END_OF_MESSAGE)
        except OSError:
            pass
        finally:
            os.close(descriptor)


def _stop_half_started(err: BaseException, controller_class: type) -> None:
    """Stop the player of a Controller whose ``__init__`` failed after launching it.

    The caller never gets that Controller, so it is found in the traceback's frames; without
    this the player would run on until the interpreter exits."""
    trace = err.__traceback__
    while trace is not None:
        candidate = trace.tb_frame.f_locals.get("self")
        if isinstance(candidate, controller_class) and candidate.server is not None:
            try:
                candidate.stop()
            except Exception:  # noqa: BLE001, S110  (best effort: the start already failed)
                pass
            return
        trace = trace.tb_next


class ThorSession:
    """One ai2thor ``Controller``: started on first use, dropped after a crash, stopped by
    `close`. Every call that reaches the player goes through `_guard`, which turns ai2thor's
    crash reports (``RestartError``, ``TimeoutError``, a RuntimeError once the pipe broke) into
    `ThorPlayerCrashedError`; a `PlayerWatchdog` makes a crash surface at once."""

    def __init__(self, options: ThorLaunchOptions) -> None:
        self.options = options
        self.build: BuildChoice | None = None
        self._controller = None
        self._watchdog: PlayerWatchdog | None = None

    @property
    def started(self) -> bool:
        return self._controller is not None

    @property
    def controller(self):
        """The live ``ai2thor.controller.Controller`` (None before the first reset)."""
        return self._controller

    def reset(self, scene: str):
        """Load ``scene`` (starting the player if none runs) and return THOR's event."""
        if self._controller is None:
            self._controller = self._start(scene)
            server = self._controller.server
            self._watchdog = PlayerWatchdog(server.unity_proc, server.server_pipe_path)
            return self._controller.last_event
        return self._guard(f"Reset to {scene}", lambda: self._controller.reset(scene))

    def step(self, **arguments: Any):
        if self._controller is None:
            raise RuntimeError("no THOR player is running; call reset() first")
        return self._guard(arguments.get("action", "?"), lambda: self._controller.step(**arguments))

    def close(self) -> None:
        controller, self._controller = self._controller, None
        if self._watchdog is not None:
            self._watchdog.disarm()
            self._watchdog = None
        if controller is not None:
            try:
                controller.stop()
            except Exception:  # noqa: BLE001, S110  (the player may be gone already: nothing to release)
                pass

    # --- internals ------------------------------------------------------------------------
    def _guard(self, what: str, call: Callable[[], _T]) -> _T:
        from ai2thor.exceptions import RestartError

        try:
            return call()
        except RestartError as err:
            # ai2thor restarted a player that died by SIGABRT/SIGSEGV; the scene state is gone,
            # and the new player is unwatched: start afresh on the next reset.
            self.close()
            raise ThorPlayerCrashedError(
                f"the THOR player crashed during {what} and ai2thor restarted it; the episode is "
                f"lost and the next reset() starts a new player (player log: {player_log_path()})"
            ) from err
        except ValueError:
            raise  # THOR rejected the request itself (unknown action, scene or argument)
        except RuntimeError as err:
            server = self._controller.server
            if server is not None and server.client_pipe is not None and not server.client_pipe.closed:
                # ai2thor closes the pipes only when the player failed; they are open, so THOR
                # answered and refused the call (e.g. Initialize with raise_for_failure).
                raise ThorStartError(f"THOR refused {what}: {_one_line(err)}") from err
            raise self._crash_error(what, err) from err
        except Exception as err:  # TimeoutError, BrokenPipeError, ai2thor's bare Exception
            raise self._crash_error(what, err) from err

    def _crash_error(self, what: str, err: BaseException) -> ThorPlayerCrashedError:
        server = self._controller.server
        process = None if server is None else server.unity_proc
        self.close()  # also kills a player that hangs
        return ThorPlayerCrashedError(
            f"the THOR player {_how_it_ended(err, process)} during {what}; the episode is lost "
            f"and the next reset() starts a new player (player log: {player_log_path()})"
        )

    def _start(self, scene: str):
        import ai2thor.build
        import ai2thor.controller
        import ai2thor.platform

        check_thor_home_writable()
        self.build = build = resolve_build(self.options, ai2thor.build.COMMIT_ID)
        arguments: dict[str, Any] = {
            "width": self.options.width,
            "height": self.options.height,
            "server_timeout": self.options.server_timeout,
            "server_start_timeout": self.options.server_start_timeout,
            "x_display": self._display(build),
            # Initialize parameters, passed on by the Controller:
            "gridSize": self.options.grid_size,
            "visibilityDistance": self.options.visibility_distance,
        }
        if build.source == "local":
            arguments["local_executable_path"] = build.executable
        else:
            arguments["platform"] = getattr(ai2thor.platform, build.platform)
        if build.source == "download":
            try:
                ai2thor.controller.Controller(download_only=True, **arguments)
            except Exception as err:  # ai2thor's own text here is "Invalid commit_id"
                raise ThorBuildNotFoundError(
                    no_build_message(
                        build.platform, ai2thor.build.COMMIT_ID, f"download failed: {_one_line(err)}"
                    )
                ) from err
        try:
            return ai2thor.controller.Controller(scene=scene, **arguments)
        except Exception as err:
            _stop_half_started(err, ai2thor.controller.Controller)
            if isinstance(err, TimeoutError):
                raise ThorStartError(
                    f"the {build.describe()} did not answer within {self.options.server_start_timeout}s "
                    f"(server_start_timeout); player log: {player_log_path()}"
                ) from err
            raise ThorStartError(
                f"could not start the {build.describe()} on {scene}: {_one_line(err)} "
                f"(player log: {player_log_path()})"
            ) from err

    def _display(self, build: BuildChoice) -> str | None:
        if self.options.x_display is not None or os.environ.get("DISPLAY"):
            return self.options.x_display
        if build.platform == "Linux64":
            raise ThorStartError(
                "the Linux64 THOR player needs an X display: pass x_display=':0' (or set "
                "DISPLAY), or platform='CloudRendering' for a headless Vulkan build"
            )
        return CLOUD_RENDERING_PLACEHOLDER_DISPLAY if build.source == "local" else None
