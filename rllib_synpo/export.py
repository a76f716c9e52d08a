"""A network trained without RLlib (`rllib_synpo.direct`, `benchmarks/learning_speed.py`) as a
SynPo algorithm checkpoint, so that every checkpoint consumer takes it: ``rllib evaluate``,
``rllib synpo adapt``, PPO fine-tuning (`rllib_synpo.ppo`) and ``RLModule.from_checkpoint``.

The checkpoint holds what those read: the RLModule under
``learner_group/learner/rl_module/synpo`` and the split/gridworld file (`META_FILE`). It is
not a resumable algorithm state (no optimizer or replay): resume the run that made it instead.
Written to a temporary folder beside ``path`` and renamed, so ``path`` is whole or absent.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.splits import Split
from torch import nn

from rllib_synpo.evaluate import MODULE_DIR


class ExportError(ValueError):
    """The network does not fit the module its model config describes, or ``path`` is taken."""


def export_checkpoint(net: nn.Module, model_config: dict, split: Split, gridworld: dict, path: str | Path) -> Path:
    """Writes ``net`` (built by `make_network` with ``model_config``'s sizes for the gridworld
    ``gridworld`` kwargs) and its training ``split`` as a checkpoint at ``path``."""
    # RLlib loads here, not on import: the Ray-free trainers import this module.
    from rllib_synpo.algorithm import META_FILE
    from rllib_synpo.config import MODULE_ID
    from rllib_synpo.rl_module import SynPoTorchRLModule, check_model_config

    path = Path(path).expanduser().resolve()
    if path.exists():
        raise ExportError(f"{path} exists; export to a new folder")
    env = BatchedGridWorld(1, **gridworld)
    if (env.grid_spec.num_envs, env.grid_spec.num_tasks) != (split.num_envs, split.num_tasks):
        raise ExportError(
            f"split {split.num_envs} x {split.num_tasks} does not match the gridworld's "
            f"{env.grid_spec.num_envs} environments x {env.grid_spec.num_tasks} tasks"
        )
    module = SynPoTorchRLModule(
        observation_space=env.single_observation_space, action_space=env.single_action_space, model_config=model_config
    )
    try:
        module.net.load_state_dict(net.state_dict())
    except RuntimeError as error:  # names the first mismatching tensors, in one line
        raise ExportError(f"the network does not match model_config {model_config}: {str(error).splitlines()[1].strip()}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        module.save_to_path(tmp / MODULE_DIR / MODULE_ID)
        meta = {
            "module_id": MODULE_ID, "split": split.to_dict(), "gridworld": gridworld,
            "model_config": check_model_config(model_config), "exported_from": "direct",
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1))
        tmp.rename(path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path
