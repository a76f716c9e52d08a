#!/usr/bin/env python3
"""A stand-in for the AI2-THOR 5.0 Unity player, for tests: it speaks THOR's FIFO protocol and
simulates one small kitchen. Its results check the protocol and the env's logic only; they are
never THOR results.

How ai2thor 5.0's ``Controller(local_executable_path=...)`` runs a player (read from
ai2thor/controller.py and fifo_server.py, not from this file's imports: this script uses the
standard library only, so it checks ai2thor's protocol code instead of reusing it):

- launch: ``<path> -screen-fullscreen 0 -screen-quality N -screen-width W -screen-height H``
  with ``AI2THOR_SERVER_TYPE=FIFO``, ``AI2THOR_FIFO_SERVER_PIPE_PATH`` (player -> python) and
  ``AI2THOR_FIFO_CLIENT_PIPE_PATH`` (python -> player) in its environment;
- framing: each field is a 5-byte header ``struct "!BI"`` (field type, body length) and its
  body; a message ends with the END_OF_MESSAGE header (type 255, length 0);
- python -> player: one ACTION field (type 2), a JSON object with ``action``, ``sequenceId``
  and the action's arguments;
- player -> python: a METADATA field (type 1, msgpack ``{"agents": [agent metadata],
  "sequenceId", "activeAgentId", "thirdPartyCameras"}``) then an RGB_IMAGE field (type 4, raw
  height x width x 3 bytes, rows bottom-up as Unity reads them); the first message is sent
  unprompted, with sequenceId 0, and every reply echoes the action's sequenceId;
- the Controller's start-up calls: ChangeResolution (frames under 300 px), GetScenesInBuild,
  Reset (``sceneName="FloorPlanN_physics"``, sequenceId 0), Initialize (returns
  ``cameraNearPlane``/``cameraFarPlane``); a failure with ``errorCode`` "InvalidAction",
  "MissingArguments" or "InvalidArgument" makes the Controller raise ValueError.

The kitchen (cell units; metres = cells x gridSize): floor cells x, z in 0..5 except the island
`ISLAND`; rotation 0 faces +z, 90 faces +x; the horizon runs from -30 (up) to 60 (down).
Objects are seen within ``visibilityDistance`` and 45 degrees of the heading, unless inside a
closed receptacle. Kitchens FloorPlan1..30 share this layout, minus `MISSING_TYPES`.

Test hooks (environment variables): ``AI2THOR_STANDIN_CRASH_ON=<action>`` ends the player on
that action, by ``AI2THOR_STANDIN_CRASH_MODE`` "exit" (status 3, default), "abort" (SIGABRT)
or "hang" (never answers); ``AI2THOR_STANDIN_FAIL_ON=<action>`` makes that action fail with
`REFUSAL`; ``AI2THOR_STANDIN_RECORD=<file>`` appends the launch (argv, DISPLAY) and every
action received, one JSON object a line.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import sys
import time
from typing import Any

# --- protocol ---------------------------------------------------------------------------------
HEADER = struct.Struct("!BI")
METADATA, ACTION, RGB_IMAGE, END_OF_MESSAGE = 1, 2, 4, 255
ARGUMENT_ERRORS = ("InvalidAction", "MissingArguments", "InvalidArgument")
CRASH_EXIT_STATUS = 3
HANG_SECONDS = 3600
REFUSAL = "refused by the stand-in (AI2THOR_STANDIN_FAIL_ON)"

# --- the kitchen ----------------------------------------------------------------------------
FLOOR_CELLS = 6  # x and z in 0..5
ISLAND = frozenset({(2, 2), (3, 2)})
AGENT_Y = 0.9
START_POSE = {"x": 0, "z": 0, "rotation": 0, "horizon": 0}  # after Reset, in cells/degrees
HORIZON_LIMITS = (-30, 60)
DEFAULT_ROTATE_DEGREES = 90
DEFAULT_LOOK_DEGREES = 30
DEFAULT_GRID_SIZE = 0.25
DEFAULT_VISIBILITY_DISTANCE = 1.5
HALF_FIELD_OF_VIEW = 45.0
DEFAULT_SCREEN = 300  # Unity's window before ChangeResolution
KITCHENS = tuple(f"FloorPlan{n}_physics" for n in range(1, 31))
MISSING_TYPES = {"FloorPlan2_physics": ("Microwave",), "FloorPlan3_physics": ("Bowl", "Plate")}
# type, cell x, cell z, height y, flags. Appliances stand on the wall row z = 6 / columns -1, 6.
LAYOUT = (
    ("Fridge", 0.0, 6.0, 0.9, {"openable": True, "receptacle": True}),
    ("Microwave", 3.0, 6.0, 1.1, {"openable": True, "receptacle": True}),
    ("Sink", 5.0, 6.0, 0.9, {}),
    ("SinkBasin", 5.0, 6.0, 0.85, {"receptacle": True}),
    ("Cabinet", 6.0, 3.0, 0.5, {"openable": True, "receptacle": True}),
    ("CounterTop", 2.5, 2.0, 0.9, {"receptacle": True}),
    ("Apple", 2.0, 2.0, 0.95, {"pickupable": True}),
    ("Mug", 3.0, 2.0, 0.95, {"pickupable": True}),
    ("Knife", 2.5, 2.0, 0.95, {"pickupable": True}),
    ("Tomato", -1.0, 1.0, 0.95, {"pickupable": True}),
    ("Lettuce", -1.0, 4.0, 0.95, {"pickupable": True}),
    ("Plate", 6.0, 1.0, 0.95, {"pickupable": True}),
    ("Bowl", 6.0, 5.0, 0.95, {"pickupable": True}),
)
# Where InitialRandomSpawn may put a pickupable object: (cell x, cell z, y, receptacle type).
SPAWN_SPOTS = (
    (2.0, 2.0, 0.95, "CounterTop"),
    (3.0, 2.0, 0.95, "CounterTop"),
    (2.5, 2.0, 0.95, "CounterTop"),
    (-1.0, 1.0, 0.95, None),
    (-1.0, 4.0, 0.95, None),
    (6.0, 1.0, 0.95, None),
    (6.0, 5.0, 0.95, None),
    (0.0, 6.0, 0.9, "Fridge"),
    (3.0, 6.0, 1.1, "Microwave"),
    (5.0, 6.0, 0.85, "SinkBasin"),
)


# --- msgpack (the subset THOR's metadata needs: None, bool, int, float, str, list, dict) ------
def pack(value: Any) -> bytes:
    if value is None:
        return b"\xc0"
    if value is True or value is False:
        return b"\xc3" if value else b"\xc2"
    if isinstance(value, int):
        if 0 <= value < 0x80:
            return struct.pack("B", value)
        if -32 <= value < 0:
            return struct.pack("b", value)
        return b"\xd3" + struct.pack(">q", value)  # int64 covers everything THOR sends
    if isinstance(value, float):
        return b"\xcb" + struct.pack(">d", value)
    if isinstance(value, str):
        data = value.encode("utf8")
        return _sized(len(data), 0xA0, 31, b"\xd9", b"\xda", b"\xdb") + data
    if isinstance(value, (list, tuple)):
        return _sized(len(value), 0x90, 15, None, b"\xdc", b"\xdd") + b"".join(map(pack, value))
    if isinstance(value, dict):
        items = b"".join(pack(key) + pack(item) for key, item in value.items())
        return _sized(len(value), 0x80, 15, None, b"\xde", b"\xdf") + items
    raise TypeError(f"cannot msgpack {type(value).__name__}")


def _sized(size: int, fix: int, fix_max: int, tag8: bytes | None, tag16: bytes, tag32: bytes) -> bytes:
    if size <= fix_max:
        return struct.pack("B", fix | size)
    if tag8 is not None and size < 0x100:
        return tag8 + struct.pack("B", size)
    return tag16 + struct.pack(">H", size) if size < 0x10000 else tag32 + struct.pack(">I", size)


# --- the simulated kitchen ----------------------------------------------------------------------
def _object_id(kind: str, x: float, y: float, z: float) -> str:
    """THOR-style id from the position (so ids change when objects move, as in THOR)."""
    return f"{kind}|{x:+.2f}|{y:+.2f}|{z:+.2f}"


def _colour(kind: str) -> bytes:
    code = sum((index + 1) * ord(char) for index, char in enumerate(kind))
    return bytes((code * 37 % 200 + 55, code * 91 % 200 + 55, code * 53 % 200 + 55))


class Kitchen:
    def __init__(self) -> None:
        self.width = self.height = DEFAULT_SCREEN
        self.grid_size = DEFAULT_GRID_SIZE
        self.visibility_distance = DEFAULT_VISIBILITY_DISTANCE
        self.scene = KITCHENS[0]
        self.load(self.scene)

    # --- state ------------------------------------------------------------------------------
    def load(self, scene: str) -> None:
        self.scene = scene
        self.x, self.z = float(START_POSE["x"]), float(START_POSE["z"])
        self.rotation, self.horizon = START_POSE["rotation"], START_POSE["horizon"]
        self.held: dict | None = None
        missing = MISSING_TYPES.get(scene, ())
        self.objects = [
            {"type": kind, "x": x, "z": z, "y": y, "open": False, "parent": None, **flags}
            for kind, x, z, y, flags in LAYOUT
            if kind not in missing
        ]
        self._assign_ids()

    def _assign_ids(self) -> None:
        g = self.grid_size
        for obj in self.objects:
            obj["id"] = _object_id(obj["type"], obj["x"] * g, obj["y"], obj["z"] * g)

    def _find(self, object_id: str | None) -> dict | None:
        return next((obj for obj in self.objects if obj["id"] == object_id), None)

    def _receptacle(self, kind: str | None) -> dict | None:
        return next((obj for obj in self.objects if obj["type"] == kind), None)

    def _distance(self, obj: dict) -> float:
        return math.hypot(obj["x"] - self.x, obj["z"] - self.z) * self.grid_size

    def _bearing(self, obj: dict) -> float:
        """Degrees from the heading to the object, in (-180, 180]."""
        angle = math.degrees(math.atan2(obj["x"] - self.x, obj["z"] - self.z))
        return (angle - self.rotation + 180.0) % 360.0 - 180.0

    def _visible(self, obj: dict) -> bool:
        if obj is self.held:
            return False
        parent = self._find(obj["parent"])
        if parent is not None and parent.get("openable") and not parent["open"]:
            return False
        return (
            self._distance(obj) <= self.visibility_distance + 1e-9
            and abs(self._bearing(obj)) <= HALF_FIELD_OF_VIEW + 1e-9
        )

    def reachable(self) -> list[tuple[int, int]]:
        return [(x, z) for x in range(FLOOR_CELLS) for z in range(FLOOR_CELLS) if (x, z) not in ISLAND]

    # --- actions: each handler returns (success, errorMessage, actionReturn) -----------------
    def act(self, action: dict) -> tuple[bool, str, str, Any]:
        """(success, errorCode, errorMessage, actionReturn) of one action."""
        name = action.get("action")
        handler = getattr(self, f"_do_{name}", None)
        if handler is None:
            return False, "InvalidAction", f"Invalid action: {name}", None
        try:
            result = handler(action)
        except KeyError as err:
            return False, "MissingArguments", f"{name} is missing argument {err.args[0]}", None
        success, message, value = result
        return success, "", message, value

    def _do_GetScenesInBuild(self, action):
        return True, "", list(KITCHENS)

    def _do_Reset(self, action):
        scene = action["sceneName"]
        if scene not in KITCHENS:
            return False, f"scene {scene} is not in this build", None
        self.load(scene)
        return True, "", None

    def _do_Initialize(self, action):
        self.grid_size = float(action.get("gridSize", DEFAULT_GRID_SIZE))
        self.visibility_distance = float(action.get("visibilityDistance", DEFAULT_VISIBILITY_DISTANCE))
        self._assign_ids()
        return True, "", {"cameraNearPlane": 0.1, "cameraFarPlane": 20.0}

    def _do_ChangeResolution(self, action):
        self.width, self.height = int(action["x"]), int(action["y"])
        return True, "", None

    def _do_ChangeQuality(self, action):
        return True, "", None

    def _do_MoveAhead(self, action):
        step_x = round(math.sin(math.radians(self.rotation)))
        step_z = round(math.cos(math.radians(self.rotation)))
        target = (int(self.x) + step_x, int(self.z) + step_z)
        if target not in self.reachable():
            return False, f"MoveAhead blocked: cell {target} is not reachable", None
        self.x, self.z = float(target[0]), float(target[1])
        return True, "", None

    def _rotate(self, sign: int, action: dict):
        self.rotation = (self.rotation + sign * int(action.get("degrees", DEFAULT_ROTATE_DEGREES))) % 360
        return True, "", None

    def _do_RotateLeft(self, action):
        return self._rotate(-1, action)

    def _do_RotateRight(self, action):
        return self._rotate(1, action)

    def _look(self, sign: int, action: dict):
        horizon = self.horizon + sign * int(action.get("degrees", DEFAULT_LOOK_DEGREES))
        if not HORIZON_LIMITS[0] <= horizon <= HORIZON_LIMITS[1]:
            return False, f"horizon {horizon} is outside {HORIZON_LIMITS}", None
        self.horizon = horizon
        return True, "", None

    def _do_LookUp(self, action):
        return self._look(-1, action)

    def _do_LookDown(self, action):
        return self._look(1, action)

    def _target(self, action: dict) -> tuple[dict | None, str]:
        obj = self._find(action["objectId"])
        if obj is None:
            return None, f"objectId {action['objectId']} is not in the scene"
        if not self._visible(obj):
            return None, f"{obj['id']} is not visible"
        return obj, ""

    def _set_open(self, action: dict, opened: bool):
        obj, error = self._target(action)
        if obj is None:
            return False, error, None
        if not obj.get("openable"):
            return False, f"{obj['id']} is not openable", None
        if obj["open"] == opened:
            return False, f"{obj['id']} is already {'open' if opened else 'closed'}", None
        obj["open"] = opened
        return True, "", None

    def _do_OpenObject(self, action):
        return self._set_open(action, True)

    def _do_CloseObject(self, action):
        return self._set_open(action, False)

    def _do_PickupObject(self, action):
        obj, error = self._target(action)
        if obj is None:
            return False, error, None
        if self.held is not None:
            return False, "the agent's hand is already full", None
        if not obj.get("pickupable"):
            return False, f"{obj['id']} is not pickupable", None
        self.held, obj["parent"] = obj, None
        return True, "", None

    def _do_PutObject(self, action):
        receptacle, error = self._target(action)
        if receptacle is None:
            return False, error, None
        if self.held is None:
            return False, "nothing is in the agent's hand", None
        if not receptacle.get("receptacle"):
            return False, f"{receptacle['id']} is not a receptacle", None
        if receptacle.get("openable") and not receptacle["open"]:
            return False, f"{receptacle['id']} is closed", None
        held, self.held = self.held, None
        held.update(x=receptacle["x"], z=receptacle["z"], y=receptacle["y"], parent=receptacle["id"])
        return True, "", None

    def _do_GetReachablePositions(self, action):
        g = self.grid_size
        return True, "", [{"x": x * g, "y": AGENT_Y, "z": z * g} for x, z in self.reachable()]

    def _do_TeleportFull(self, action):
        cell = (round(action["x"] / self.grid_size), round(action["z"] / self.grid_size))
        rotation, horizon = action["rotation"]["y"], action["horizon"]
        if "standing" not in action:  # required by THOR 5 for the default agent
            raise KeyError("standing")
        on_grid = math.isclose(cell[0] * self.grid_size, action["x"], abs_tol=1e-3) and math.isclose(
            cell[1] * self.grid_size, action["z"], abs_tol=1e-3
        )
        if not on_grid or cell not in self.reachable():
            return False, f"position ({action['x']}, {action['z']}) is not reachable", None
        if rotation % 90 or not HORIZON_LIMITS[0] <= horizon <= HORIZON_LIMITS[1]:
            return False, f"rotation {rotation} / horizon {horizon} is not allowed", None
        self.x, self.z, self.rotation, self.horizon = (
            float(cell[0]),
            float(cell[1]),
            int(rotation) % 360,
            int(horizon),
        )
        return True, "", None

    def _do_InitialRandomSpawn(self, action):
        rng = random.Random(int(action.get("randomSeed", 0)))
        movable = [obj for obj in self.objects if obj.get("pickupable") and obj is not self.held]
        spots = rng.sample(SPAWN_SPOTS, len(movable))
        for obj, (x, z, y, parent_type) in zip(movable, spots):
            parent = self._receptacle(parent_type)
            obj.update(x=x, z=z, y=y, parent=None if parent is None else parent["id"])
        self._assign_ids()  # receptacles stay put, so only the moved objects get new ids
        return True, "", None

    # --- what the player sends back ----------------------------------------------------------
    def agent_metadata(
        self, action_name: str, success: bool, code: str, message: str, value: Any, sequence_id: int
    ) -> dict:
        g = self.grid_size
        objects = []
        for obj in self.objects:
            contents = [other["id"] for other in self.objects if other["parent"] == obj["id"]]
            objects.append(
                {
                    "objectId": obj["id"],
                    "objectType": obj["type"],
                    "name": obj["type"],
                    "position": {"x": obj["x"] * g, "y": obj["y"], "z": obj["z"] * g},
                    "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
                    "visible": self._visible(obj),
                    "isInteractable": self._visible(obj),
                    "distance": self._distance(obj),
                    "pickupable": bool(obj.get("pickupable")),
                    "isPickedUp": obj is self.held,
                    "openable": bool(obj.get("openable")),
                    "isOpen": obj["open"],
                    "receptacle": bool(obj.get("receptacle")),
                    "receptacleObjectIds": contents,
                    "parentReceptacles": [obj["parent"]] if obj["parent"] else None,
                }
            )
        held = [] if self.held is None else [{"objectId": self.held["id"], "objectType": self.held["type"]}]
        return {
            "sceneName": self.scene,
            "screenWidth": self.width,
            "screenHeight": self.height,
            "lastAction": action_name,
            "lastActionSuccess": success,
            "errorCode": code,
            "errorMessage": message,
            "actionReturn": value,
            "sequenceId": sequence_id,
            "agent": {
                "position": {"x": self.x * g, "y": AGENT_Y, "z": self.z * g},
                "rotation": {"x": 0.0, "y": float(self.rotation), "z": 0.0},
                "cameraHorizon": float(self.horizon),
                "isStanding": True,
            },
            "objects": objects,
            "inventoryObjects": held,
            "thirdPartyCameras": [],
            "colors": [],
            "depthFormat": "Meters",
        }

    def frame(self) -> bytes:
        """A synthetic view: wall and floor colours from the pose, a box per visible object
        (left-right by bearing, larger when nearer), the held object at the bottom."""
        width, height = self.width, self.height
        image = bytearray(width * height * 3)
        wall = bytes((40 + self.rotation // 2, 60 + 25 * int(self.x), 90 + 25 * int(self.z)))
        floor = bytes((110 + 20 * int(self.x), 100, 110 + 20 * int(self.z)))
        horizon_row = min(height, max(0, height // 2 - self.horizon * height // 180))

        def fill(left: int, top: int, right: int, bottom: int, colour: bytes) -> None:
            left, right = max(0, left), min(width, right)
            for row in range(max(0, top), min(height, bottom)):
                start = (row * width + left) * 3
                image[start : start + 3 * (right - left)] = colour * (right - left)

        fill(0, 0, width, horizon_row, wall)
        fill(0, horizon_row, width, height, floor)
        for obj in sorted(self.objects, key=self._distance, reverse=True):
            if self._visible(obj):
                size = max(2, int(width / (4 + 8 * self._distance(obj))))
                centre = int(width / 2 + self._bearing(obj) / HALF_FIELD_OF_VIEW * width / 2)
                colour = bytes(255 - c for c in _colour(obj["type"])) if obj["open"] else _colour(obj["type"])
                fill(centre - size, horizon_row - size, centre + size, horizon_row + size, colour)
        if self.held is not None:
            fill(width // 3, height - height // 6, 2 * width // 3, height, _colour(self.held["type"]))
        return bytes(image)


# --- the player's main loop ---------------------------------------------------------------------
def _read_exactly(pipe, size: int) -> bytes:
    data = b""
    while len(data) < size:
        part = pipe.read(size - len(data))
        if not part:
            return b""
        data += part
    return data


def _read_action(pipe) -> dict | None:
    """The next ACTION message, or None once python closed its end."""
    action = None
    while True:
        header = _read_exactly(pipe, HEADER.size)
        if not header:
            return None
        field, length = HEADER.unpack(header)
        if field == END_OF_MESSAGE:
            return action
        body = _read_exactly(pipe, length)
        if field != ACTION:
            raise ValueError(f"unexpected field type {field} from python")
        action = json.loads(body)


def _write_message(pipe, metadata: dict, image: bytes) -> None:
    body = pack(metadata)
    pipe.write(HEADER.pack(METADATA, len(body)) + body)
    pipe.write(HEADER.pack(RGB_IMAGE, len(image)) + image)
    pipe.write(HEADER.pack(END_OF_MESSAGE, 0))
    pipe.flush()


def _record(entry: dict) -> None:
    path = os.environ.get("AI2THOR_STANDIN_RECORD")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(entry) + "\n")


def _crash() -> None:
    mode = os.environ.get("AI2THOR_STANDIN_CRASH_MODE", "exit")
    if mode == "abort":
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the caller's folder
        os.abort()
    if mode == "hang":
        time.sleep(HANG_SECONDS)
    os._exit(CRASH_EXIT_STATUS)


def _screen_size(argv: list[str]) -> tuple[int, int]:
    sizes = {"-screen-width": DEFAULT_SCREEN, "-screen-height": DEFAULT_SCREEN}
    for flag in sizes:
        if flag in argv:
            sizes[flag] = int(argv[argv.index(flag) + 1])
    return sizes["-screen-width"], sizes["-screen-height"]


def main(argv: list[str]) -> int:
    if os.environ.get("AI2THOR_SERVER_TYPE") != "FIFO":
        print("stand-in player: only AI2THOR_SERVER_TYPE=FIFO is simulated", file=sys.stderr)
        return 2
    _record({"argv": argv, "DISPLAY": os.environ.get("DISPLAY")})
    kitchen = Kitchen()
    kitchen.width, kitchen.height = _screen_size(argv)
    crash_on = os.environ.get("AI2THOR_STANDIN_CRASH_ON")
    fail_on = os.environ.get("AI2THOR_STANDIN_FAIL_ON")
    with open(os.environ["AI2THOR_FIFO_SERVER_PIPE_PATH"], "wb") as to_python:
        _write_message(
            to_python,
            {
                "agents": [kitchen.agent_metadata("", True, "", "", None, 0)],
                "sequenceId": 0,
                "activeAgentId": 0,
                "thirdPartyCameras": [],
            },
            kitchen.frame(),
        )
        with open(os.environ["AI2THOR_FIFO_CLIENT_PIPE_PATH"], "rb") as from_python:
            while (action := _read_action(from_python)) is not None:
                _record(action)
                if action.get("action") == crash_on:
                    _crash()
                if action.get("action") == fail_on:
                    success, code, message, value = False, "", REFUSAL, None
                else:
                    success, code, message, value = kitchen.act(action)
                sequence_id = action.get("sequenceId", 0)
                agent = kitchen.agent_metadata(
                    action.get("action", ""), success, code, message, value, sequence_id
                )
                _write_message(
                    to_python,
                    {
                        "agents": [agent],
                        "sequenceId": sequence_id,
                        "activeAgentId": 0,
                        "thirdPartyCameras": [],
                    },
                    kitchen.frame(),
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
