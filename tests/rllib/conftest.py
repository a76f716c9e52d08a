"""One local Ray for the in-process RLlib tests (start-ups cost seconds each), and the `rllib`
command run in-process."""

import subprocess
from collections.abc import Callable

import pytest

TINY_MODEL = {
    "encoder": "compact",
    "feature_dim": 16,
    "embedding_dim": 8,
    "basis_dim": 8,
    "hidden_dim": 16,
    "encoder_kwargs": {"width": 4},
}


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small batches on a busy 2-core machine: one torch thread is ~5x faster than two."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def algorithm_logs_in_a_temporary_folder(tmp_path_factory):
    """An algorithm built outside Tune (``config.build_algo()``) makes a folder for its logs under
    ~/ray_results; the tests' go to a temporary folder, not into the user's home."""
    from ray.tune.trainable import trainable

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainable, "DEFAULT_STORAGE_PATH", str(tmp_path_factory.mktemp("ray_results")))
        yield


@pytest.fixture(scope="session")
def ray_session():
    import ray

    ray.init(
        address="local",
        num_cpus=3,
        include_dashboard=False,
        object_store_memory=150 * 1024**2,
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()


def tiny_config(**training):
    from rllib_synpo import SynPoConfig

    config = SynPoConfig().rl_module(model_config=dict(TINY_MODEL))
    config.training(**{"trajectories_per_update": 4, "warmup_trajectories": 4, **training})
    return config.environment(env_config={"num_slots": 4, "gridworld": {"max_steps": 60}}).debugging(seed=3)


@pytest.fixture
def rllib_here(capfd, monkeypatch) -> Callable[..., subprocess.CompletedProcess]:
    """The ``rllib`` command's `main` run in this process, as a subprocess run reports it: its
    exit status and what it wrote to stdout and stderr. Tune and RLlib load once for every
    caller, instead of seconds per command; ``RAY_ADDRESS`` is unset, as a local run has it."""
    from rllib_synpo.cli.main import main

    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def run(*args: str) -> subprocess.CompletedProcess:
        capfd.readouterr()
        status = main(list(args))
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(list(args), status, out, err)

    return run
