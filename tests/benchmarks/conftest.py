"""A SynPo checkpoint of a freshly initialized module (written without Ray), and a tiny SynPo
experiment file."""

import pytest
import yaml

from tests.rllib.conftest import TINY_MODEL


@pytest.fixture
def module_checkpoint(tmp_path):
    """``module_checkpoint(**model_config)``: a checkpoint folder holding an untrained module of
    the gridworld (144/256 split, seed 0) and its metadata, as `SynPo.save_to_path` writes them."""

    def write(**model_config):
        import gymnasium as gym
        import torch
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec
        from synpo_envs.gridworld import BatchedGridWorld
        from synpo_envs.splits import random_split

        from rllib_synpo.checkpoint import MODULE_COMPONENT, write_meta
        from rllib_synpo.rl_module import SynPoTorchRLModule, check_model_config

        torch.manual_seed(0)
        env = BatchedGridWorld(1)
        model_config = {**TINY_MODEL, **model_config}
        module = RLModuleSpec(
            module_class=SynPoTorchRLModule,
            observation_space=env.single_observation_space,
            action_space=gym.spaces.Discrete(env.single_action_space.n),
            model_config=model_config,
        ).build()
        path = tmp_path / "checkpoint"
        module.save_to_path(path / MODULE_COMPONENT)
        write_meta(
            path, split=random_split().to_dict(), gridworld={}, model_config=check_model_config(model_config)
        )
        return path

    return write


@pytest.fixture
def tiny_experiment(tmp_path):
    """An experiment file with one tiny `SynPo` experiment (seconds per iteration)."""
    experiment = tmp_path / "tiny.yaml"
    config = {
        "seed": 1,
        "states_per_update": 16,
        "updates_per_iteration": 2,
        "warmup_trajectories": 4,
        "model_config": TINY_MODEL,
        "env_config": {"num_slots": 4, "gridworld": {"max_steps": 60}},
    }
    experiment.write_text(yaml.safe_dump({"tiny": {"run": "SynPo", "env": "synpo_pairs", "config": config}}))
    return experiment
