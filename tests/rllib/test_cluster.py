"""A real multi-node Ray cluster on one machine (head + 2 worker nodes): env runners forced onto
the worker nodes by a custom resource, an env runner killed mid-training, a 2-trial sweep
through ``rllib train file --address``, a study file's trials spread over the nodes and
reported, and a trial with two data-parallel learners and two env runners.

The module needs its own Ray: its fixture shuts the session's local Ray down first and starts
it again afterwards (with conftest's `ray_session` settings) for the modules that follow.
"""

import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from tests.rllib.conftest import TINY_MODEL, tiny_config

WORKER = "synpo_worker_node"  # a custom resource that only the worker nodes have
SESSION_RAY = {
    "address": "local",
    "num_cpus": 3,
    "include_dashboard": False,
    "object_store_memory": 150 * 1024**2,
    "log_to_driver": False,
}
NODE_MEMORY = {"object_store_memory": 100 * 1024**2, "include_dashboard": False}


@pytest.fixture(scope="module")
def cluster():
    import ray
    from ray.cluster_utils import Cluster

    from rllib_synpo import register

    session_was_up = ray.is_initialized()
    ray.shutdown()
    # The nodes' worker processes import this repository's tests (the study's node recorder).
    root = str(Path(__file__).resolve().parents[2])
    pythonpath = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, pythonpath]))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, **NODE_MEMORY})
    workers = [cluster.add_node(num_cpus=1, resources={WORKER: 1}, **NODE_MEMORY) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    register()  # ray.shutdown() empties Tune's registry of envs and algorithms
    try:
        yield cluster, {node.node_id for node in workers}
    finally:
        ray.shutdown()
        cluster.shutdown()
        if pythonpath is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = pythonpath
        torch.set_num_threads(threads)
        if session_was_up:
            ray.init(**SESSION_RAY)
        register()


def _runner_facts(algo) -> list[tuple[int, str]]:
    import ray

    return algo.env_runner_group.foreach_env_runner(
        lambda runner: (os.getpid(), ray.get_runtime_context().get_node_id()), local_env_runner=False
    )


def test_env_runners_run_on_the_worker_nodes_and_survive_a_kill(cluster):
    _, worker_nodes = cluster
    config = tiny_config().env_runners(num_env_runners=2, custom_resources_per_env_runner={WORKER: 1})
    algo = config.fault_tolerance(restart_failed_env_runners=True).build_algo()
    try:
        facts = _runner_facts(algo)
        assert {node for _, node in facts} == worker_nodes  # one runner on each worker node
        algo.train()
        before = [
            (t.env_id, t.task_id, t.frames.copy(), t.expert_action.copy()) for t in algo.replay.trajectories()
        ]
        assert len(before) == 2 * 4  # 2 runners x 1 episode x 4 pair slots

        os.kill(facts[0][0], signal.SIGKILL)
        sizes = []
        deadline = time.time() + 240
        while time.time() < deadline:
            result = algo.train()
            sizes.append(len(algo.replay))
            if (
                algo.env_runner_group.num_healthy_remote_workers() == 2
                and len(sizes) >= 2
                and sizes[-1] - sizes[-2] == 8
            ):
                break  # restarted, and both runners collect again
        assert np.isfinite(result["learners"]["synpo"]["policy_loss"])
        assert sizes[-1] - sizes[-2] == 8, f"replay sizes after the kill: {sizes}"
        assert all(b > a for a, b in zip([len(before), *sizes], sizes)), sizes  # every iteration collected
        for (env_id, task_id, frames, expert), item in zip(before, algo.replay.trajectories()):  # intact
            assert (item.env_id, item.task_id) == (env_id, task_id)
            assert np.array_equal(item.frames, frames) and np.array_equal(item.expert_action, expert)
        facts_after = _runner_facts(algo)
        assert facts[0][0] not in {pid for pid, _ in facts_after}
        assert {node for _, node in facts_after} == worker_nodes
    finally:
        algo.stop()


def test_a_two_trial_sweep_from_the_tuned_example(cluster, tmp_path):
    import ray

    from rllib_synpo import register
    from rllib_synpo.cli import main

    head, _ = cluster
    shipped = Path(__file__).resolve().parents[2] / "tuned_examples" / "synpo_gridworld_sweep.yaml"
    experiments = yaml.safe_load(shipped.read_text())
    ((name, spec),) = experiments.items()
    assert spec["config"]["l2"] == {"grid_search": [0.01, 0.1]} and spec["config"]["seed"] == {
        "grid_search": [0, 1]
    }
    spec["stop"] = {"training_iteration": 2}
    spec["config"].update(
        seed=0,
        l3=0.001,
        trajectories_per_update=4,
        updates_per_iteration=1,
        warmup_trajectories=4,
        model_config=TINY_MODEL,
        evaluation_interval=None,
        custom_resources_per_env_runner={WORKER: 1},
        env_config={"num_slots": 4, "gridworld": {"max_steps": 60}},
    )
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(experiments))
    ray.shutdown()  # the cli connects by itself
    register()  # as in the fixture; a fresh `rllib` process registers on import
    storage = tmp_path / "sweeps"
    assert main(["train", "file", str(path), "--address", head.address, "--storage-path", str(storage)]) == 0
    trials = sorted((storage / name).glob("SynPo_*"))
    assert len(trials) == 2
    l2_values = set()
    for trial in trials:
        progress = pd.read_csv(trial / "progress.csv")
        assert progress["training_iteration"].max() == 2
        assert list(trial.glob("checkpoint_*/synpo_meta.json"))
        l2_values.add(yaml.safe_load((trial / "params.json").read_text())["l2"])
    assert l2_values == {0.01, 0.1}


def _tiny_study(tmp_path: Path, networks: list[str], seeds: list[int], iterations: int) -> Path:
    """The shipped Table 1 study file, cut to ``networks`` x ``seeds`` tiny trials."""
    shipped = Path(__file__).resolve().parents[2] / "tuned_examples" / "studies" / "table1.yaml"
    experiments = yaml.safe_load(shipped.read_text())
    spec = experiments["table1"]
    grid = {entry["network"]: entry for entry in spec["config"]["model_config"]["grid_search"]}
    assert sorted(grid) == ["mlp", "modulenet", "mtl", "sf", "sf_env", "synpo"]
    spec["stop"] = {"training_iteration": iterations}
    spec["checkpoint_config"] = {"checkpoint_frequency": iterations, "checkpoint_at_end": True}
    spec["config"].update(
        seed={"grid_search": seeds},
        lr=1e-3,
        lr_schedule_clock="states_collected",
        states_per_update=16,
        updates_per_iteration=1,
        episodes_per_env_runner=1,
        warmup_trajectories=4,
        evaluation_interval=None,
        model_config={"grid_search": [{**TINY_MODEL, "network": network} for network in networks]},
        env_config={"num_slots": 4, "gridworld": {"max_steps": 60}},
        callbacks="tests.rllib.node_recorder.NodeRecorder",
    )
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(experiments))
    return path


def test_a_study_spreads_its_trials_over_the_nodes_and_reports(cluster, tmp_path):
    import ray

    from rllib_synpo import register
    from rllib_synpo.cli import main
    from tests.rllib.node_recorder import NODE_ID

    head, worker_nodes = cluster
    study = _tiny_study(tmp_path, ["mlp", "synpo"], [0, 1], iterations=3)
    ray.shutdown()  # the cli connects by itself
    register()
    storage = tmp_path / "studies"
    assert main(["train", "file", str(study), "--address", head.address, "--storage-path", str(storage)]) == 0
    trials = sorted((storage / "table1").glob("SynPo_*"))
    assert len(trials) == 4
    nodes, grid = set(), set()
    for trial in trials:
        progress = pd.read_csv(trial / "progress.csv")
        assert progress["training_iteration"].max() == 3
        nodes |= set(progress[NODE_ID])
        params = yaml.safe_load((trial / "params.json").read_text())
        grid.add((params["_model_config"]["network"], params["seed"]))
    assert grid == {("mlp", 0), ("mlp", 1), ("synpo", 0), ("synpo", 1)}
    assert len(nodes) >= 2 and nodes & worker_nodes, f"trials ran on {nodes}; worker nodes {worker_nodes}"

    assert main(["evaluate", str(storage / "table1"), "--episodes-per-pair", "1"]) == 0
    assert all((trial / "evaluation" / "summary.json").is_file() for trial in trials)
    out = tmp_path / "report"
    assert main(["report", str(storage / "table1"), "--out", str(out)]) == 0
    table = pd.read_csv(out / "report.csv")
    assert sorted(table["group"]) == ["network=mlp", "network=synpo"]
    assert table["trials"].tolist() == [2, 2]
    for trial in trials:  # each group's mean is its two trials' mean
        assert (trial / "evaluation" / "success_matrix.csv").is_file()
    assert (out / "report.md").read_text().count("| network=") == 2


def test_two_learners_and_two_env_runners_train_one_module(cluster, tmp_path):
    """RLlib's data-parallel learners (torch DDP on CPU here) with env runners on the worker
    nodes: the loss falls and the checkpoint loads on its own."""
    from rllib_synpo.checkpoint import load_checkpoint

    _, worker_nodes = cluster
    config = (
        tiny_config(states_per_update=128, updates_per_iteration=16, warmup_trajectories=8)
        .training(lr=3e-3)
        .learners(num_learners=2)
        .env_runners(num_env_runners=2, custom_resources_per_env_runner={WORKER: 1})
    )
    algo = config.build_algo()
    try:
        assert {node for _, node in _runner_facts(algo)} == worker_nodes
        losses = [algo.train()["learners"]["synpo"]["policy_loss"] for _ in range(12)]
        path = algo.save_to_path(tmp_path / "checkpoint")
    finally:
        algo.stop()
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.05, losses
    net, split, _ = load_checkpoint(path)
    assert split.num_envs == 20 and sum(p.numel() for p in net.parameters()) > 0
