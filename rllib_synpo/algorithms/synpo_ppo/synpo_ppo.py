"""PPO fine-tuning of a SynPo imitation policy with the same module (the paper's section 4.1).

`SynPoPPOConfig` / `SynPoPPO` ("SynPoPPO" with Ray Tune): the pair env executes the module's
own (sampled) actions on the seen pairs (or the unseen ones, or all: ``finetune_pairs``) and
returns the real rewards; the learner adds SynPo's disentanglement losses (and optionally the
reward loss) to PPO's loss as auxiliary terms, and optionally a KL penalty towards the imitation
policy (``imitation_kl_coeff``).

With ``imitation_checkpoint`` set, `SynPoPPO.setup` loads the imitation module with
``restore_from_path(<ckpt>/learner_group/learner/rl_module/synpo,
component="learner_group/learner/rl_module/synpo")`` and asserts that the load took: the
learner's and the env runners' weights equal the checkpoint's, and the greedy evaluation of
the loaded module equals the imitation module's (loaded on its own) on the same seen pairs and
seeds. A load that did not take raises `ImitationCheckpointError`.

.. code-block:: python

    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig
    algo = SynPoPPOConfig().training(imitation_checkpoint="results/runs/synpo-gridworld").build_algo()
    algo.train()
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.metrics import NUM_AGENT_STEPS_SAMPLED
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.splits import Split

from rllib_synpo.algorithms.last_evaluation import CarriesLastEvaluation
from rllib_synpo.algorithms.synpo_ppo.imitation_checkpoint import (
    ImitationCheckpointError,
    load_error,
    load_imitation_module,
    read_imitation_meta,
)
from rllib_synpo.algorithms.synpo_ppo.torch.synpo_ppo_torch_learner import SynPoPPOTorchLearner
from rllib_synpo.checkpoint import MODULE_COMPONENT, MODULE_ID, write_meta
from rllib_synpo.env.expert_env_runner import policy_mapping_fn
from rllib_synpo.env.pair_env import ENV_CONFIG_KEYS, PAIRS_ENV_NAME, slot_count
from rllib_synpo.env.registration import register_envs
from rllib_synpo.env.splits import resolve_split
from rllib_synpo.losses import LossWeights
from rllib_synpo.networks.synpo import env_dropout_hides
from rllib_synpo.rl_module import SynPoTorchRLModule, check_model_config
from rllib_synpo.utils.checks import (
    LEARNING_RATE,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    bad_setting,
)
from rllib_synpo.utils.console import quiet_rllib_notices, without_gym_env_override_warning
from rllib_synpo.utils.denormals import flush_denormals_where_wanted

OPTIMIZERS = ("rmsprop", "adam")
FINETUNE_PAIRS = ("seen", "unseen", "all")  # which pairs of the split PPO interacts with


class SynPoPPOEnvRunner(MultiAgentEnvRunner):
    """RLlib's multi-agent env runner, with 0 sampled steps for a pair slot that did not step in
    a sample. A slot whose gridworld episode ended waits for the other slots; RLlib leaves its
    count NaN then (ray#62635), and PPO's sampling loop, which counts agent steps, fails with
    "cannot convert float NaN to integer"."""

    def __init__(self, *args, **kwargs) -> None:
        flush_denormals_where_wanted()  # its module computes the actions
        super().__init__(*args, **kwargs)

    def make_env(self) -> None:
        with without_gym_env_override_warning():
            super().make_env()

    def sample(self, *args, **kwargs):
        episodes = super().sample(*args, **kwargs)
        for env in self.env.envs:
            for agent in env.unwrapped.possible_agents:
                self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED, str(agent)), 0, reduce="sum")
        return episodes


class SynPoPPOConfig(PPOConfig):
    """PPO on the SynPo module and pair env; defaults are the paper's PPO hyper-parameters
    (RMSProp lr 2.5e-5, weight decay 1e-4, GAE 0.99/0.95, entropy 0.01, clip 0.1, grad-norm
    clip 0.5, 4 epochs of 4 minibatches of a 128-step rollout of every pair slot)."""

    def __init__(self, algo_class=None) -> None:
        super().__init__(algo_class=algo_class or SynPoPPO)
        paper = LossWeights()
        self.l1, self.l2, self.l3 = 0.0, paper.l2, paper.l3  # no reward loss by default
        self.split: Any = None
        self.finetune_pairs = "seen"
        self.imitation_checkpoint: str | None = None
        self.optimizer_type = "rmsprop"
        self.weight_decay = 1e-4
        self.value_lr = 1e-3
        self.imitation_kl_coeff = 0.0
        self.load_check_episodes_per_pair = 1
        self.greedy_episodes_per_pair = 2
        self.lr = 2.5e-5
        self.gamma = 0.99
        self.lambda_ = 0.95
        self.entropy_coeff = 0.01
        self.clip_param = 0.1
        self.grad_clip = 0.5
        self.use_kl_loss = False  # the paper's PPO is the clipped objective alone
        self.vf_clip_param = 1e4  # RLlib clips the squared value error; returns reach ~11
        self.num_epochs = 4
        # Batches count agent steps (pair slots): 128 steps of 16 slots, in 4 minibatches.
        self.train_batch_size = 128 * 16  # per learner (one local learner by default)
        self.minibatch_size = 128 * 16 // 4
        self.environment(env=PAIRS_ENV_NAME, env_config={})
        self.multi_agent(
            policies={MODULE_ID}, policy_mapping_fn=policy_mapping_fn, count_steps_by="agent_steps"
        )
        # No model_config here: the imitation checkpoint's is used unless one is given.
        self.env_runners(num_env_runners=0, env_runner_cls=SynPoPPOEnvRunner)

    def training(
        self,
        *,
        l1: float | None = NotProvided,
        l2: float | None = NotProvided,
        l3: float | None = NotProvided,
        split: Any = NotProvided,
        finetune_pairs: str | None = NotProvided,
        imitation_checkpoint: str | None = NotProvided,
        optimizer_type: str | None = NotProvided,
        weight_decay: float | None = NotProvided,
        value_lr: float | None = NotProvided,
        imitation_kl_coeff: float | None = NotProvided,
        load_check_episodes_per_pair: int | None = NotProvided,
        greedy_episodes_per_pair: int | None = NotProvided,
        **kwargs,
    ) -> SynPoPPOConfig:
        """Sets the SynPo knobs of PPO fine-tuning (PPO's own knobs pass through).

        Args:
            l1: Weight of the auxiliary reward-prediction loss, MSE of r_hat(s, a_taken) against
                the real reward (0 = off, the default).
            l2: Weight of the auxiliary environment disentanglement loss (paper: 0.1).
            l3: Weight of the auxiliary task disentanglement loss (paper: 0.001).
                PPO has no expert: both disentanglement losses read the state-action feature
                of the action the policy took, ``sa[n, a_taken]``.
            split: The seen/unseen split (see ``finetune_pairs``): None (the imitation
                checkpoint's split, else the 144/256 split, seed 0), a `Split`, a split JSON
                path, a split dict or ``{"random": {...}}``.
            finetune_pairs: Which of the split's pairs PPO interacts with: "seen" (the
                default: the unseen pairs stay zero-shot, as in the imitation study), "unseen"
                (the paper's "if there is interaction data, the policies can be further
                fine-tuned" for the unseen pairs) or "all". Evaluation and checkpoints keep the
                split's seen/unseen labels either way.
            imitation_checkpoint: A SynPo checkpoint (or an experiment folder: its newest
                checkpoint) to start from; None starts from a random module. Its network
                (model_config), split and gridworld settings are used; a model_config or
                gridworld given here must match them.
            optimizer_type: "rmsprop" (the paper; alpha 0.99, eps 1e-5) or "adam" (RLlib's default).
            weight_decay: L2 weight decay of the optimizer (paper: 1e-4).
            value_lr: Learning rate of the value head, which has its own optimizer (same type)
                since it reads the features through a stop-gradient (`SynPoOutputs.value`); at
                the policy's 2.5e-5 it did not learn within 200 iterations. Not the paper's.
            imitation_kl_coeff: Weight of ``KL(pi_imitation || pi)`` on the train batch's
                states, pi_imitation the frozen module of ``imitation_checkpoint`` (0 = off, the
                paper's PPO and the default). Keeps fine-tuning near the imitation policy;
                needs an ``imitation_checkpoint``. Not the paper's.
            load_check_episodes_per_pair: Greedy episodes per seen pair in the check that the
                imitation module loaded (same pairs and seed for both modules).
            greedy_episodes_per_pair: Greedy episodes per pair (all of them) in each periodic
                evaluation (``evaluation_interval``); results land under ``evaluation/``.
        """
        super().training(**kwargs)
        for name, value in {
            "l1": l1,
            "l2": l2,
            "l3": l3,
            "split": split,
            "finetune_pairs": finetune_pairs,
            "imitation_checkpoint": imitation_checkpoint,
            "optimizer_type": optimizer_type,
            "weight_decay": weight_decay,
            "value_lr": value_lr,
            "imitation_kl_coeff": imitation_kl_coeff,
            "load_check_episodes_per_pair": load_check_episodes_per_pair,
            "greedy_episodes_per_pair": greedy_episodes_per_pair,
        }.items():
            if value is not NotProvided:
                setattr(self, name, value)
        return self

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=SynPoTorchRLModule)

    def get_default_learner_class(self):
        return SynPoPPOTorchLearner

    def resolved_split(self) -> tuple[Split, dict]:
        """(the split PPO trains on, the gridworld settings), from the knobs or the checkpoint."""
        if self.imitation_checkpoint is None:
            return resolve_split(self.split), dict(self.env_config.get("gridworld", {}))
        path, meta = read_imitation_meta(self.imitation_checkpoint)
        split = (
            Split.from_dict(meta["split"], source=str(path))
            if self.split is None
            else resolve_split(self.split)
        )
        gridworld = dict(self.env_config.get("gridworld", meta.get("gridworld", {})))
        if gridworld_settings(gridworld) != gridworld_settings(meta.get("gridworld", {})):
            raise ImitationCheckpointError(
                f"env_config gridworld {gridworld} differs from the imitation checkpoint's "
                f"{meta.get('gridworld', {})} ({path})"
            )
        return split, gridworld

    def resolved_model_config(self) -> dict:
        """The module's model_config: the imitation checkpoint's where it records one (a
        model_config given here must then build the same network), else the one given here."""
        given = dict(self._model_config)
        if self.imitation_checkpoint is None:
            return given
        path, meta = read_imitation_meta(self.imitation_checkpoint)
        recorded = meta.get("model_config")
        if recorded is None:  # an older checkpoint: loading it checks the sizes
            return given
        if given and check_model_config(given) != check_model_config(recorded):
            raise ImitationCheckpointError(
                f"model_config {given} differs from the imitation checkpoint's {recorded} ({path}); "
                "leave model_config out to fine-tune the checkpoint's network"
            )
        return dict(recorded)

    def validate(self) -> None:
        quiet_rllib_notices()
        register_envs()  # RLlib makes `env: synpo_pairs` by its Tune name once validated
        super().validate()
        error = bad_setting(
            vars(self),
            {
                NON_NEGATIVE_NUMBER: ("l1", "l2", "l3", "weight_decay", "imitation_kl_coeff"),
                POSITIVE_NUMBER: ("value_lr",),
                POSITIVE_INT: ("load_check_episodes_per_pair", "greedy_episodes_per_pair"),
                LEARNING_RATE: ("lr",),
            },
            quote="`",
        )
        if error:
            self._value_error(error)
        if self.imitation_kl_coeff > 0 and self.imitation_checkpoint is None:
            self._value_error(
                f"`imitation_kl_coeff` {self.imitation_kl_coeff} needs an `imitation_checkpoint` "
                "(the policy to stay near)"
            )
        if self.optimizer_type not in OPTIMIZERS:
            self._value_error(f"`optimizer_type` must be one of {OPTIMIZERS}, got {self.optimizer_type!r}")
        if self.finetune_pairs not in FINETUNE_PAIRS:
            self._value_error(
                f"`finetune_pairs` must be one of {FINETUNE_PAIRS}, got {self.finetune_pairs!r}"
            )
        unknown = sorted(set(self.env_config) - ENV_CONFIG_KEYS)
        if self.env == PAIRS_ENV_NAME and unknown:
            self._value_error(
                f"unknown env_config key(s) {unknown} for {PAIRS_ENV_NAME}; "
                f"expected some of {sorted(ENV_CONFIG_KEYS)}"
            )
        if self.env_config.get("behaviour", "policy") != "policy":
            self._value_error(
                "PPO runs the policy: env_config behaviour must be 'policy', "
                f"got {self.env_config['behaviour']!r}"
            )
        try:
            self.rl_module(model_config=self.resolved_model_config())
            env_dropout = check_model_config(self.model_config).get("env_dropout", 0)
            if env_dropout_hides(env_dropout):
                raise ValueError(
                    f"model_config env_dropout {self.model_config['env_dropout']} hides environments in "
                    "training forward passes, so PPO's likelihood ratios would not be those of the policy "
                    "that acted; fine-tune a network trained without env_dropout"
                )
            split, gridworld = self.resolved_split()
            slot_count(self.env_config)
        except ValueError as err:
            self._value_error(str(err))
        if self.imitation_checkpoint is not None:
            # Absolute, so that learners elsewhere (remote learner actors) find the same folder.
            self.imitation_checkpoint = str(read_imitation_meta(self.imitation_checkpoint)[0])
        # The env runners' pair env runs the module's actions on those pairs, real rewards.
        pairs = {"seen": split.seen, "unseen": split.unseen, "all": split.all_pairs}[self.finetune_pairs]
        if not pairs:
            self._value_error(
                f"`finetune_pairs` {self.finetune_pairs!r}: the split {split.name!r} "
                f"has no {self.finetune_pairs} pairs"
            )
        self.env_config = {
            **self.env_config,
            "pairs": [list(p) for p in pairs],
            "behaviour": "policy",
            "gridworld": gridworld,
        }
        for key in ("expert_epsilon", "relabel"):
            self.env_config.pop(key, None)


def gridworld_settings(kwargs: dict) -> dict:
    """Gridworld keyword arguments with `BatchedGridWorld`'s defaults filled in, so that ``{}``
    and ``{"window": 1}`` (the default) compare equal."""
    parameters = inspect.signature(BatchedGridWorld.__init__).parameters.values()
    defaults = {
        p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
    }
    return {**defaults, **kwargs}


class SynPoPPO(CarriesLastEvaluation, PPO):
    @classmethod
    def get_default_config(cls) -> SynPoPPOConfig:
        return SynPoPPOConfig()

    def setup(self, config) -> None:
        flush_denormals_where_wanted()  # before torch starts its threads in this process
        super().setup(config)
        self.synpo_split, self.gridworld = self.config.resolved_split()
        self.load_check: dict | None = None
        if self.config.imitation_checkpoint is not None:
            self.load_check = self.load_imitation_checkpoint(self.config.imitation_checkpoint)

    def load_imitation_checkpoint(self, checkpoint: str | Path) -> dict:
        """Loads the imitation module into the learner and the env runners, then asserts that
        it took (see the module docstring); returns the check's numbers."""
        module_dir, reference = load_imitation_module(checkpoint)
        try:
            self.restore_from_path(module_dir, component=MODULE_COMPONENT)
        except Exception as err:  # size mismatch with this run's module, ...
            raise load_error(module_dir, err) from err
        return check_loaded_policy(self, reference, where=str(module_dir))

    def evaluate(self, parallel_train_future=None) -> dict:
        """Greedy AvgSR, return and first-pick accuracy on the seen and unseen pairs."""
        from rllib_synpo.evaluation import greedy_summary

        return greedy_summary(
            self.get_module(MODULE_ID).net,
            self.synpo_split,
            self.config.greedy_episodes_per_pair,
            seed=self.config.seed or 0,
            gridworld=self.gridworld,
        )

    def save_to_path(self, path=None, **kwargs):
        """Also writes ``synpo_meta.json``, so ``rllib evaluate`` and a later fine-tuning read
        PPO checkpoints like imitation ones."""
        path = super().save_to_path(path, **kwargs)
        write_meta(
            path,
            split=self.synpo_split.to_dict(),
            gridworld=self.gridworld,
            model_config=check_model_config(self.config.model_config),
            algorithm="SynPoPPO",
        )
        return path


def _state(module) -> dict[str, np.ndarray]:
    return {
        key: np.asarray(value.detach().cpu() if torch.is_tensor(value) else value)
        for key, value in module.get_state().items()
    }


def check_loaded_policy(algo: SynPoPPO, reference, where: str) -> dict:
    """Raises `ImitationCheckpointError` unless the learner's and the acting module's weights
    equal ``reference``'s and both modules' greedy evaluations on the seen pairs agree."""
    from rllib_synpo.evaluation import evaluate, torch_greedy_policy

    expected = _state(reference)
    learner_state = algo.learner_group.get_weights([MODULE_ID])[MODULE_ID]
    acting = algo.get_module(MODULE_ID)
    for owner, state in (("learner", learner_state), ("env runner", _state(acting))):
        differ = sorted(
            k for k in expected if k not in state or not np.array_equal(np.asarray(state[k]), expected[k])
        )
        if differ:
            raise ImitationCheckpointError(
                f"the imitation module did not load from {where}: the {owner}'s {len(differ)} tensor(s) "
                f"{differ[:5]} differ from the checkpoint's"
            )
    episodes, seed = algo.config.load_check_episodes_per_pair, algo.config.seed or 0
    pairs = algo.synpo_split.seen
    runs = {
        name: evaluate(torch_greedy_policy(module.net), pairs, episodes, seed=seed, env_kwargs=algo.gridworld)
        for name, module in (("loaded", acting), ("imitation", reference))
    }
    loaded, imitation = runs["loaded"], runs["imitation"]
    if not (
        np.array_equal(loaded.successes, imitation.successes)
        and np.array_equal(loaded.returns, imitation.returns)
    ):
        raise ImitationCheckpointError(
            f"greedy evaluation after loading {where} differs from the imitation module's on the same "
            f"{len(pairs)} seen pairs (seed {seed}): AvgSR {loaded.success_rate.mean():.4f} vs "
            f"{imitation.success_rate.mean():.4f}, return {loaded.returns.sum():.2f} vs "
            f"{imitation.returns.sum():.2f}"
        )
    return {
        "pairs": len(pairs),
        "episodes_per_pair": episodes,
        "seed": seed,
        "avg_success_rate": float(loaded.success_rate.mean()),
    }
