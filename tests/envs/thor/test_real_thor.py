"""Against a real AI2-THOR 5.0 player, when one is present (marker ``thor_build``).

Point ``SYNPO_THOR_EXECUTABLE`` at a player (and ``SYNPO_THOR_X_DISPLAY`` at a display for a
Linux64 build), or leave ai2thor's own build in ``~/.ai2thor/releases``; otherwise these tests
are skipped with the reason. No such build can be downloaded on the project's machines.
"""

import os

import pytest
from synpo_envs.thor import (
    PAPER_KITCHENS,
    TASK_NAMES,
    ThorBuildNotFoundError,
    ThorKitchen,
    ThorLaunchOptions,
)

pytestmark = [
    pytest.mark.thor_build,
    pytest.mark.filterwarnings("ignore::synpo_envs.thor.TaskUnavailableWarning"),
]


@pytest.fixture(scope="module")
def launch_options() -> dict:
    import ai2thor.build
    from synpo_envs.thor.launcher import resolve_build

    options = {
        "local_executable_path": os.environ.get("SYNPO_THOR_EXECUTABLE"),
        "x_display": os.environ.get("SYNPO_THOR_X_DISPLAY"),
        "allow_download": False,
    }
    try:
        resolve_build(ThorLaunchOptions(**options), ai2thor.build.COMMIT_ID)
    except ThorBuildNotFoundError as err:
        pytest.skip(f"no AI2-THOR build present (set SYNPO_THOR_EXECUTABLE): {err}")
    return options


def test_real_kitchens_episode(launch_options):
    env = ThorKitchen(kitchens=PAPER_KITCHENS[:2], featurizer="random_cnn", **launch_options)
    try:
        obs, _ = env.reset(seed=0)
        assert obs in env.observation_space
        container_tasks = {t for t, name in enumerate(TASK_NAMES) if name.startswith("Container")}
        assert {(e, t) for e in range(2) for t in container_tasks} <= set(env.unavailable_pairs)
        for action in range(env.action_space.n):
            obs, _, terminated, truncated, _ = env.step(action)
            assert obs in env.observation_space
            if terminated or truncated:
                break
    finally:
        env.close()
