"""Finding and starting a THOR player: build resolution, the display choice, clear errors, and
the ``--list-tasks`` command (over the stand-in: protocol checks, not THOR results)."""

import os

import pytest
from synpo_envs.thor import (
    ThorBuildNotFoundError,
    ThorKitchen,
    ThorLaunchOptions,
    ThorStartError,
    launcher,
)
from synpo_envs.thor.__main__ import main as thor_main
from synpo_envs.thor.launcher import resolve_build, resolve_platform
from synpo_envs.thor.session import CLOUD_RENDERING_PLACEHOLDER_DISPLAY, ThorSession

COMMIT = "0123abcd"


def _session_reset(**options):
    session = ThorSession(ThorLaunchOptions(**options))
    try:
        return session.reset("FloorPlan1")
    finally:
        session.close()


def test_platform_follows_the_display():
    assert resolve_platform(ThorLaunchOptions(), {}) == "CloudRendering"
    assert resolve_platform(ThorLaunchOptions(), {"DISPLAY": ":1"}) == "Linux64"
    assert resolve_platform(ThorLaunchOptions(x_display=":0"), {}) == "Linux64"
    assert (
        resolve_platform(ThorLaunchOptions(platform="CloudRendering", x_display=":0"), {}) == "CloudRendering"
    )


def test_cached_build_is_found_without_network(thor_home):
    name = f"thor-CloudRendering-{COMMIT}"
    executable = thor_home / ".ai2thor" / "releases" / name / name
    executable.parent.mkdir(parents=True)
    executable.write_text("")
    choice = resolve_build(ThorLaunchOptions(allow_download=False), COMMIT, environ={})
    assert (choice.source, choice.platform, choice.executable) == (
        "cached",
        "CloudRendering",
        str(executable),
    )
    assert resolve_build(ThorLaunchOptions(), "other-commit", environ={}).source == "download"


def test_no_build_offline_is_one_clear_line(thor_home):
    with pytest.raises(ThorBuildNotFoundError) as raised:
        resolve_build(ThorLaunchOptions(allow_download=False), COMMIT, environ={})
    message = str(raised.value)
    assert "\n" not in message and "local_executable_path=" in message
    assert os.path.join(launcher.thor_home(), "releases", f"thor-CloudRendering-{COMMIT}") in message


def test_failed_download_is_wrapped(thor_home, monkeypatch):
    import ai2thor.build

    # As offline: ai2thor finds no build and says "Invalid commit_id"; never touch the network.
    monkeypatch.setattr(ai2thor.build.Build, "exists", lambda self: False)
    with pytest.raises(
        ThorBuildNotFoundError, match="download failed: Invalid commit_id.*local_executable_path="
    ):
        _session_reset(platform="CloudRendering")


@pytest.mark.parametrize(
    "make_path, message",
    [
        (lambda tmp: tmp / "missing", "does not exist"),
        (lambda tmp: tmp, "not an executable file"),
        (lambda tmp: tmp / "has space" / "player", "contains spaces"),
    ],
)
def test_bad_local_executable_path(thor_home, tmp_path, make_path, message):
    path = make_path(tmp_path)
    if path.name == "player":
        path.parent.mkdir()
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    with pytest.raises(ThorBuildNotFoundError, match=f"local_executable_path .*{message}"):
        _session_reset(local_executable_path=str(path))


def test_env_reports_build_errors_on_reset_not_creation(thor_home, tmp_path):
    env = ThorKitchen(featurizer="random_cnn", local_executable_path=str(tmp_path / "missing"))
    with pytest.raises(ThorBuildNotFoundError, match="does not exist"):
        env.reset(seed=0)


def test_linux64_without_a_display_is_a_clear_error(thor_home, standin_executable):
    with pytest.raises(ThorStartError, match="needs an X display: pass x_display"):
        _session_reset(local_executable_path=standin_executable, platform="Linux64")


def test_headless_local_player_gets_a_placeholder_display(
    thor_home, standin_executable, tmp_path, monkeypatch
):
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("AI2THOR_STANDIN_RECORD", str(record))
    event = _session_reset(local_executable_path=standin_executable, width=16, height=16)
    assert event.frame.shape == (16, 16, 3)
    assert f'"DISPLAY": "{CLOUD_RENDERING_PLACEHOLDER_DISPLAY}"' in record.read_text().splitlines()[0]
    assert (thor_home / ".ai2thor" / "log" / "unity.log").exists()  # ai2thor wrote under HOME


def test_list_tasks_command(thor_home, standin_executable, capsys):
    code = thor_main(
        [
            "--list-tasks",
            "--kitchens",
            "FloorPlan1",
            "FloorPlan2",
            "--local-executable-path",
            standin_executable,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "CloudRendering player (local" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| FloorPlan")}
    assert "| Container |" in rows["FloorPlan1"] and "18 of 21" in rows["FloorPlan1"]
    assert "Container, Microwave" in rows["FloorPlan2"] and "12 of 21" in rows["FloorPlan2"]


def test_list_tasks_command_errors(thor_home, capsys):
    assert thor_main(["--list-tasks", "--no-download"]) == 2
    assert "local_executable_path=" in capsys.readouterr().err
    assert thor_main(["--list-tasks", "--kitchens", "FloorPlan301"]) == 2
