"""The unmodified ai2thor 5.0 Controller against the stand-in player: the protocol as ai2thor
speaks it (launch arguments, environment, handshake, metadata, frames, errors)."""

import json

import ai2thor.controller as ai2thor_controller  # in the test extra: a missing install fails
import pytest

from tests.envs.thor.scenario import FRAME_PIXELS


@pytest.fixture
def controller(thor_home, standin_executable, tmp_path, monkeypatch):
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("AI2THOR_STANDIN_RECORD", str(record))
    controller = ai2thor_controller.Controller(
        local_executable_path=standin_executable,
        x_display=":7",
        scene="FloorPlan2",
        width=FRAME_PIXELS,
        height=FRAME_PIXELS,
        gridSize=0.25,
        server_timeout=30.0,
        server_start_timeout=30.0,
    )
    controller.record = record
    yield controller
    controller.stop()


def _recorded(controller) -> list[dict]:
    return [json.loads(line) for line in controller.record.read_text().splitlines()]


def test_start_up_handshake(controller):
    launch, *actions = _recorded(controller)
    assert launch["DISPLAY"] == ":7"
    assert launch["argv"][launch["argv"].index("-screen-width") + 1] == str(FRAME_PIXELS)
    assert [action["action"] for action in actions] == [
        "ChangeResolution",
        "GetScenesInBuild",
        "Reset",
        "Initialize",
    ]
    assert actions[2]["sceneName"] == "FloorPlan2_physics" and actions[2]["sequenceId"] == 0
    assert actions[3]["gridSize"] == 0.25
    event = controller.last_event
    assert event.frame.shape == (FRAME_PIXELS, FRAME_PIXELS, 3)
    assert event.metadata["sceneName"] == "FloorPlan2_physics"
    assert "Microwave" not in {obj["objectType"] for obj in event.metadata["objects"]}


def test_actions_metadata_and_sequence_ids(controller):
    event = controller.step(action="MoveAhead")
    assert event.metadata["lastActionSuccess"] and event.metadata["agent"]["position"]["z"] == 0.25
    assert event.metadata["sequenceId"] == controller.server.sequence_id
    event = controller.step(action="RotateLeft")
    assert event.metadata["agent"]["rotation"]["y"] == 270.0
    event = controller.step(action="MoveAhead")  # off the floor
    assert not event and "blocked" in event.metadata["errorMessage"]
    positions = controller.step(action="GetReachablePositions").metadata["actionReturn"]
    assert len(positions) == 34 and {"x", "y", "z"} <= set(positions[0])


def test_argument_errors_raise_like_thor(controller):
    with pytest.raises(ValueError, match="Invalid action: Fly"):
        controller.step(action="Fly")
    with pytest.raises(ValueError, match="missing argument objectId"):
        controller.step(action="PickupObject")


def test_random_spawn_changes_object_ids(controller):
    before = {obj["objectType"]: obj["objectId"] for obj in controller.last_event.metadata["objects"]}
    event = controller.step(action="InitialRandomSpawn", randomSeed=5, forceVisible=True)
    after = {obj["objectType"]: obj["objectId"] for obj in event.metadata["objects"]}
    assert after["Fridge"] == before["Fridge"]  # receptacles stay
    assert any(after[kind] != before[kind] for kind in ("Apple", "Mug", "Tomato", "Bowl"))
