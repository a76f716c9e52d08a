#!/usr/bin/env bash
# Entry point of the AI2-THOR image: start a virtual X display for the Linux64 Unity player
# when there is none, then run the command (the image passes `rllib` and its arguments).
#
#   DISPLAY set                       use that X server, start nothing
#   AI2THOR_PLATFORM=CloudRendering   Vulkan, no X server needed, start nothing
#   otherwise                         start Xvfb on :$XVFB_DISPLAY (default 99) with
#                                     screen $XVFB_SCREEN (default 1024x768x24; THOR needs depth 24)
set -euo pipefail

if [[ $# -eq 0 ]]; then
    echo "usage: synpo-thor-entrypoint COMMAND [ARG...]" >&2
    exit 2
fi

if [[ -z "${DISPLAY:-}" && "${AI2THOR_PLATFORM:-}" != "CloudRendering" ]]; then
    display_number="${XVFB_DISPLAY:-99}"
    socket="/tmp/.X11-unix/X${display_number}"
    log="${TMPDIR:-/tmp}/xvfb-${display_number}.log"
    Xvfb ":${display_number}" -screen 0 "${XVFB_SCREEN:-1024x768x24}" \
        +extension GLX +render -noreset -nolisten tcp >"${log}" 2>&1 &
    xvfb_pid=$!
    for _ in $(seq 1 100); do
        [[ -S "${socket}" ]] && break
        if ! kill -0 "${xvfb_pid}" 2>/dev/null; then
            echo "synpo-thor-entrypoint: Xvfb exited; its log:" >&2
            cat "${log}" >&2
            exit 1
        fi
        sleep 0.1
    done
    if [[ ! -S "${socket}" ]]; then
        echo "synpo-thor-entrypoint: Xvfb did not open ${socket} within 10 s" >&2
        exit 1
    fi
    export DISPLAY=":${display_number}"
fi

exec "$@"
