"""SynPo on the THOR kitchens: the paper's THOR state network, the planner expert, the pairs env,
the replay of feature rows and a smoke run of the `rllib` command.

Everything but the encoder runs over the stand-in player of tests/envs/thor: protocol and logic
checks only, never THOR results. Tests marked ``thor_build`` need a real THOR 5.0 player.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
from synpo_envs.thor import ThorKitchen
from synpo_envs.thor.constants import (
    NUM_ACTIONS,
    NUM_HELD_VALUES,
    NUM_TASKS,
    OPEN_CLOSE,
    PICK_PUT,
    TASK_NAMES,
)
from synpo_envs.thor.expert import NoPlanError, ThorExpert, next_stage

from rllib_synpo.checkpoint import load_pickle
from rllib_synpo.env.trajectory import Trajectory
from rllib_synpo.networks.thor_encoder import ThorStateEncoder
from rllib_synpo.replay import TrajectoryReplay
from tests.envs.thor.conftest import make_env, standin_executable, thor_home  # noqa: F401  (fixtures)
from tests.envs.thor.scenario import FRAME_PIXELS

pytestmark = pytest.mark.filterwarnings("ignore::synpo_envs.thor.TaskUnavailableWarning")
ROOT = Path(__file__).resolve().parents[2]
STANDIN_KITCHENS = ("FloorPlan1", "FloorPlan2", "FloorPlan3")  # full, no Microwave, no Bowl/Plate
MAX_STANDIN_PLAN = 20  # steps; the stand-in kitchen is 6 x 6 cells
SPAWN_SEEDS = 24  # randomized placements tried per stand-in check


class MeanColour:
    """A 3-d test featurizer (mean colour of the frame): the stand-in's views differ by pose."""

    feature_dim = 3

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        return (frames.mean(axis=(1, 2)) / 255.0).astype(np.float32)


def thor_space(frames: int = 4, feature_size: int = 2048, kitchens: int = 19) -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "features": gym.spaces.Box(-np.inf, np.inf, (frames, feature_size), np.float32),
            "held": gym.spaces.Discrete(NUM_HELD_VALUES),
            "env_id": gym.spaces.Discrete(kitchens),
            "task_id": gym.spaces.Discrete(NUM_TASKS),
        }
    )


def thor_batch(space: gym.spaces.Dict, n: int = 5) -> dict[str, torch.Tensor]:
    frames, size = space["features"].shape
    return {
        "features": torch.rand(n, frames, size),
        "held": torch.randint(0, space["held"].n, (n,)),
        "env_id": torch.randint(0, space["env_id"].n, (n,)),
        "task_id": torch.randint(0, space["task_id"].n, (n,)),
    }


# --- the THOR state network (no Ray) --------------------------------------------------------------
def test_thor_encoder_has_the_papers_sizes():
    encoder = ThorStateEncoder((4, 2048), num_held=NUM_HELD_VALUES)
    convs = [layer for layer in encoder.convs if isinstance(layer, torch.nn.Conv1d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (2048, 1024, (3,), (2,)),
        (1024, 1024, (3,), (2,)),
    ]
    assert encoder.held_embedding.embedding_dim == 32
    first, _, last = encoder.head
    assert (first.in_features, first.out_features, last.out_features) == (1056, 2048, 256)
    psi = encoder({"features": torch.rand(3, 4, 2048), "held": torch.tensor([0, 1, 7])})
    assert psi.shape == (3, 256)


@pytest.mark.parametrize("frames, size", [(4, 1280), (4, 8), (2, 16), (1, 3)])
def test_thor_encoder_sizes_follow_the_features(frames, size):
    encoder = ThorStateEncoder(
        (frames, size), feature_dim=16, num_held=NUM_HELD_VALUES, channels=8, held_dim=4, hidden_dim=32
    )
    assert encoder.head[0].in_features == 8 + 4  # the time convolutions end at length 1
    assert encoder(
        {"features": torch.rand(6, frames, size), "held": torch.zeros(6, dtype=torch.long)}
    ).shape == (6, 16)


def test_synpo_network_reads_thor_observations():
    from rllib_synpo.rl_module import network_from_spaces

    space = thor_space(feature_size=1280)
    net = network_from_spaces(
        space, gym.spaces.Discrete(NUM_ACTIONS), {"encoder": "thor", "feature_dim": 256}
    )
    batch = thor_batch(space)
    out = net({key: batch[key] for key in ("features", "held")}, batch["env_id"], batch["task_id"])
    assert out.logits.shape == (5, NUM_ACTIONS) and out.sa_features.shape == (5, NUM_ACTIONS, 128)
    assert net.encoder.held_embedding.num_embeddings == NUM_HELD_VALUES  # from the space


def test_encoder_and_observation_must_match():
    from rllib_synpo.rl_module import network_from_spaces

    with pytest.raises(
        ValueError, match=r"encoder 'compact' reads the observation entries \['obs'\].*use encoder 'thor'"
    ):
        network_from_spaces(thor_space(), gym.spaces.Discrete(NUM_ACTIONS), {})
    gridworld = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0, 255, (12, 16, 16), np.uint8),
            "env_id": gym.spaces.Discrete(2),
            "task_id": gym.spaces.Discrete(2),
        }
    )
    with pytest.raises(
        ValueError, match=r"encoder 'thor' reads the observation entries \['features', 'held'\]"
    ):
        network_from_spaces(gridworld, gym.spaces.Discrete(5), {"encoder": "thor"})
    with pytest.raises(ValueError, match="features and held"):
        network_from_spaces(
            gym.spaces.Dict({"features": thor_space()["features"]}),
            gym.spaces.Discrete(5),
            {"encoder": "thor"},
        )


# --- the replay keeps one feature row and the held id per step --------------------------------------
def test_replay_rebuilds_thor_feature_stacks():
    rng = np.random.default_rng(0)
    rows = rng.random((6, 1, 5), dtype=np.float32)
    held = np.array([0, 0, 3, 3, 3, 3])
    actions = np.arange(6, dtype=np.int8)
    trajectory = Trajectory(rows, 1, 4, actions, actions, np.zeros(6, np.float32), per_step={"held": held})
    stacks = trajectory.stacked_obs(4)
    assert stacks.shape == (6, 4, 5) and stacks.dtype == np.float32
    assert np.array_equal(stacks[0], np.concatenate([np.zeros((3, 5), np.float32), rows[0]]))
    assert np.array_equal(stacks[5], rows[2:6, 0]) and np.array_equal(
        trajectory.stacked_obs_at(5, 4), stacks[5]
    )
    replay = TrajectoryReplay(capacity=2, frame_stack=4, seed=0)
    replay.add([trajectory])
    batch = replay.sample(2)
    assert batch["obs"].shape == (12, 4, 5) and np.array_equal(batch["held"], np.tile(held, 2))
    states = replay.sample_states(7)
    assert states["obs"].shape == (7, 4, 5) and states["held"].shape == (7,)


# --- the planner expert -------------------------------------------------------------------------
def _play_expert(env: ThorKitchen, expert: ThorExpert, max_steps: int) -> tuple[bool, list[int], bool]:
    """(success, actions, every action succeeded) of one expert episode from the env's state."""
    actions, all_succeeded = [], True
    for _ in range(max_steps):
        action = expert.act(env.thor_metadata)
        _, _, terminated, truncated, info = env.step(action)
        expert.record(action, info["action_success"])
        actions.append(action)
        all_succeeded &= info["action_success"]
        if terminated or truncated:
            return info["success"], actions, all_succeeded
    return False, actions, all_succeeded


def test_expert_completes_every_available_task_of_the_standin_kitchens(make_env):  # noqa: F811
    env = make_env(kitchens=STANDIN_KITCHENS, featurizer=MeanColour())
    env.reset(seed=0)
    assert len(env.available_pairs) == 18 + 12 + 12
    expert = ThorExpert.for_env(env)
    for k, pair in enumerate(env.available_pairs):
        # The default placement from a random start: every task is posable from there.
        env.reset(seed=k, options={"pair": pair, "randomize_objects": False})
        expert.reset_for_env(env)
        success, actions, clean = _play_expert(env, expert, MAX_STANDIN_PLAN)
        where = f"{env.kitchen} {TASK_NAMES[pair[1]]}: {actions}"
        assert success and clean, where
        assert actions.count(PICK_PUT) == 2, where  # one pick-up, one put, nothing wasted
    opened_first = feasible = 0
    for seed in range(SPAWN_SEEDS):
        # Scattered objects: some start shut in the Fridge/Microwave, some cannot be singled out.
        env.reset(seed=100 + seed)
        expert.reset_for_env(env)
        try:
            expert.act(env.thor_metadata)
        except NoPlanError:  # e.g. an Apple between a Bowl and a Mug: never the nearest in view
            continue
        needs_opening = next_stage(env.thor_metadata, env.task_types).action == OPEN_CLOSE
        expert.reset_for_env(env)
        success, actions, clean = _play_expert(env, expert, MAX_STANDIN_PLAN)
        assert success and clean, f"{env.kitchen} {TASK_NAMES[env.pair[1]]}: {actions}"
        feasible += 1
        opened_first += needs_opening
    assert feasible >= SPAWN_SEEDS // 2 and opened_first >= 1


def test_expert_never_repeats_a_failed_move(make_env, monkeypatch):  # noqa: F811
    # Every MoveAhead fails: what a real build does where the reachable grid has an obstacle.
    monkeypatch.setenv("AI2THOR_STANDIN_FAIL_ON", "MoveAhead")
    env = make_env(featurizer=MeanColour())
    env.reset(seed=1, options={"pair": (0, TASK_NAMES.index("Lettuce->Sink")), "randomize_objects": False})
    expert = ThorExpert.for_env(env)
    expert.reset_for_env(env)
    tried = []
    with pytest.raises(NoPlanError):
        for _ in range(200):
            action = expert.act(env.thor_metadata)
            pose = env.thor_metadata["agent"]
            if action == 0:
                tried.append((pose["position"]["x"], pose["position"]["z"], round(pose["rotation"]["y"])))
            _, _, terminated, truncated, info = env.step(action)
            expert.record(action, info["action_success"])
            assert not (terminated or truncated)
    assert tried and len(tried) == len(set(tried))


def _metadata(agent_xz, objects, rotation=0.0, horizon=30.0):
    return {
        "agent": {
            "position": {"x": agent_xz[0], "y": 0.9, "z": agent_xz[1]},
            "rotation": {"y": rotation},
            "cameraHorizon": horizon,
        },
        "objects": objects,
        "inventoryObjects": [],
    }


def _obj(kind, xyz, **flags):
    x, y, z = xyz
    return {
        "objectId": f"{kind}|{x}|{z}",
        "objectType": kind,
        "position": {"x": x, "y": y, "z": z},
        "distance": 0.0,
        "visible": False,
        **flags,
    }


def test_expert_plans_from_metadata_alone():
    fridge = _obj("Fridge", (0.0, 0.9, 1.0), openable=True, isOpen=False, receptacle=True)
    apple = _obj("Apple", (0.0, 0.95, 1.0), pickupable=True, parentReceptacles=[fridge["objectId"]])
    stage = next_stage(_metadata((0, 0), [fridge, apple]), ("Apple", "Fridge"))
    assert stage.action == OPEN_CLOSE and stage.targets == {fridge["objectId"]}  # open first
    cabinet = _obj("Cabinet", (1.0, 0.5, 1.0), openable=True, isOpen=False, receptacle=True)
    shut_away = dict(apple, parentReceptacles=[cabinet["objectId"]])
    with pytest.raises(NoPlanError, match="cannot open"):
        next_stage(_metadata((0, 0), [fridge, cabinet, shut_away]), ("Apple", "Fridge"))
    # At a pose predicted to see the apple, THOR says it is not visible (occlusion): the expert
    # gives that pose up and heads for another instead of trying the pick-up there.
    free_apple = _obj("Apple", (0.0, 0.95, 0.5), pickupable=True)
    expert = ThorExpert()
    expert.reset([(x * 0.25, z * 0.25) for x in range(-2, 3) for z in range(-2, 1)], ("Apple", "Fridge"))
    metadata = _metadata((0.0, 0.0), [fridge, free_apple])
    assert expert._goal_poses(next_stage(metadata, expert.task_types), metadata)[expert._state(metadata)]
    assert expert.act(metadata) != PICK_PUT and len(expert._failed_poses) == 1


# --- the pairs env --------------------------------------------------------------------------------
def _pairs_env(standin_executable, **config):  # noqa: F811
    from rllib_synpo.env.thor_pair_env import ThorPairsEnv

    thor = {
        "kitchens": ["FloorPlan1", "FloorPlan2"],
        "featurizer": MeanColour(),
        "width": FRAME_PIXELS,
        "height": FRAME_PIXELS,
        "max_steps": 40,
        "local_executable_path": standin_executable,
    }
    return ThorPairsEnv({"num_slots": 2, "seed": 3, "thor": thor, **config})


def _run_episode(env) -> list[tuple]:
    obs, infos = env.reset()
    record = [("reset", {a: (o["env_id"], o["task_id"]) for a, o in obs.items()})]
    labels = {agent: info["expert_action"] for agent, info in infos.items()}
    stacks = {agent: [o["features"]] for agent, o in obs.items()}
    done = {}
    while True:
        obs, rewards, terms, truncs, infos = env.step({})
        for agent, info in infos.items():
            assert obs[agent] in env.observation_spaces[agent]
            stacks[agent].append(obs[agent]["features"])
            record.append((agent, labels[agent], info["executed_action"], rewards[agent]))
            labels[agent] = info["expert_action"]
            if terms[agent] or truncs[agent]:
                done[agent] = info
                assert info["expert_action"] == -1
            else:
                assert 0 <= info["expert_action"] < NUM_ACTIONS
        if terms["__all__"]:
            break
    # The replay's per-step record (the newest feature row) rebuilds the env's stacks.
    for _agent, seen in stacks.items():
        trajectory = Trajectory(
            np.stack(seen)[:, -1:], 0, 0, np.zeros(len(seen)), np.zeros(len(seen)), np.zeros(len(seen))
        )
        assert np.array_equal(trajectory.stacked_obs(env.kitchens[0].frame_stack), np.stack(seen))
    return record + [("done", {agent: info["success"] for agent, info in done.items()})]


def test_pairs_env_plays_the_expert_on_its_pairs(thor_home, standin_executable):  # noqa: F811
    pairs = [[0, 5], [0, 15], [1, 9], [1, 17]]
    env = _pairs_env(standin_executable, pairs=pairs)
    try:
        assert set(env.observation_spaces["slot_0"]) == {"features", "held", "env_id", "task_id"}
        for _ in range(2):
            record = _run_episode(env)
            steps = [r for r in record if len(r) == 4]
            assert all(label == executed for _, label, executed, _ in steps)  # no perturbation
            assert all(record[-1][1].values()) and len(record[-1][1]) == 2  # every slot succeeded
            assert {tuple(p) for p in record[0][1].values()} <= {tuple(p) for p in pairs}
    finally:
        env.close()


def test_pairs_env_perturbs_the_expert_reproducibly(thor_home, standin_executable):  # noqa: F811
    records = []
    for _ in range(2):
        env = _pairs_env(standin_executable, expert_epsilon=0.5)
        try:
            records.append([_run_episode(env) for _ in range(2)])
        finally:
            env.close()
    assert records[0] == records[1]
    steps = [r for episode in records[0] for r in episode if len(r) == 4]
    assert any(label != executed for _, label, executed, _ in steps)


def test_pairs_env_config_errors():
    from rllib_synpo.env.thor_pair_env import ThorPairsEnv

    with pytest.raises(ValueError, match=r"unknown ThorPairsEnv config key\(s\) \['gridworld'\]"):
        ThorPairsEnv({"gridworld": {}})
    with pytest.raises(ValueError, match="relabel .* is gridworld-only"):
        ThorPairsEnv({"relabel": True})


def test_synpo_config_checks_the_thor_setup():
    from rllib_synpo import SynPoConfig

    base = {
        "env": "synpo_thor_pairs",
        "split": {"thor": {"num_envs": 2, "num_seen": 8, "min_per_task": 0}},
        "env_config": {"thor": {"kitchens": ["FloorPlan1", "FloorPlan2"]}},
    }
    SynPoConfig().update_from_dict({**base, "_model_config": {"encoder": "thor"}}).validate()
    for extra, message in [
        ({"_model_config": {"encoder": "compact"}}, "THOR needs encoder 'thor'"),
        (
            {"_model_config": {"encoder": "thor"}, "split": {"thor": {"num_seen": 144}}},
            "covers 19 x 21 pairs, but synpo_thor_pairs has 2 kitchens",
        ),
        ({"_model_config": {"encoder": "thor"}, "relabel_seen_tasks": True}, "gridworld-only"),
        (
            {"_model_config": {"encoder": "thor"}, "split": {"thor": {"num_envs": True}}},
            "num_envs must be a positive integer, got True",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            SynPoConfig().update_from_dict({**base, **extra}).validate()


# --- the rllib command on the stand-in --------------------------------------------------------------
@pytest.mark.timeout(300)
def test_standin_tuned_example_trains_end_to_end(tmp_path, thor_home, standin_executable):  # noqa: F811
    from ray.rllib.core.rl_module.rl_module import RLModule

    storage = tmp_path / "results"
    environ = {**os.environ, "SYNPO_THOR_EXECUTABLE": standin_executable, "HOME": str(thor_home)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rllib_synpo.cli",
            "train",
            "file",
            str(ROOT / "tuned_examples" / "synpo_thor_standin.yaml"),
            "--stop",
            '{"training_iteration": 2}',
            "--storage-path",
            str(storage),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        env=environ,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    progress = pd.read_csv(next(storage.glob("synpo-thor-standin/*/progress.csv")))
    assert progress["training_iteration"].tolist() == [1, 2]
    assert progress["num_trajectories_collected"].tolist() == [2, 2]  # one episode of 2 slots
    assert np.isfinite(progress["learners/synpo/policy_loss"].iloc[-1])
    checkpoint = max(storage.glob("synpo-thor-standin/*/checkpoint_*"))
    meta = json.loads((checkpoint / "synpo_meta.json").read_text())
    assert meta["env"] == "synpo_thor_pairs" and meta["split"]["num_envs"] == 2
    replay = load_pickle(checkpoint / "synpo_replay.pkl")
    steps = replay["steps"]
    assert steps["frames"].dtype == np.float32 and steps["frames"].shape[1:] == (1, 8)
    assert replay["per_step_keys"] == ("held",) and steps["held"].shape == (len(steps["frames"]),)
    assert len(steps["frames"]) >= replay["lengths"].sum()
    module = RLModule.from_checkpoint(checkpoint / "learner_group" / "learner" / "rl_module" / "synpo")
    space = thor_space(feature_size=8, kitchens=2)
    out = module.forward_inference({"obs": thor_batch(space, n=3)})
    assert out["action_dist_inputs"].shape == (3, NUM_ACTIONS)


@pytest.mark.parametrize("name", ["synpo_thor.yaml", "synpo_thor_standin.yaml"])
def test_thor_tuned_examples_are_valid(name):
    from rllib_synpo.cli.experiments import load_experiments
    from rllib_synpo.env.splits import resolve_split

    ((spec),) = load_experiments(ROOT / "tuned_examples" / name).values()
    assert spec["run"] == "SynPo" and spec["env"] == "synpo_thor_pairs"
    split = resolve_split(spec["config"]["split"])
    kitchens = len(spec["config"]["env_config"]["thor"].get("kitchens", range(19)))
    seen = split.seen_mask()
    assert split.num_tasks == NUM_TASKS and not seen[:, :3].any()  # no Container task
    assert seen.any(axis=1).all() and (kitchens, len(split.seen)) in {(19, 144), (2, 8)}
    if kitchens == 19:
        assert seen[:, 3:].any(axis=0).all()  # every available task seen


# --- a real THOR build ----------------------------------------------------------------------------
@pytest.mark.thor_build
def test_expert_on_a_real_build():
    """The expert in two of the paper's kitchens on a real player: every episode it can plan
    from the start ends in success (closed loop), and most random episodes are plannable."""
    import ai2thor.build
    from synpo_envs.thor import (
        PAPER_KITCHENS,
        ThorBuildNotFoundError,
        ThorLaunchOptions,
    )
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
    env = ThorKitchen(kitchens=PAPER_KITCHENS[:2], featurizer=MeanColour(), **options)
    try:
        env.reset(seed=0)
        expert = ThorExpert.for_env(env)
        planned = successes = 0
        for seed in range(10):
            env.reset(seed=seed)
            expert.reset_for_env(env)
            try:
                expert.act(env.thor_metadata)
            except NoPlanError:
                continue
            expert.reset_for_env(env)
            planned += 1
            successes += _play_expert(env, expert, env.max_steps)[0]
        assert planned >= 5 and successes == planned
    finally:
        env.close()
