"""SynPo on the AI2-THOR kitchens (`synpo_envs.thor`): the paper's THOR state network, the
multi-agent pairs env that plays the planner expert, and the 144-seen-pairs split.

Importing this package imports nothing heavy; the modules load what they need:

- `rllib_synpo.thor.encoder`: `ThorStateEncoder` (plain torch), model_config ``encoder: thor``;
- `rllib_synpo.thor.pair_env`: `ThorPairsEnv`, registered with Tune as ``synpo_thor_pairs``;
- `rllib_synpo.thor.split`: `thor_split`, the split config ``split: {thor: {...}}``.

The expert itself (a planner over THOR's metadata) lives with the env: `synpo_envs.thor.expert`.
"""
