"""`SynPoConfig` and `SynPo`: imitation on RLlib's new API stack (the paper's Algorithm 1).

Each `training_step`: every env runner plays the expert on its share of the seen pairs and
returns whole trajectories; they go into the trajectory replay; the learner takes
``updates_per_iteration`` steps on ``trajectories_per_update`` sampled trajectories each. The
env runners' copy of the module never acts (their env plays the expert), so the new weights go
to them only where that copy is read (`get_module`, `evaluate`, a checkpoint).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
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
from synpo_envs.splits import Split
from synpo_envs.thor.constants import NUM_TASKS as NUM_THOR_TASKS

from rllib_synpo.algorithms.last_evaluation import CarriesLastEvaluation
from rllib_synpo.checkpoint import MODULE_ID, REPLAY_FILE, atomic_pickle, load_pickle, write_meta
from rllib_synpo.columns import EXECUTED_ACTION, EXPERT_ACTION, NEXT_ROW, TASK_LABELS
from rllib_synpo.env.expert_env_runner import ExpertEnvRunner, expert_env_to_module, policy_mapping_fn
from rllib_synpo.env.pair_env import ENV_CONFIG_KEYS, PAIRS_ENV_NAME, slot_count
from rllib_synpo.env.registration import register_envs
from rllib_synpo.env.splits import resolve_split
from rllib_synpo.env.thor_pair_env import (
    THOR_ENV_CONFIG_KEYS,
    THOR_PAIRS_ENV_NAME,
    num_kitchens,
    thor_frame_layout,
)
from rllib_synpo.env.trajectory import FrameLayout, collect_trajectories
from rllib_synpo.losses import SF_TD_LOSS, LossWeights
from rllib_synpo.networks import ENCODERS
from rllib_synpo.replay import TrajectoryReplay
from rllib_synpo.rl_module import (
    DEFAULT_MODEL_CONFIG,
    THOR_STATE_KEYS,
    SynPoTorchRLModule,
    check_model_config,
)
from rllib_synpo.utils.checks import (
    LEARNING_RATE,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    PROBABILITY,
    bad_setting,
    one_of,
    optional,
)
from rllib_synpo.utils.console import quiet_rllib_notices
from rllib_synpo.utils.denormals import flush_denormals_where_wanted
from rllib_synpo.utils.precision import PRECISION

__all__ = ["SynPo", "SynPoConfig", "learner_batch"]
# What the x of a learning-rate schedule ``lr=[[x, value], ...]`` counts: states collected (RLlib's
# env steps sampled, the default) or the seconds `stop: {time_total_s: ...}` counts.
STATES_COLLECTED = "states_collected"
TRAINING_SECONDS = "training_seconds"
SCHEDULE_CLOCKS = (STATES_COLLECTED, TRAINING_SECONDS)


class SynPoConfig(AlgorithmConfig):
    """SynPo imitation: expert trajectories from env runners into a trajectory replay, learner
    updates on sampled trajectories with the four SynPo loss terms.

    .. code-block:: python

        from rllib_synpo import SynPoConfig
        algo = SynPoConfig().training(l3=0.1).env_runners(num_env_runners=2).build_algo()
        algo.train()
    """

    def __init__(self, algo_class=None) -> None:
        super().__init__(algo_class=algo_class or SynPo)
        paper = LossWeights()
        self.l1, self.l2, self.l3 = paper.l1, paper.l2, paper.l3
        self.replay_capacity = 20_000
        self.trajectories_per_update = 64
        self.states_per_update: int | None = None
        self.updates_per_iteration = 1
        self.episodes_per_env_runner = 1
        self.warmup_trajectories = 64
        self.expert_epsilon = 0.0
        self.relabel_seen_tasks = False
        self.greedy_episodes_per_pair = 2
        self.split: Any = None
        self.lr = 1e-3
        self.lr_schedule_clock = STATES_COLLECTED
        self.weight_decay = 0.0
        self.precision = "float32"
        self.environment(env=PAIRS_ENV_NAME, env_config={})
        self.multi_agent(policies={MODULE_ID}, policy_mapping_fn=policy_mapping_fn)
        self.rl_module(model_config=dict(DEFAULT_MODEL_CONFIG))
        # Episodes end when every slot is done; sample whole episodes.
        self.env_runners(
            batch_mode="complete_episodes",
            num_env_runners=0,
            env_to_module_connector=expert_env_to_module,
            add_default_connectors_to_env_to_module_pipeline=False,
            env_runner_cls=ExpertEnvRunner,
        )
        self.evaluation(evaluation_interval=None)
        # With several learners (RLlib's data-parallel `num_learners`), torch's DDP must allow
        # parameters that a loss leaves unused: the value head (PPO's) and, for some networks,
        # a disentanglement head.
        self.framework(torch_ddp_kwargs={"find_unused_parameters": True})

    def training(
        self,
        *,
        l1: float | None = NotProvided,
        l2: float | None = NotProvided,
        l3: float | None = NotProvided,
        replay_capacity: int | None = NotProvided,
        trajectories_per_update: int | None = NotProvided,
        states_per_update: int | None = NotProvided,
        updates_per_iteration: int | None = NotProvided,
        episodes_per_env_runner: int | None = NotProvided,
        warmup_trajectories: int | None = NotProvided,
        expert_epsilon: float | None = NotProvided,
        relabel_seen_tasks: bool | None = NotProvided,
        greedy_episodes_per_pair: int | None = NotProvided,
        encoder: str | None = NotProvided,
        embedding_dim: int | None = NotProvided,
        split: Any = NotProvided,
        weight_decay: float | None = NotProvided,
        precision: str | None = NotProvided,
        lr_schedule_clock: str | None = NotProvided,
        **kwargs,
    ) -> SynPoConfig:
        """Sets SynPo's training knobs.

        Args:
            l1: Weight of the reward-prediction loss (paper: 0.01).
            l2: Weight of the environment disentanglement loss (paper: 0.1).
            l3: Weight of the task disentanglement loss (paper: 0.001; the released code 0.1).
            replay_capacity: Trajectories kept in the replay (paper: 20,000).
            trajectories_per_update: Trajectories sampled for one learner update (paper: 64).
            states_per_update: If set, each learner update draws this many single states
                uniformly over every stored step instead of ``trajectories_per_update`` whole
                trajectories: independent states learn faster per state than ~35 correlated
                steps of one episode (results/learning_efficiency.md). None: the paper's
                trajectory batches.
            updates_per_iteration: Learner updates per `train()` iteration.
            episodes_per_env_runner: Multi-agent episodes (one trajectory per pair slot each)
                every env runner collects per iteration.
            warmup_trajectories: Trajectories in the replay before updates start.
            expert_epsilon: Probability that the expert executes a random action instead (the
                paper's "random perturbations"; the label stays the optimal action).
            relabel_seen_tasks: Also train the policy, at every stored state, on the expert's
                action for every other seen task of the state's environment (an expert query
                like DAgger's; not in the paper, which trains on each trajectory's own task).
                Without it the policy learns shortcuts that ignore the task (see
                results/learning_efficiency.md).
            greedy_episodes_per_pair: Greedy episodes per pair (all 400) in each periodic
                evaluation (``evaluation_interval``); results land under ``evaluation/``.
            encoder: State encoder of the module, "compact" (CPU default), "dense" or
                "paper_resnet" for the gridworld; "thor" (the paper's THOR network) for THOR.
            embedding_dim: Size of the environment and task embeddings (paper: 128).
            split: Which pairs are seen in training: None (the 144/256 split, seed 0), a
                `Split`, a split JSON path, a split dict, ``{"random": {...}}``, ``{"ratio":
                {...}}`` or ``{"transfer": {...}}`` (`resolve_split`).
            weight_decay: Adam's (L2) weight decay on every parameter (paper: 1e-3; the
                authors' released code: 1e-4 with ``--wd``, else 0). Default 0.
            precision: "float32" (default), "bfloat16" or "auto": with "bfloat16" the
                learner's forward pass and losses run under ``torch.autocast`` in bfloat16
                (weights, gradients and Adam stay float32). On a CPU with native bfloat16
                (AVX512-BF16, AMX) an update takes about half the time; elsewhere bfloat16 is
                emulated and slower. "auto": bfloat16 where the learner's device computes it
                natively, else float32.
            lr_schedule_clock: What the x of a learning-rate schedule ``lr=[[x, value], ...]``
                counts: "states_collected" (default; RLlib's env steps sampled, restored with
                the replay) or "training_seconds" (the seconds ``stop: {time_total_s: ...}``
                counts, restored with the checkpoint), so a schedule over a time budget ends
                with it on a fast or a slow machine alike (a run's result then depends on the
                machine's speed, as a time-stopped run's does anyway).
        """
        super().training(**kwargs)
        for name, value in {
            "l1": l1,
            "l2": l2,
            "l3": l3,
            "replay_capacity": replay_capacity,
            "trajectories_per_update": trajectories_per_update,
            "states_per_update": states_per_update,
            "updates_per_iteration": updates_per_iteration,
            "episodes_per_env_runner": episodes_per_env_runner,
            "warmup_trajectories": warmup_trajectories,
            "expert_epsilon": expert_epsilon,
            "split": split,
            "relabel_seen_tasks": relabel_seen_tasks,
            "greedy_episodes_per_pair": greedy_episodes_per_pair,
            "weight_decay": weight_decay,
            "precision": precision,
            "lr_schedule_clock": lr_schedule_clock,
        }.items():
            if value is not NotProvided:
                setattr(self, name, value)
        model_updates = {
            k: v
            for k, v in {"encoder": encoder, "embedding_dim": embedding_dim}.items()
            if v is not NotProvided
        }
        if model_updates:
            self.rl_module(model_config={**self.model_config, **model_updates})
        return self

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=SynPoTorchRLModule)

    def get_default_learner_class(self):
        from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import SynPoTorchLearner

        return SynPoTorchLearner

    def _validate_thor(self, split: Split) -> None:
        """The THOR pairs env: its config keys, a split of its kitchens x 21 tasks, and no
        gridworld-only option."""
        unknown = sorted(set(self.env_config) - THOR_ENV_CONFIG_KEYS)
        if unknown:
            self._value_error(
                f"unknown env_config key(s) {unknown} for {THOR_PAIRS_ENV_NAME}; "
                f"expected some of {sorted(THOR_ENV_CONFIG_KEYS)}"
            )
        shape = (num_kitchens(self.env_config), NUM_THOR_TASKS)
        if (split.num_envs, split.num_tasks) != shape:
            self._value_error(
                f"split {split.name!r} covers {split.num_envs} x {split.num_tasks} pairs, "
                f"but {THOR_PAIRS_ENV_NAME} has {shape[0]} kitchens x {shape[1]} tasks; "
                f"use split: {{thor: {{num_envs: {shape[0]}, ...}}}}"
            )
        encoder = check_model_config(self.model_config)["encoder"]
        if tuple(getattr(ENCODERS[encoder], "INPUT_KEYS", ())) != THOR_STATE_KEYS:
            self._value_error(
                f"model_config encoder {encoder!r} reads the gridworld's image; THOR needs encoder 'thor'"
            )
        if self.relabel_seen_tasks:
            self._value_error("`relabel_seen_tasks` is gridworld-only; set it to False for THOR")
        if self.evaluation_interval:
            self._value_error(
                "greedy evaluation (`evaluation_interval`) is gridworld-only; leave it unset for THOR"
            )

    def validate(self) -> None:
        quiet_rllib_notices()
        register_envs()  # RLlib makes `env: synpo_pairs` by its Tune name once validated
        super().validate()
        error = bad_setting(
            vars(self),
            {
                NON_NEGATIVE_NUMBER: ("l1", "l2", "l3", "weight_decay"),
                POSITIVE_INT: (
                    "replay_capacity",
                    "trajectories_per_update",
                    "updates_per_iteration",
                    "episodes_per_env_runner",
                    "greedy_episodes_per_pair",
                ),
                optional(POSITIVE_INT): ("states_per_update",),
                NON_NEGATIVE_INT: ("warmup_trajectories",),
                PROBABILITY: ("expert_epsilon",),
                PRECISION: ("precision",),
                one_of(SCHEDULE_CLOCKS): ("lr_schedule_clock",),
                LEARNING_RATE: ("lr",),
            },
            quote="`",
        )
        if error:
            self._value_error(error)
        if self.warmup_trajectories > self.replay_capacity:  # the replay would never start updates
            self._value_error(
                f"`warmup_trajectories` {self.warmup_trajectories} exceeds `replay_capacity` "
                f"{self.replay_capacity}: updates start once the replay holds that many trajectories; "
                "expected at most `replay_capacity`"
            )
        try:
            check_model_config(self.model_config)
            split = resolve_split(self.split)
            slot_count(self.env_config)
        except ValueError as err:  # SplitError too
            self._value_error(str(err))
        unknown = sorted(set(self.env_config) - ENV_CONFIG_KEYS)
        if self.env == PAIRS_ENV_NAME and unknown:
            self._value_error(
                f"unknown env_config key(s) {unknown} for {PAIRS_ENV_NAME}; "
                f"expected some of {sorted(ENV_CONFIG_KEYS)}"
            )
        if self.env == THOR_PAIRS_ENV_NAME:
            self._validate_thor(split)
        subgoal = self.model_config.get("subgoal_embedding", "none")
        if subgoal != "none" and self.env_config.get("gridworld", {}).get("agent_channel"):
            self._value_error(
                f"model_config subgoal_embedding {subgoal!r} reads RGB frames; it does not work with "
                "env_config gridworld agent_channel: true"
            )
        # The env runners' pair env samples the split's seen pairs with the expert.
        self.env_config = {
            **self.env_config,
            "pairs": [list(p) for p in split.seen],
            "behaviour": "expert",
            "expert_epsilon": self.expert_epsilon,
            "relabel": bool(self.relabel_seen_tasks),
        }


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


class SynPo(CarriesLastEvaluation, Algorithm):
    @classmethod
    def get_default_config(cls) -> SynPoConfig:
        return SynPoConfig()

    def setup(self, config) -> None:
        flush_denormals_where_wanted()  # before torch starts its threads in this process
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
            trajectories = (
                sample(episodes, layout) if sample else collect_trajectories(runner, episodes, layout)
            )
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
        self.metrics.log_value(
            "expert_success_rate",
            float(np.mean([t.reward[-1] > 1.0 for t in trajectories])) if trajectories else 0.0,
            window=1,
        )
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
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group, inference_only=True
            )
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
        from rllib_synpo.evaluation import greedy_summary

        return greedy_summary(
            self.get_module(MODULE_ID).net,
            resolve_split(self.config.split),
            self.config.greedy_episodes_per_pair,
            seed=self.config.seed or 0,
            gridworld=self.config.env_config.get("gridworld", {}),
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
            path,
            split=resolve_split(self.config.split).to_dict(),
            gridworld=self.config.env_config.get("gridworld", {}),
            model_config=check_model_config(self.config.model_config),
            **thor,
        )
        return path

    def restore_from_path(self, path, *args, **kwargs):
        super().restore_from_path(path, *args, **kwargs)
        replay_file = Path(path) / REPLAY_FILE
        if replay_file.exists() and hasattr(self, "replay"):
            self.replay.set_state(load_pickle(replay_file))


def _json_safe(options: dict) -> dict:
    """THOR options as JSON (a featurizer object is recorded by its class name)."""
    return {
        key: value
        if isinstance(value, (str, int, float, bool, list, dict, type(None)))
        else type(value).__name__
        for key, value in options.items()
    }
