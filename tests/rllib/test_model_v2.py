"""The old-stack TorchModelV2 adapter: one PPO iteration on the single-agent gridworld."""

import numpy as np

from tests.rllib.conftest import TINY_MODEL


def test_old_stack_ppo_iteration(ray_session):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env
    from synpo_envs.gridworld import GridWorld

    import rllib_synpo.model_v2  # noqa: F401  (registers "synpo" with ModelCatalog)

    register_env("synpo_gridworld_single", lambda cfg: GridWorld(pairs=[(0, 0), (1, 1)], max_steps=50))
    config = (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False)
        .environment("synpo_gridworld_single")
        .framework("torch")
        .env_runners(num_env_runners=0, rollout_fragment_length=100)
        .training(
            train_batch_size=100,
            minibatch_size=50,
            num_epochs=1,
            model={"custom_model": "synpo", "custom_model_config": TINY_MODEL},
        )
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        stats = result["info"]["learner"]["default_policy"]["learner_stats"]
        assert np.isfinite(stats["total_loss"])
        model = algo.get_policy().model
        assert type(model).__name__ == "SynPoTorchModelV2"
    finally:
        algo.stop()
