"""`SynPo`: imitation on RLlib's new API stack (the paper's Algorithm 1).

Each `training_step`: every env runner plays the expert on its share of the seen pairs and
returns whole trajectories; they go into the trajectory replay; the learner takes
``updates_per_iteration`` steps on ``trajectories_per_update`` sampled trajectories each. The
env runners' copy of the module never acts (their env plays the expert), so the new weights go
to them only where that copy is read (`get_module`, `evaluate`, a checkpoint).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.core.columns import Columns
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TIMERS,
)
from ray.tune.result import TIME_TOTAL_S

from rllib_synpo.checkpoint_files import META_FILE, MODULE_ID, REPLAY_FILE, atomic_pickle, load_pickle, write_meta
from rllib_synpo.config import TRAINING_SECONDS, SynPoConfig, resolve_split
from rllib_synpo.learner import EXECUTED_ACTION, EXPERT_ACTION, NEXT_ROW, TASK_LABELS
from rllib_synpo.losses import SF_TD_LOSS
from rllib_synpo.replay import TrajectoryReplay
from rllib_synpo.rl_module import check_model_config
from rllib_synpo.thor.pair_env import THOR_PAIRS_ENV_NAME, thor_frame_layout
from rllib_synpo.trajectories import FrameLayout, collect_trajectories

__all__ = ["META_FILE", "REPLAY_FILE", "SynPo", "learner_batch", "register"]
NUM_STATES_COLLECTED = "num_states_collected"
NUM_STATES_COLLECTED_LIFETIME = "num_states_collected_lifetime"


def learner_batch(sample: dict[str, np.ndarray], layout: FrameLayout | None = None) -> MultiAgentBatch:
    """The learner's batch of a replay sample (`TrajectoryReplay.sample`/`sample_states` keys):
    what `SynPo` trains on, and what adaptation and the benchmarks feed the same learner."""
    layout = layout or FrameLayout()  # the gridworld's
    obs = {layout.key: sample["obs"], **{key: sample[key] for key in layout.per_step}}
    columns = {
        Columns.OBS: {**obs, "env_id": sample["env_id"], "task_id": sample["task_id"]},
        EXPERT_ACTION: sample["expert_action"],
        EXECUTED_ACTION: sample["action"],
        Columns.REWARDS: sample["reward"],
    }
    if "task_labels" in sample:
        columns[TASK_LABELS] = sample["task_labels"]
    if "next_row" in sample:
        columns[NEXT_ROW] = sample["next_row"]
    return MultiAgentBatch({MODULE_ID: SampleBatch(columns)}, env_steps=len(sample["reward"]))


class SynPo(Algorithm):
    @classmethod
    def get_default_config(cls) -> SynPoConfig:
        return SynPoConfig()

    def setup(self, config) -> None:
        super().setup(config)
        self.layout = self._frame_layout()
        self.frame_stack = self.layout.frame_stack
        self.frame_channels = self.layout.channels
        self.replay = TrajectoryReplay(self.config.replay_capacity, self.frame_stack, seed=self.config.seed)
        # Networks trained on transitions (SF's TD term) also need each state's successor.
        self._with_successors = SF_TD_LOSS in self.get_module(MODULE_ID).net.LOSS_TERMS

    def _frame_layout(self) -> FrameLayout:
        """What the replay keeps per step: the gridworld's newest RGB(+agent) frame, or THOR's
        newest feature row and held object."""
        if self.config.env == THOR_PAIRS_ENV_NAME:
            return thor_frame_layout(self.config.env_config)
        gridworld = self.config.env_config.get("gridworld", {})
        channels = 3 + int(bool(gridworld.get("agent_channel", False)))
        return FrameLayout(key="obs", channels=channels, frame_stack=int(gridworld.get("frame_stack", 4)))

    def _collect(self) -> list:
        episodes, layout = self.config.episodes_per_env_runner, self.layout

        def collect(runner) -> tuple:
            # get_metrics() also releases the episodes the runner keeps for its metrics (without
            # it they pile up: ~4 MB an iteration at 32 pair slots).
            sample = getattr(runner, "sample_trajectories", None)  # ExpertEnvRunner's array path
            trajectories = sample(episodes, layout) if sample else collect_trajectories(runner, episodes, layout)
            return trajectories, runner.get_metrics()

        if self.env_runner_group.num_remote_env_runners() > 0:
            results = self.env_runner_group.foreach_env_runner(collect, local_env_runner=False)
        else:
            results = [collect(self.env_runner)]
        self.metrics.aggregate([metrics for _, metrics in results], key=ENV_RUNNER_RESULTS)
        return [t for trajectories, _ in results for t in trajectories]

    def training_step(self) -> None:
        self._step_started = time.time()
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            trajectories = self._collect()
        self.replay.add(trajectories)
        steps = sum(len(t) for t in trajectories)
        self.metrics.log_value("num_trajectories_collected", len(trajectories), reduce="sum")
        # States (agent steps) collected; env_runners/ reports RLlib's env steps, one per step of
        # all pair slots together. The lifetime count is the replay's, restored with it, so a
        # resumed run's `stop: {num_states_collected_lifetime: ...}` counts from the start.
        self.metrics.log_value(NUM_STATES_COLLECTED, steps, reduce="sum")
        self.metrics.log_value(NUM_STATES_COLLECTED_LIFETIME, self.replay.steps_added, window=1)
        self.metrics.log_value("replay_trajectories", len(self.replay), window=1)
        self.metrics.log_value("expert_success_rate", float(np.mean([t.reward[-1] > 1.0 for t in trajectories])) if trajectories else 0.0, window=1)
        if len(self.replay) < self.config.warmup_trajectories:
            return
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            self._update_learner()
        self._env_runner_weights_stale = True

    def _update_learner(self) -> None:
        """``updates_per_iteration`` learner updates. Batches of independent states are drawn
        at once and cut into the updates' minibatches by the learner (one call: RLlib's per-call
        work, such as reducing its metrics, is paid once an iteration); whole trajectories, and
        states with their successors (rows that point at other rows), one update a call."""
        updates, size = self.config.updates_per_iteration, self.config.states_per_update
        if size is not None and not self._with_successors:
            batch = learner_batch(self.replay.sample_states(updates * size), self.layout)
            results = self.learner_group.update(
                batch=batch, timesteps=self._schedule_timesteps(), minibatch_size=size, num_epochs=1
            )
            self.metrics.aggregate(results, key=LEARNER_RESULTS)
            return
        for _ in range(updates):
            batch = learner_batch(self._sample(), self.layout)
            results = self.learner_group.update(batch=batch, timesteps=self._schedule_timesteps())
            self.metrics.aggregate(results, key=LEARNER_RESULTS)

    def _schedule_timesteps(self) -> dict[str, float]:
        """The schedule clock under the key RLlib's learners read for schedules."""
        return {NUM_ENV_STEPS_SAMPLED_LIFETIME: self._schedule_clock()}

    def _sync_env_runner_weights(self) -> None:
        """The learner's weights to the env runners, if they changed since the last sync."""
        if getattr(self, "_env_runner_weights_stale", False):
            self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)
            self._env_runner_weights_stale = False

    def get_module(self, *args, **kwargs):
        self._sync_env_runner_weights()
        return super().get_module(*args, **kwargs)

    def _schedule_clock(self) -> float:
        """Where learning-rate schedules (``lr=[[x, a], [y, b]]``) stand: the states collected so
        far (restored with the replay), or with ``lr_schedule_clock: training_seconds`` the
        seconds ``time_total_s`` counts, up to now."""
        if self.config.lr_schedule_clock == TRAINING_SECONDS:
            return self._time_total + time.time() - self._step_started
        return self.replay.steps_added

    def _sample(self) -> dict[str, np.ndarray]:
        if self.config.states_per_update is not None:
            return self.replay.sample_states(self.config.states_per_update, successors=self._with_successors)
        return self.replay.sample(self.config.trajectories_per_update)

    def evaluate(self, parallel_train_future=None) -> dict:
        """Greedy AvgSR, return and first-pick accuracy on seen and unseen pairs (batched,
        ``greedy_episodes_per_pair`` each); RLlib files it under ``evaluation/``."""
        from rllib_synpo.evaluate import greedy_summary

        return greedy_summary(
            self.get_module(MODULE_ID).net, resolve_split(self.config.split), self.config.greedy_episodes_per_pair,
            seed=self.config.seed or 0, gridworld=self.config.env_config.get("gridworld", {}),
        )

    # --- the replay is part of the checkpoint, so a resumed run loses nothing -------------
    def get_state(self, *args, **kwargs) -> dict:
        self._sync_env_runner_weights()  # the env runners' module is part of the state
        # The training seconds (Tune restores them from its own records; a checkpoint restored
        # without Tune needs them too where they drive the learning rate).
        return {**super().get_state(*args, **kwargs), TIME_TOTAL_S: self._time_total}

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        if TIME_TOTAL_S in state:
            self._time_total = state[TIME_TOTAL_S]

    def save_to_path(self, path=None, **kwargs):
        path = super().save_to_path(path, **kwargs)
        atomic_pickle(Path(path) / REPLAY_FILE, self.replay.get_state())
        thor = {}
        if self.config.env == THOR_PAIRS_ENV_NAME:
            thor = {"env": THOR_PAIRS_ENV_NAME, "thor": _json_safe(self.config.env_config.get("thor", {}))}
        write_meta(
            path, split=resolve_split(self.config.split).to_dict(), gridworld=self.config.env_config.get("gridworld", {}),
            model_config=check_model_config(self.config.model_config), **thor,
        )
        return path

    def restore_from_path(self, path, *args, **kwargs):
        super().restore_from_path(path, *args, **kwargs)
        replay_file = Path(path) / REPLAY_FILE
        if replay_file.exists() and hasattr(self, "replay"):
            self.replay.set_state(load_pickle(replay_file))


def _json_safe(options: dict) -> dict:
    """THOR options as JSON (a featurizer object is recorded by its class name)."""
    return {key: value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else type(value).__name__ for key, value in options.items()}


def register() -> None:
    """Makes ``run: SynPo``, ``run: SynPoPPO``, ``env: synpo_pairs`` and ``env:
    synpo_thor_pairs`` known to Ray Tune (idempotent)."""
    from ray.tune.registry import register_env, register_trainable

    from rllib_synpo.pair_env import PAIRS_ENV_NAME, SynPoPairsEnv
    from rllib_synpo.ppo import SynPoPPO
    from rllib_synpo.thor.pair_env import ThorPairsEnv

    register_env(PAIRS_ENV_NAME, SynPoPairsEnv)
    register_env(THOR_PAIRS_ENV_NAME, ThorPairsEnv)
    register_trainable("SynPo", SynPo)
    register_trainable("SynPoPPO", SynPoPPO)


register()
