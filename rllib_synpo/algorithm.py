"""`SynPo`: imitation on RLlib's new API stack (the paper's Algorithm 1).

Each `training_step`: every env runner plays the expert on its share of the seen pairs and
returns whole trajectories; they go into the trajectory replay; the learner takes
``updates_per_iteration`` steps on ``trajectories_per_update`` sampled trajectories each; the
new weights go back to the env runners.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import ENV_RUNNER_SAMPLING_TIMER, LEARNER_RESULTS, LEARNER_UPDATE_TIMER, TIMERS

from rllib_synpo.config import MODULE_ID, SynPoConfig, resolve_split
from rllib_synpo.learner import EXECUTED_ACTION, EXPERT_ACTION, TASK_LABELS
from rllib_synpo.replay import TrajectoryReplay
from rllib_synpo.trajectories import collect_trajectories

REPLAY_FILE = "synpo_replay.pkl"
META_FILE = "synpo_meta.json"  # split and gridworld settings, for evaluation without Ray


class SynPo(Algorithm):
    @classmethod
    def get_default_config(cls) -> SynPoConfig:
        return SynPoConfig()

    def setup(self, config) -> None:
        super().setup(config)
        gridworld = self.config.env_config.get("gridworld", {})
        self.frame_stack = int(gridworld.get("frame_stack", 4))
        self.frame_channels = 3 + int(bool(gridworld.get("agent_channel", False)))
        self.replay = TrajectoryReplay(self.config.replay_capacity, self.frame_stack, seed=self.config.seed)

    def _collect(self) -> list:
        episodes, channels = self.config.episodes_per_env_runner, self.frame_channels
        if self.env_runner_group.num_remote_env_runners() > 0:
            results = self.env_runner_group.foreach_env_runner(
                lambda runner: collect_trajectories(runner, episodes, channels), local_env_runner=False
            )
        else:
            results = [collect_trajectories(self.env_runner, episodes, channels)]
        return [t for result in results for t in result]

    def training_step(self) -> None:
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            trajectories = self._collect()
        self.replay.add(trajectories)
        steps = sum(len(t) for t in trajectories)
        self.metrics.log_value("num_trajectories_collected", len(trajectories), reduce="sum")
        self.metrics.log_value("num_env_steps_sampled_lifetime", steps, reduce="sum")
        self.metrics.log_value("replay_trajectories", len(self.replay), window=1)
        self.metrics.log_value("expert_success_rate", float(np.mean([t.reward[-1] > 1.0 for t in trajectories])) if trajectories else 0.0, window=1)
        if len(self.replay) < self.config.warmup_trajectories:
            return
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            for _ in range(self.config.updates_per_iteration):
                batch = self._train_batch(self.replay.sample(self.config.trajectories_per_update))
                results = self.learner_group.update(batch=batch)
                self.metrics.aggregate(results, key=LEARNER_RESULTS)
        self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)

    def evaluate(self, parallel_train_future=None) -> dict:
        """Greedy AvgSR, return and first-pick accuracy on seen and unseen pairs (batched,
        ``greedy_episodes_per_pair`` each); RLlib files it under ``evaluation/``."""
        from rllib_synpo.evaluate import flat_summary
        from rllib_synpo.evaluation import evaluate, torch_greedy_policy

        split = resolve_split(self.config.split)
        results = evaluate(
            torch_greedy_policy(self.get_module(MODULE_ID).net), split.all_pairs, self.config.greedy_episodes_per_pair,
            seed=self.config.seed or 0, env_kwargs=self.config.env_config.get("gridworld", {}),
        )
        return flat_summary(results, split)

    @staticmethod
    def _train_batch(sample: dict[str, np.ndarray]) -> MultiAgentBatch:
        columns = {
            Columns.OBS: {"obs": sample["obs"], "env_id": sample["env_id"], "task_id": sample["task_id"]},
            EXPERT_ACTION: sample["expert_action"],
            EXECUTED_ACTION: sample["action"],
            Columns.REWARDS: sample["reward"],
        }
        if "task_labels" in sample:
            columns[TASK_LABELS] = sample["task_labels"]
        return MultiAgentBatch({MODULE_ID: SampleBatch(columns)}, env_steps=len(sample["reward"]))

    # --- the replay is part of the checkpoint, so a resumed run loses nothing -------------
    def save_to_path(self, path=None, **kwargs):
        path = super().save_to_path(path, **kwargs)
        _atomic_pickle(Path(path) / REPLAY_FILE, self.replay.get_state())
        meta = {
            "module_id": MODULE_ID,
            "split": resolve_split(self.config.split).to_dict(),
            "gridworld": self.config.env_config.get("gridworld", {}),
        }
        _atomic_write(Path(path) / META_FILE, json.dumps(meta, indent=1))
        return path

    def restore_from_path(self, path, *args, **kwargs):
        super().restore_from_path(path, *args, **kwargs)
        replay_file = Path(path) / REPLAY_FILE
        if replay_file.exists() and hasattr(self, "replay"):
            with open(replay_file, "rb") as f:
                self.replay.set_state(pickle.load(f))


def _atomic_write(path: Path, data: bytes | str) -> None:
    """Writes to a temporary file in the same folder, then renames: never a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def _atomic_pickle(path: Path, obj) -> None:
    _atomic_write(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def register() -> None:
    """Makes ``run: SynPo`` and ``env: synpo_pairs`` known to Ray Tune (idempotent)."""
    from ray.tune.registry import register_env, register_trainable

    from rllib_synpo.pair_env import PAIRS_ENV_NAME, SynPoPairsEnv

    register_env(PAIRS_ENV_NAME, SynPoPairsEnv)
    register_trainable("SynPo", SynPo)


register()
