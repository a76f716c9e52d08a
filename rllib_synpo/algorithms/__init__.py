"""SynPo's RLlib algorithms, laid out like RLlib's own (``ray.rllib.algorithms.bc``, ``ppo``):
each algorithm's config and `Algorithm` in one module, its loss in a ``torch/`` learner.

- `rllib_synpo.algorithms.synpo`: `SynPoConfig` / `SynPo`, imitation (the paper's Algorithm 1).
- `rllib_synpo.algorithms.synpo_ppo`: `SynPoPPOConfig` / `SynPoPPO`, PPO fine-tuning of the
  same module.
"""
