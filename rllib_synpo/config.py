"""`SynPoConfig`: configuration of SynPo imitation (the paper's Algorithm 1) on RLlib."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from synpo_envs.splits import Split, SplitError, random_split, ratio_split, transfer_split
from synpo_envs.thor.constants import NUM_TASKS as NUM_THOR_TASKS

from rllib_synpo.checks import (
    LEARNING_RATE,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    PROBABILITY,
    bad_setting,
    one_of,
    optional,
)
from rllib_synpo.checkpoint_files import MODULE_ID
from rllib_synpo.env_runner import ExpertEnvRunner
from rllib_synpo.losses import LossWeights
from rllib_synpo.networks import ENCODERS
from rllib_synpo.pair_env import ENV_CONFIG_KEYS, PAIRS_ENV_NAME
from rllib_synpo.precision import PRECISION
from rllib_synpo.rl_module import (
    DEFAULT_MODEL_CONFIG,
    THOR_STATE_KEYS,
    SynPoTorchRLModule,
    check_model_config,
)
from rllib_synpo.thor.pair_env import (
    THOR_ENV_CONFIG_KEYS,
    THOR_PAIRS_ENV_NAME,
    num_kitchens,
)

def policy_mapping_fn(agent_id, episode, **kwargs) -> str:
    return MODULE_ID


class ModuleDoesNotAct(ConnectorV2):
    """The env-to-module pipeline of env runners whose env plays its expert: the module never
    acts there, so nothing is batched for it (RLlib's default connectors would batch every
    slot's observation into tensors after each env step, a visible share of collection). Its
    spaces are the module's, as RLlib's agent-to-module mapping gives them: every slot maps to
    `MODULE_ID` and shares one space."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return _module_space(input_observation_space)

    def recompute_output_action_space(self, input_observation_space, input_action_space):
        return _module_space(input_action_space)

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


def _module_space(agent_spaces: gym.spaces.Dict) -> gym.spaces.Dict:
    return gym.spaces.Dict({MODULE_ID: next(iter(agent_spaces.spaces.values()))})


def expert_env_to_module(env=None, spaces=None, device=None) -> ConnectorV2:
    """``env_to_module_connector`` of `SynPoConfig` (paired with no default connectors)."""
    return ModuleDoesNotAct()


# ``split: {NAME: {...kwargs}}`` in a config: the split maker NAME called with the kwargs.
SPLIT_MAKERS = {"random": random_split, "ratio": ratio_split, "transfer": transfer_split}


def resolve_split(split: Split | dict | str | os.PathLike | None) -> Split:
    """``None`` (the paper's 144/256 split, seed 0), a `Split`, a split JSON file, a split dict,
    or one maker's kwargs: ``{"random": {...}}`` (`random_split`), ``{"ratio": {"fraction": ...}}``
    (`ratio_split`, the seen-ratio study's 10 x 10 pairs), ``{"transfer": {"setting": 2}}``
    (`transfer_split`: P seen, the setting's adaptation pairs unseen) or, for THOR,
    ``{"thor": {...}}`` (`thor_split`). A bad value raises `SplitError` naming it."""
    if split is None:
        return random_split()
    if isinstance(split, Split):
        return split
    if isinstance(split, (str, os.PathLike)):
        if not Path(split).is_file():
            raise SplitError(f"split file {str(split)!r} does not exist")
        return Split.load(split)
    if isinstance(split, dict) and len(split) == 1 and next(iter(split)) in {*SPLIT_MAKERS, "thor"}:
        (name, kwargs), = split.items()
        if not isinstance(kwargs, dict):
            raise SplitError(f"split {{{name}: ...}} takes a mapping of {name}_split arguments, got {kwargs!r}")
        if name == "thor":
            from rllib_synpo.thor.split import thor_split

            return thor_split(**kwargs)
        try:
            return SPLIT_MAKERS[name](**kwargs)
        except TypeError as err:
            raise SplitError(f"split {{{name}: {kwargs}}}: {err}") from None
    if isinstance(split, dict):
        return Split.from_dict(split, source="split")
    raise SplitError(f"split must be a Split, a JSON path or a dict, got {type(split).__name__}")


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
        from rllib_synpo.algorithm import SynPo

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
            "l1": l1, "l2": l2, "l3": l3, "replay_capacity": replay_capacity,
            "trajectories_per_update": trajectories_per_update, "states_per_update": states_per_update,
            "updates_per_iteration": updates_per_iteration,
            "episodes_per_env_runner": episodes_per_env_runner, "warmup_trajectories": warmup_trajectories,
            "expert_epsilon": expert_epsilon, "split": split, "relabel_seen_tasks": relabel_seen_tasks,
            "greedy_episodes_per_pair": greedy_episodes_per_pair, "weight_decay": weight_decay,
            "precision": precision, "lr_schedule_clock": lr_schedule_clock,
        }.items():
            if value is not NotProvided:
                setattr(self, name, value)
        model_updates = {k: v for k, v in {"encoder": encoder, "embedding_dim": embedding_dim}.items() if v is not NotProvided}
        if model_updates:
            self.rl_module(model_config={**self.model_config, **model_updates})
        return self

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=SynPoTorchRLModule)

    def get_default_learner_class(self):
        from rllib_synpo.learner import SynPoTorchLearner

        return SynPoTorchLearner

    def _validate_thor(self, split: Split) -> None:
        """The THOR pairs env: its config keys, a split of its kitchens x 21 tasks, and no
        gridworld-only option."""
        unknown = sorted(set(self.env_config) - THOR_ENV_CONFIG_KEYS)
        if unknown:
            self._value_error(f"unknown env_config key(s) {unknown} for {THOR_PAIRS_ENV_NAME}; expected some of {sorted(THOR_ENV_CONFIG_KEYS)}")
        shape = (num_kitchens(self.env_config), NUM_THOR_TASKS)
        if (split.num_envs, split.num_tasks) != shape:
            self._value_error(
                f"split {split.name!r} covers {split.num_envs} x {split.num_tasks} pairs, but {THOR_PAIRS_ENV_NAME} has "
                f"{shape[0]} kitchens x {shape[1]} tasks; use split: {{thor: {{num_envs: {shape[0]}, ...}}}}"
            )
        encoder = check_model_config(self.model_config)["encoder"]
        if tuple(getattr(ENCODERS[encoder], "INPUT_KEYS", ())) != THOR_STATE_KEYS:
            self._value_error(f"model_config encoder {encoder!r} reads the gridworld's image; THOR needs encoder 'thor'")
        if self.relabel_seen_tasks:
            self._value_error("`relabel_seen_tasks` is gridworld-only; set it to False for THOR")
        if self.evaluation_interval:
            self._value_error("greedy evaluation (`evaluation_interval`) is gridworld-only; leave it unset for THOR")

    def validate(self) -> None:
        super().validate()
        error = bad_setting(vars(self), {
            NON_NEGATIVE_NUMBER: ("l1", "l2", "l3", "weight_decay"),
            POSITIVE_INT: ("replay_capacity", "trajectories_per_update", "updates_per_iteration", "episodes_per_env_runner", "greedy_episodes_per_pair"),
            optional(POSITIVE_INT): ("states_per_update",),
            NON_NEGATIVE_INT: ("warmup_trajectories",),
            PROBABILITY: ("expert_epsilon",),
            PRECISION: ("precision",),
            one_of(SCHEDULE_CLOCKS): ("lr_schedule_clock",),
            LEARNING_RATE: ("lr",),
        }, quote="`")
        if error:
            self._value_error(error)
        try:
            check_model_config(self.model_config)
            split = resolve_split(self.split)
        except ValueError as err:  # SplitError too
            self._value_error(str(err))
        unknown = sorted(set(self.env_config) - ENV_CONFIG_KEYS)
        if self.env == PAIRS_ENV_NAME and unknown:
            self._value_error(f"unknown env_config key(s) {unknown} for {PAIRS_ENV_NAME}; expected some of {sorted(ENV_CONFIG_KEYS)}")
        if self.env == THOR_PAIRS_ENV_NAME:
            self._validate_thor(split)
        # The env runners' pair env samples the split's seen pairs with the expert.
        self.env_config = {
            **self.env_config,
            "pairs": [list(p) for p in split.seen],
            "behaviour": "expert",
            "expert_epsilon": self.expert_epsilon,
            "relabel": bool(self.relabel_seen_tasks),
        }
