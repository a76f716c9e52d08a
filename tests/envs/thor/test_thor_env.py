"""ThorKitchen over the stand-in player: the gymnasium contract, every reward and termination
case, seeding, task availability and crashes. Protocol and logic checks only, not THOR results."""

import re
import subprocess
import sys
import time
import traceback

import numpy as np
import pytest
from ai2thor.controller import Controller
from gymnasium.utils.env_checker import check_env
from synpo_envs.thor import (
    TaskUnavailableError,
    TaskUnavailableWarning,
    ThorPlayerCrashedError,
    ThorStartError,
)
from synpo_envs.thor.constants import (
    DEFAULT_REWARDS,
    LOOK_DOWN,
    NUM_TASKS,
    OPEN_CLOSE,
    PICK_PUT,
    TASK_NAMES,
    TASK_OBJECTS,
)

from tests.envs.thor import standin_player as standin
from tests.envs.thor.scenario import (
    APPLE_TO_FRIDGE,
    AT_ISLAND,
    BLOCKED_MOVE,
    FACING_NOTHING,
    FEATURE_DIM,
    FRAME_PIXELS,
    LOOK_UP_TWICE,
    TO_FRIDGE,
    pair,
)

pytestmark = pytest.mark.filterwarnings("ignore::synpo_envs.thor.TaskUnavailableWarning")
STEP = DEFAULT_REWARDS["step"]
INVALID = STEP + DEFAULT_REWARDS["invalid"]
APPLE_HELD = 1 + TASK_OBJECTS.index("Apple")


def _scripted(env, task: str, start_pose=AT_ISLAND):
    return env.reset(
        seed=0, options={"pair": pair(task), "start_pose": start_pose, "randomize_objects": False}
    )


def _play(env, actions):
    """Rewards, last step's flags and info."""
    rewards = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    return rewards, obs, terminated, truncated, info


def test_creating_the_env_starts_and_imports_nothing():
    code = (
        "import sys, gymnasium, synpo_envs\n"
        "env = gymnasium.make('SynPoThor-v0', featurizer='random_cnn', local_executable_path='/nowhere')\n"
        "assert env.observation_space['features'].shape == (4, 64)\n"
        "print(sorted(m for m in ('ai2thor', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_spaces_follow_the_configuration(make_env):
    env = make_env(kitchens=("FloorPlan1", "FloorPlan5", "FloorPlan7"), frame_stack=2)
    assert env.observation_space["features"].shape == (2, FEATURE_DIM)
    assert env.observation_space["env_id"].n == 3
    assert env.observation_space["task_id"].n == NUM_TASKS == 21
    assert env.observation_space["held"].n == len(TASK_OBJECTS) + 1
    assert env.action_space.n == 7
    assert not env.session.started


@pytest.mark.filterwarnings(
    "ignore:.*Box observation space m.* value is:UserWarning"
)  # features are unbounded
def test_check_env_over_the_standin(make_env):
    env = make_env()
    check_env(env, skip_render_check=True)
    assert env.session.build.source == "local" and env.session.build.platform == "CloudRendering"


def test_reset_gives_a_stacked_observation(make_env):
    env = make_env(render_mode="rgb_array")
    obs, info = env.reset(seed=1)
    assert obs in env.observation_space
    assert np.all(obs["features"][:-1] == 0) and np.any(obs["features"][-1] != 0)
    assert obs["held"] == 0 and info["kitchen"] == "FloorPlan1"
    assert info["task"] == TASK_NAMES[obs["task_id"]] and not info["task"].startswith("Container")
    assert env.render().shape == (FRAME_PIXELS, FRAME_PIXELS, 3)


def test_complete_task_rewards_pick_and_put(make_env):
    env = make_env()
    _scripted(env, "Apple->Fridge")
    obs, reward, terminated, _, info = env.step(PICK_PUT)
    assert reward == pytest.approx(STEP + DEFAULT_REWARDS["correct"])
    assert obs["held"] == APPLE_HELD and info["thor_action"] == "PickupObject" and not terminated
    assert info["target_object_id"].startswith("Apple|")
    rewards, obs, terminated, truncated, info = _play(env, APPLE_TO_FRIDGE[1:])
    assert info["thor_action"] == "PutObject" and info["target_object_id"].startswith("Fridge|")
    assert rewards[-1] == pytest.approx(STEP + DEFAULT_REWARDS["complete"])
    assert rewards[:-1] == pytest.approx([STEP] * (len(rewards) - 1))
    assert terminated and not truncated and info["success"] and obs["held"] == 0
    with pytest.raises(RuntimeError, match="finished episode"):
        env.step(0)


def test_wrong_pick_up_ends_the_episode(make_env):
    env = make_env()
    _scripted(env, "Tomato->Fridge")
    _, reward, terminated, _, info = env.step(PICK_PUT)  # the Apple is the nearest task object
    assert reward == pytest.approx(STEP + DEFAULT_REWARDS["wrong"])
    assert terminated and not info["success"]


def test_put_into_the_wrong_receptacle_ends_the_episode(make_env):
    env = make_env()
    _scripted(env, "Apple->Microwave")
    rewards, _, terminated, _, info = _play(env, APPLE_TO_FRIDGE)
    assert rewards[0] == pytest.approx(STEP + DEFAULT_REWARDS["correct"])
    assert rewards[-1] == pytest.approx(STEP + DEFAULT_REWARDS["wrong"])
    assert terminated and not info["success"]


def test_failed_actions_cost_extra_and_go_on(make_env):
    env = make_env()
    _scripted(env, "Apple->Fridge")
    _, reward, terminated, _, info = env.step(BLOCKED_MOVE)
    assert reward == pytest.approx(INVALID) and not terminated
    assert (
        info["thor_action"] == "MoveAhead"
        and not info["action_success"]
        and "blocked" in info["error_message"]
    )
    rewards, *_, info = _play(env, LOOK_UP_TWICE)
    assert rewards == pytest.approx([STEP, INVALID]) and info["thor_action"] == "LookUp"


@pytest.mark.parametrize("action", [PICK_PUT, OPEN_CLOSE])
def test_interaction_with_nothing_in_view_never_reaches_thor(make_env, action):
    env = make_env()
    _scripted(env, "Apple->Fridge", start_pose=FACING_NOTHING)
    before = env.thor_metadata
    _, reward, terminated, _, info = env.step(action)
    assert reward == pytest.approx(INVALID) and not terminated
    assert info["thor_action"] is None and "visible" in info["error_message"]
    assert env.thor_metadata is before


def test_put_into_a_closed_fridge_fails_then_open_close_toggles(make_env):
    env = make_env()
    _scripted(env, "Apple->Fridge")
    _play(env, (PICK_PUT, *TO_FRIDGE))
    _, reward, terminated, _, info = env.step(PICK_PUT)
    assert (
        info["thor_action"] == "PutObject"
        and not info["action_success"]
        and "closed" in info["error_message"]
    )
    assert reward == pytest.approx(INVALID) and not terminated
    thor_actions = [_play(env, (OPEN_CLOSE,))[-1]["thor_action"] for _ in range(3)]
    assert thor_actions == ["OpenObject", "CloseObject", "OpenObject"]
    _, reward, terminated, _, info = env.step(PICK_PUT)
    assert terminated and info["success"]


def test_truncation_after_max_steps(make_env):
    env = make_env(max_steps=3)
    _scripted(env, "Apple->Fridge")
    flags = [env.step(LOOK_DOWN)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]


def test_reward_overrides(make_env):
    env = make_env(reward={"step": -1.0, "invalid": -2.0})
    _scripted(env, "Apple->Fridge")
    assert env.step(BLOCKED_MOVE)[1] == pytest.approx(-3.0)
    with pytest.raises(ValueError, match="unknown reward key"):
        make_env(reward={"bump": 1.0})


def _trace(env, seed, steps=12):
    obs, info = env.reset(seed=seed)
    trace = [(obs["features"].copy(), info["task_id"], dict(env.thor_metadata["agent"]["position"]))]
    for action in np.random.default_rng(seed).integers(env.action_space.n, size=steps):
        obs, reward, terminated, truncated, info = env.step(int(action))
        trace.append((obs["features"].copy(), reward, info["thor_action"]))
        if terminated or truncated:
            break
    return trace


def _same(a, b):
    return len(a) == len(b) and all(
        all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(u, v))
        for u, v in zip(a, b)
    )


def test_same_seed_same_episode(make_env):
    env, other = make_env(), make_env()
    first = _trace(env, seed=11)
    assert _same(first, _trace(env, seed=11))
    assert _same(first, _trace(other, seed=11))
    starts = {(t[0][1], t[0][2]["x"], t[0][2]["z"]) for t in (_trace(env, seed=s, steps=0) for s in range(6))}
    assert len(starts) > 1  # seeds change the pair and the start


def test_objects_are_respawned_from_the_env_seed(make_env):
    env = make_env()
    env.reset(seed=3)
    ids_3 = sorted(obj["objectId"] for obj in env.thor_metadata["objects"])
    env.reset(seed=4)
    assert ids_3 != sorted(obj["objectId"] for obj in env.thor_metadata["objects"])  # ids follow positions
    env.reset(seed=3)
    assert ids_3 == sorted(obj["objectId"] for obj in env.thor_metadata["objects"])


def test_unavailable_tasks_are_reported_and_excluded(make_env):
    env = make_env(kitchens=("FloorPlan1", "FloorPlan2"))  # the stand-in's FloorPlan2 has no Microwave
    with pytest.warns(TaskUnavailableWarning, match="FloorPlan2 lacks Container, Microwave"):
        env.reset(seed=0)
    expected = {(0, t) for t, name in enumerate(TASK_NAMES) if name.startswith("Container")}
    expected |= {
        (1, t)
        for t, name in enumerate(TASK_NAMES)
        if name.startswith("Container") or name.endswith("Microwave")
    }
    assert set(env.unavailable_pairs) == expected
    assert env.kitchen_tasks["FloorPlan2"].missing == ("Container", "Microwave")
    assert set(env.available_pairs).isdisjoint(expected) and len(env.available_pairs) == 2 * NUM_TASKS - len(
        expected
    )
    for seed in range(8):
        _, info = env.reset(seed=seed)
        assert (info["env_id"], info["task_id"]) in env.available_pairs
    with pytest.raises(
        TaskUnavailableError,
        match="Apple->Microwave is unavailable in FloorPlan2: it lacks Container, Microwave",
    ):
        env.reset(options={"pair": pair("Apple->Microwave", env_id=1)})


def test_no_available_pair_is_an_error(make_env):
    env = make_env(pairs=[pair("Container->Fridge")])
    with pytest.raises(TaskUnavailableError, match="no requested"):
        env.reset(seed=0)


def test_bad_reset_options(make_env):
    env = make_env()
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"maze": 1})
    with pytest.raises(ValueError, match="out of range"):
        env.reset(options={"pair": (1, 0)})
    with pytest.raises(ValueError, match="start_pose"):
        env.reset(options={"pair": pair("Apple->Fridge"), "start_pose": {"x": 0}})
    with pytest.raises(ValueError, match="not reachable"):
        env.reset(
            options={
                "pair": pair("Apple->Fridge"),
                "start_pose": {"x": 0.5, "z": 0.5, "rotation": 0, "horizon": 0},
            }
        )
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in Discrete"):
        env.step(7)


def test_bad_constructor_arguments(make_env):
    for kwargs, message in (
        ({"kitchens": ("FloorPlan201",)}, "FloorPlan1..FloorPlan30"),
        ({"pairs": []}, "at least one"),
        ({"frame_stack": 0}, "frame_stack"),
        ({"max_steps": True}, "max_steps must be a positive integer, got True"),
        ({"width": True}, "width must be a positive integer \\(pixels\\), got True"),
        ({"feature_cache_size": True}, "cache_size must be a non-negative integer, got True"),
        ({"platform": "Windows"}, "platform"),
        ({"quality": "Ultra"}, "unknown THOR option"),
        ({"featurizer": "vgg"}, "featurizer 'vgg'"),
    ):
        with pytest.raises(ValueError, match=message):
            make_env(**kwargs)


@pytest.mark.parametrize("mode", ["exit", "abort"])
def test_player_crash_is_a_clear_error_and_reset_recovers(make_env, monkeypatch, mode):
    monkeypatch.setenv("AI2THOR_STANDIN_CRASH_ON", "LookDown")
    monkeypatch.setenv("AI2THOR_STANDIN_CRASH_MODE", mode)
    env = make_env(server_timeout=60.0)
    _scripted(env, "Apple->Fridge")
    expected = "exited with status 3" if mode == "exit" else "was killed by SIGABRT"
    started = time.monotonic()
    with pytest.raises(
        ThorPlayerCrashedError, match=f"player {expected} during LookDown; the episode is lost"
    ):
        env.step(LOOK_DOWN)
    assert time.monotonic() - started < 10.0  # the watchdog, not ai2thor's 60 s read timeout
    assert not env.session.started
    obs, _ = _scripted(env, "Apple->Fridge")  # a new player
    assert obs in env.observation_space and env.step(PICK_PUT)[1] > 0


def test_hung_player_times_out_clearly_and_is_killed(make_env, monkeypatch):
    monkeypatch.setenv("AI2THOR_STANDIN_CRASH_ON", "LookDown")
    monkeypatch.setenv("AI2THOR_STANDIN_CRASH_MODE", "hang")
    env = make_env(server_timeout=1.0)
    _scripted(env, "Apple->Fridge")
    process = env.session.controller.server.unity_proc
    with pytest.raises(ThorPlayerCrashedError, match="player stopped answering .*during LookDown"):
        env.step(LOOK_DOWN)
    assert process.wait(timeout=5) is not None


def test_player_refusing_to_start_is_a_clear_error(make_env, monkeypatch):
    monkeypatch.setenv("AI2THOR_STANDIN_FAIL_ON", "Initialize")
    env = make_env()
    with pytest.raises(
        ThorStartError,
        match=f"could not start the CloudRendering player .* on FloorPlan1: {re.escape(standin.REFUSAL)}",
    ) as raised:
        env.reset(seed=0)
    frames = traceback.walk_tb(raised.value.__cause__.__traceback__)
    half_started = [
        frame.f_locals["self"] for frame, _ in frames if isinstance(frame.f_locals.get("self"), Controller)
    ]
    assert half_started and half_started[0].server.unity_proc.poll() is not None  # its player was stopped


def test_close_stops_the_player(make_env):
    env = make_env()
    env.reset(seed=0)
    process = env.session.controller.server.unity_proc
    assert process.poll() is None
    env.close()
    assert process.poll() is not None and not env.session.started
    env.close()  # closing twice is harmless
