"""SynPo's side of the environments (the environments themselves are `synpo_envs`): the
multi-agent pairs envs RLlib samples (`pair_env`, `thor_pair_env`), the env runner that plays
the expert and returns compact `Trajectory` records (`expert_env_runner`, `trajectory`), and
the ``split`` setting (`splits`, `thor_split`)."""
