"""`ExpertEnvRunner`: RLlib's multi-agent env runner, for envs whose pair slots play the expert."""

from __future__ import annotations

import time
from collections import Counter

import gymnasium as gym
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.metrics import (
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
    TIME_BETWEEN_SAMPLING,
    WEIGHTS_SEQ_NO,
)

from rllib_synpo.checkpoint import MODULE_ID
from rllib_synpo.env.trajectory import FrameLayout, Trajectory, collect_trajectories
from rllib_synpo.utils.console import without_gym_env_override_warning

# Hooks that see RLlib's episode objects; the array path (which builds none) is not taken
# when a user's callbacks define any of them.
EPISODE_HOOKS = (
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
)


class ExpertEnvRunner(MultiAgentEnvRunner):
    """`MultiAgentEnvRunner` whose env's pair slots play the expert.

    `sample_trajectories` returns the expert's trajectories directly: where the env can play an
    episode with whole-array steps (`SynPoPairsEnv.play_expert_episode`) it does so and logs
    the metrics RLlib's `sample` logs for it (env/module steps, episodes, episode returns and
    lengths), without building RLlib's per-agent episode objects (about 3/4 of the collection's
    time at 32 slots); otherwise, or when user callbacks want those episodes, it samples them
    with RLlib's `sample`. Both give the same trajectories for the same seed.

    `sample` itself counts sampled steps per module, not per agent: the pair slots are
    interchangeable, and RLlib's runner logs four counters for every slot at every env step
    (about a third of its collection time with 32 slots)."""

    def make_env(self) -> None:
        with without_gym_env_override_warning():
            super().make_env()

    def sample_trajectories(self, num_episodes: int, layout: FrameLayout) -> list[Trajectory]:
        """The trajectories (one per pair slot) of ``num_episodes`` expert episodes."""
        if not self._can_play_arrays():
            return collect_trajectories(self, num_episodes, layout)
        if self._time_after_sampling is not None:
            self.metrics.log_value(
                key=TIME_BETWEEN_SAMPLING, value=time.perf_counter() - self._time_after_sampling
            )
        self.metrics.log_value(key=WEIGHTS_SEQ_NO, value=self._weights_seq_no, window=1)
        env = self.env.envs[0].unwrapped
        trajectories = []
        with self.metrics.log_time(SAMPLE_TIMER):
            for _ in range(num_episodes):
                started = time.time()
                # The seed RLlib's runner passes at every sample(num_episodes=...) (the env
                # continues its streams when it sees the same seed again).
                episode = env.play_expert_episode(layout, seed=self._seed)
                self._log_expert_episode(env.agents, episode, time.time() - started)
                trajectories.extend(episode)
        self._needs_initial_reset = True  # RLlib's next sample() starts new episodes
        self._time_after_sampling = time.perf_counter()
        return trajectories

    def _can_play_arrays(self) -> bool:
        env = self.env.envs[0].unwrapped
        if (
            self.module is None
            or self.num_envs != 1
            or not hasattr(env, "play_expert_episode")
            or getattr(env, "behaviour", None) != "expert"
        ):
            return False
        if self.config.restart_failed_sub_environments or len(self.module.keys()) != 1:
            return False
        if any(getattr(self.config, f"callbacks_{hook}", None) for hook in EPISODE_HOOKS):
            return False
        return not any(
            getattr(type(c), hook) is not getattr(RLlibCallback, hook)
            for c in self._callbacks
            for hook in EPISODE_HOOKS
        )

    def _log_expert_episode(self, agents: list[str], trajectories: list[Trajectory], seconds: float) -> None:
        """What RLlib's `sample` and `get_metrics` log for one finished multi-agent episode."""
        (module_id,) = self.module.keys()
        env_steps = max(len(t) for t in trajectories)  # the episode ends with its longest slot
        agent_steps = sum(len(t) for t in trajectories)
        returns = {agent: float(t.reward.sum()) for agent, t in zip(agents, trajectories)}
        episode_return = sum(returns.values())
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED, env_steps, reduce="sum")
        self.metrics.log_value(
            NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True
        )
        self.metrics.log_value(NUM_EPISODES, 1, reduce="sum")
        self.metrics.log_value(NUM_EPISODES_LIFETIME, 1, reduce="lifetime_sum")
        self._log_module_steps(Counter({module_id: agent_steps}))
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=env_steps)
        self._log_episode_metrics(
            env_steps,
            episode_return,
            seconds,
            returns,
            {module_id: episode_return},
            {agent: len(t) for agent, t in zip(agents, trajectories)},
        )

    def _log_module_steps(self, steps_by_module: Counter) -> None:
        for module_id, steps in steps_by_module.items():
            self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED, module_id), steps, reduce="sum")
            self.metrics.log_value(
                (NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), steps, reduce="lifetime_sum"
            )

    # Overrides a private method of RLlib's runner (the only place these counters are logged;
    # pinned with the other Ray internals in tests/rllib/test_ray_internals.py);
    # should RLlib rename it, its own per-agent counting runs again: slower, not wrong.
    def _increase_sampled_metrics(self, num_steps, next_obs, episode):
        # RLlib's own method for the env steps and episodes (no agents given: no agent loop).
        super()._increase_sampled_metrics(num_steps, {}, episode)
        self._log_module_steps(Counter(episode.module_for(agent) for agent in next_obs))
        return num_steps


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
