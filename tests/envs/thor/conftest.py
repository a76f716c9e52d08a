"""Fixtures for the THOR env tests: a private HOME and the stand-in player.

The stand-in (standin_player.py) checks the protocol and the env's logic only; nothing it
returns is a THOR result.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.envs.thor import standin_player as standin
from tests.envs.thor.scenario import FEATURE_DIM, FRAME_PIXELS

STANDIN_SCRIPT = Path(standin.__file__)


@pytest.fixture
def thor_home(tmp_path, monkeypatch) -> Path:
    """ai2thor writes ~/.ai2thor (logs, locks): point HOME at a temp dir, and drop DISPLAY so
    the 'auto' platform is the same headless choice on every machine."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DISPLAY", raising=False)
    return home


@pytest.fixture(scope="session")
def standin_executable(tmp_path_factory) -> str:
    """A launcher for the stand-in that runs it with this interpreter (the script itself is
    stdlib-only and executable, but the python3 on PATH may be any)."""
    wrapper = tmp_path_factory.mktemp("standin") / "thor-standin"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(STANDIN_SCRIPT))} "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.fixture
def make_env(thor_home, standin_executable):
    """ThorKitchen over the stand-in with a tiny random CNN; every env made is closed after."""
    from synpo_envs.thor import ThorKitchen

    made = []

    def make(**kwargs):
        kwargs.setdefault("kitchens", ("FloorPlan1",))
        kwargs.setdefault("featurizer", "random_cnn")
        if kwargs["featurizer"] == "random_cnn":
            kwargs.setdefault("featurizer_options", {"feature_dim": FEATURE_DIM, "seed": 0})
        kwargs.setdefault("width", FRAME_PIXELS)
        kwargs.setdefault("height", FRAME_PIXELS)
        kwargs.setdefault("server_start_timeout", 30.0)
        kwargs.setdefault("server_timeout", 30.0)
        env = ThorKitchen(local_executable_path=standin_executable, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
