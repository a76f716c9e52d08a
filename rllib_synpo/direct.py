"""SynPo imitation driven directly by the batched gridworld, without Ray: the fast path used to
measure learning efficiency (benchmarks/learning_speed.py) with the same network and loss terms
that the RLlib module and learner wrap.

Data: ``num_collectors`` episodes run in lockstep on the seen pairs; every collection step adds
one state per episode to a FIFO state replay (uint8), labelled with the expert's optimal action.
The executed action is the expert's, replaced by a random one with probability ``epsilon``
(the paper's perturbation) or, with probability ``dagger``, by the learner's own greedy action
(DAgger-style aggregation of the learner's states).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from rllib_synpo.losses import disentangle_loss, policy_loss, relabelled_policy_loss, reward_loss, synpo_total, taken
from rllib_synpo.networks import SynPoNetwork
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import NUM_ACTIONS, NUM_COLOURS, PICK_UP

Pair = tuple[int, int]


@dataclass
class DirectConfig:
    encoder: str = "compact"
    encoder_kwargs: dict = field(default_factory=dict)
    feature_dim: int = 128
    embedding_dim: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    batch_size: int = 256
    l1: float = 0.01  # reward loss
    l2: float = 0.1  # environment disentanglement
    l3: float = 0.001  # task disentanglement
    pick_weight: float = 1.0  # class weight of pick-up in the policy loss
    epsilon: float = 0.1  # random executed action
    dagger: float = 0.0  # learner's executed action
    num_collectors: int = 256
    collect_every: int = 1  # collection steps per update
    replay_capacity: int = 100_000
    warmup_states: int = 20_000
    env_kwargs: dict = field(default_factory=dict)
    # Also train the policy on the expert's action for every other *seen* task of the state's
    # environment (an expert query, like DAgger; not in the paper).
    relabel_seen_tasks: bool = False


class StateReplay:
    """FIFO of single states (uint8 stacked observation, ids, labels), sampled uniformly."""

    def __init__(self, capacity: int, obs_shape: tuple[int, ...]) -> None:
        self.capacity = capacity
        self.obs = np.zeros((capacity, *obs_shape), np.uint8)
        self.env_id = np.zeros(capacity, np.int64)
        self.task_id = np.zeros(capacity, np.int64)
        self.expert_action = np.zeros(capacity, np.int64)
        self.action = np.zeros(capacity, np.int64)
        self.reward = np.zeros(capacity, np.float32)
        self.agent = np.zeros(capacity, np.int64)
        self.treasures = np.zeros((capacity, NUM_COLOURS), np.int64)
        self.size = 0
        self._next = 0

    def add(self, **columns: np.ndarray) -> None:
        count = len(columns["obs"])
        rows = (self._next + np.arange(count)) % self.capacity
        for name, values in columns.items():
            getattr(self, name)[rows] = values
        self._next = int((self._next + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)

    def sample(self, rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
        rows = rng.integers(self.size, size=count)
        names = ("obs", "env_id", "task_id", "expert_action", "action", "reward", "agent", "treasures")
        return {name: getattr(self, name)[rows] for name in names}


def synpo_losses(net: SynPoNetwork, batch: dict[str, torch.Tensor], config: DirectConfig) -> dict[str, torch.Tensor]:
    """The four named terms and their weighted sum, on one batch."""
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    weights = None
    if config.pick_weight != 1.0:
        weights = torch.ones(NUM_ACTIONS)
        weights[PICK_UP] = config.pick_weight
    if "task_labels" in batch:
        task_logits = net.task_logits(out.sa_features, batch["env_id"])
        terms = {"policy_loss": relabelled_policy_loss(task_logits, batch["task_labels"], weights)}
    else:
        terms = {"policy_loss": policy_loss(out.logits, batch["expert_action"], weights)}
    terms["reward_loss"] = reward_loss(out.reward, batch["action"], batch["reward"])
    env_scores, task_scores = net.disentangle_scores(taken(out.sa_features, batch["expert_action"]))
    terms["env_disentangle_loss"] = disentangle_loss(env_scores, batch["env_id"])
    terms["task_disentangle_loss"] = disentangle_loss(task_scores, batch["task_id"])
    terms["total_loss"] = synpo_total(terms, config.l1, config.l2, config.l3)
    terms["accuracy"] = (out.logits.argmax(-1) == batch["expert_action"]).float().mean()
    return terms


class DirectImitation:
    """Collect, store, update: one `step()` is a collection step plus an optimizer step."""

    def __init__(self, config: DirectConfig, seen_pairs: list[Pair], seed: int = 0) -> None:
        self.config = config
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.env = BatchedGridWorld(config.num_collectors, pairs=seen_pairs, copy=False, **config.env_kwargs)
        self.obs, self.info = self.env.reset(seed=seed)
        spec = self.env.grid_spec
        self.net = SynPoNetwork(
            obs_shape=spec.obs_shape,
            num_actions=NUM_ACTIONS,
            num_envs=spec.num_envs,
            num_tasks=spec.num_tasks,
            encoder=config.encoder,
            encoder_kwargs=config.encoder_kwargs,
            feature_dim=config.feature_dim,
            embedding_dim=config.embedding_dim,
        )
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        self.replay = StateReplay(config.replay_capacity, spec.obs_shape)
        self.updates = 0
        self.states_trained = 0
        self.seen_mask = np.zeros((spec.num_envs, spec.num_tasks), bool)
        self.seen_mask[tuple(np.array(seen_pairs).T)] = True

    def collect(self) -> None:
        config, n = self.config, self.config.num_collectors
        expert = self.info["expert_action"]
        actions = expert.copy()
        if config.dagger > 0:
            own = self.rng.random(n) < config.dagger
            if own.any():
                with torch.no_grad():
                    self.net.eval()
                    obs = {k: torch.as_tensor(v[own]) for k, v in self.obs.items()}
                    actions[own] = self.net(obs["obs"], obs["env_id"], obs["task_id"]).logits.argmax(-1).numpy()
                    self.net.train()
        if config.epsilon > 0:
            noisy = self.rng.random(n) < config.epsilon
            actions[noisy] = self.rng.integers(NUM_ACTIONS, size=int(noisy.sum()))
        state = {k: v.copy() for k, v in self.obs.items()}
        agent, treasures = self.env.state.agent.copy(), self.env.state.treasures.copy()
        self.obs, reward, _, _, self.info = self.env.step(actions)
        self.replay.add(
            obs=state["obs"], env_id=state["env_id"], task_id=state["task_id"],
            expert_action=expert, action=actions, reward=reward.astype(np.float32),
            agent=agent, treasures=treasures,
        )

    def step(self) -> dict[str, float]:
        for _ in range(self.config.collect_every):
            self.collect()
        while self.replay.size < min(self.config.warmup_states, self.replay.capacity):
            self.collect()
        sample = self.replay.sample(self.rng, self.config.batch_size)
        if self.config.relabel_seen_tasks:
            labels, possible = self.env.grid_spec.task_expert_actions(sample["env_id"], sample["agent"], sample["treasures"])
            sample["task_labels"] = np.where(possible & self.seen_mask[sample["env_id"]], labels, -1).astype(np.int64)
        batch = {k: torch.as_tensor(v) for k, v in sample.items()}
        terms = synpo_losses(self.net, batch, self.config)
        self.optimizer.zero_grad()
        terms["total_loss"].backward()
        self.optimizer.step()
        self.updates += 1
        self.states_trained += self.config.batch_size
        return {name: float(value.detach()) for name, value in terms.items()}

    def describe(self) -> dict:
        return asdict(self.config)
