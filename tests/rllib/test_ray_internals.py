"""The Ray internals rllib_synpo relies on where RLlib offers no public hook, pinned: a Ray
upgrade that renames or removes one fails here, by name, instead of silently elsewhere.

- `SynPo` keeps the training seconds Tune counts (``Trainable._time_total``) in its state and
  reads them for ``lr_schedule_clock: training_seconds``.
- The configs report bad settings through ``AlgorithmConfig._value_error`` (as RLlib's own
  configs do); `SynPoPPOConfig` reads the user's model_config before RLlib's auto-includes
  (``AlgorithmConfig._model_config``).
- `SynPoTorchLearner.apply_gradients` leaves torch learning-rate schedulers and gradient scalers
  to RLlib, found through ``_torch_lr_scheduler_classes`` and ``_torch_grad_scaler_class``
  (set with ``config.experimental(...)``).
- `ExpertEnvRunner` logs, for episodes it plays with whole-array steps, what
  `MultiAgentEnvRunner.sample` logs, with the runner's own state and helpers.
"""

import inspect

import pytest
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.tune.trainable import Trainable

# (class, attribute, what reads it); an attribute set in __init__ is found in the class's source.
RAY_INTERNALS = [
    (Trainable, "_time_total", "SynPo: the training-seconds clock"),
    (AlgorithmConfig, "_value_error", "SynPoConfig / SynPoPPOConfig.validate"),
    (AlgorithmConfig, "_model_config", "SynPoPPOConfig.resolved_model_config"),
    (AlgorithmConfig, "_torch_lr_scheduler_classes", "SynPoTorchLearner.apply_gradients"),
    (AlgorithmConfig, "_torch_grad_scaler_class", "SynPoTorchLearner.apply_gradients"),
    (MultiAgentEnvRunner, "_time_after_sampling", "ExpertEnvRunner.sample_trajectories"),
    (MultiAgentEnvRunner, "_weights_seq_no", "ExpertEnvRunner.sample_trajectories"),
    (MultiAgentEnvRunner, "_seed", "ExpertEnvRunner.sample_trajectories"),
    (MultiAgentEnvRunner, "_needs_initial_reset", "ExpertEnvRunner.sample_trajectories"),
    (MultiAgentEnvRunner, "_callbacks", "ExpertEnvRunner: user callbacks fall back to RLlib's sample"),
    (MultiAgentEnvRunner, "_metrics_num_env_steps_sampled", "ExpertEnvRunner: the env-step counter"),
    (MultiAgentEnvRunner, "_log_env_steps", "ExpertEnvRunner: the env-step counter"),
    (MultiAgentEnvRunner, "_log_episode_metrics", "ExpertEnvRunner: episode returns and lengths"),
    (MultiAgentEnvRunner, "_increase_sampled_metrics", "ExpertEnvRunner: module steps, not agent steps"),
]


def _defined(cls: type, attribute: str) -> bool:
    if any(attribute in vars(klass) for klass in cls.__mro__):
        return True
    source = "".join(inspect.getsource(klass) for klass in cls.__mro__ if klass.__module__.startswith("ray."))
    return f"self.{attribute} =" in source or f"self.{attribute}: " in source


@pytest.mark.parametrize(
    "cls, attribute, reader", RAY_INTERNALS, ids=[f"{c.__name__}.{a}" for c, a, _ in RAY_INTERNALS]
)
def test_the_ray_internal_still_exists(cls, attribute, reader):
    assert _defined(cls, attribute), f"Ray no longer has {cls.__name__}.{attribute}, which {reader} uses"


def test_the_learner_overrides_only_public_learner_hooks():
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner

    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import SynPoTorchLearner
    from rllib_synpo.algorithms.synpo_ppo.torch.synpo_ppo_torch_learner import SynPoPPOTorchLearner

    for learner in (SynPoTorchLearner, SynPoPPOTorchLearner):
        overridden = {
            name for name in vars(learner) if callable(getattr(learner, name)) and hasattr(TorchLearner, name)
        }
        assert overridden and not {name for name in overridden if name.startswith("_")}, (
            learner.__name__,
            overridden,
        )
