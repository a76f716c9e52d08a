"""A network trained without RLlib, exported as a SynPo checkpoint: the checkpoint readers
(`rllib evaluate`, adaptation) load the same weights; bad exports fail with one line."""

from pathlib import Path

import pytest
import torch

TINY = {"feature_dim": 16, "embedding_dim": 8, "network_kwargs": {"basis_dim": 8, "hidden_dim": 16, "normalize_embeddings": True}}


@pytest.fixture
def trained(tmp_path):
    from synpo_envs.gridworld import BatchedGridWorld
    from synpo_envs.splits import transfer_split

    from rllib_synpo.direct import DirectConfig, network_for
    from rllib_synpo.export import export_checkpoint

    torch.manual_seed(0)
    config = DirectConfig(env_kwargs={"window": 1}, **TINY)
    net = network_for(config, BatchedGridWorld(1, **config.env_kwargs).grid_spec)
    split = transfer_split(2)
    path = export_checkpoint(net, config.model_config(), split, config.env_kwargs, tmp_path / "exported")
    return net, config, split, path


def test_the_checkpoint_readers_load_the_exported_weights(trained):
    from synpo_envs.gridworld import BatchedGridWorld

    from rllib_synpo.adapt import AdaptConfig, prepare
    from rllib_synpo.evaluate import read_gridworld_checkpoint

    net, config, split, path = trained
    _, module, loaded_split, gridworld = read_gridworld_checkpoint(path)
    assert loaded_split.seen == split.seen and gridworld == config.env_kwargs
    for name, tensor in net.state_dict().items():
        assert torch.equal(module.net.state_dict()[name], tensor), name
    assert module.net.normalize_embeddings
    obs, _ = BatchedGridWorld(3, **gridworld).reset(seed=0)
    batch = {key: torch.as_tensor(value) for key, value in obs.items()}
    net.eval()
    module.net.eval()
    assert torch.equal(net(batch["obs"], batch["env_id"], batch["task_id"]).logits, module.net(batch["obs"], batch["env_id"], batch["task_id"]).logits)
    # The settings 2/3 route: envs 10-19 and tasks 10-19 of a P-trained export are new.
    adaptation = prepare(path, AdaptConfig(setting=3, iterations=1))
    assert adaptation.ids.envs == tuple(range(10, 20)) and adaptation.ids.tasks == tuple(range(10, 20))


def test_bad_exports_are_refused_in_one_line(trained, tmp_path):
    from synpo_envs.splits import Split

    from rllib_synpo.export import ExportError, export_checkpoint

    net, config, split, path = trained
    with pytest.raises(ExportError, match="exists; export to a new folder"):
        export_checkpoint(net, config.model_config(), split, config.env_kwargs, path)
    with pytest.raises(ExportError, match=r"does not match model_config .*'feature_dim': 32.*size mismatch"):
        export_checkpoint(net, {**config.model_config(), "feature_dim": 32}, split, config.env_kwargs, tmp_path / "other")
    with pytest.raises(ExportError, match="split 10 x 10 does not match the gridworld's 20 environments x 20 tasks"):
        export_checkpoint(net, config.model_config(), Split(10, 10, ((0, 0),)), config.env_kwargs, tmp_path / "other")
    assert not Path(tmp_path / "other").exists() and not list(tmp_path.glob(".other.*"))
