"""SynPo imitation driven directly by the batched gridworld, without Ray: the fast path used to
measure learning efficiency (benchmarks/learning_speed.py) with the same network and loss terms
that the RLlib module and learner wrap.

Data: ``num_collectors`` episodes run in lockstep on the seen pairs; every collection step adds
one state per episode to a FIFO state replay (uint8), labelled with the expert's optimal action.
The executed action is the expert's, replaced by a random one with probability ``epsilon``
(the paper's perturbation) or, with probability ``dagger``, by the learner's own greedy action
(DAgger-style aggregation of the learner's states).

Networks that train SF's TD term (``sf_td_loss`` among their ``LOSS_TERMS``, weight > 0) get
batches that also carry the sampled states' successors (`StateReplay`, ``next_row`` column);
other networks' batches are the sampled states alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from synpo_envs.gridworld import BatchedGridWorld
from synpo_envs.gridworld.constants import NUM_ACTIONS, NUM_COLOURS, PICK_UP
from synpo_envs.gridworld.core import GridSpec

from rllib_synpo.checks import NON_NEGATIVE_INT, NON_NEGATIVE_NUMBER, POSITIVE_INT, POSITIVE_NUMBER, PROBABILITY, check_settings, optional
from rllib_synpo.losses import (
    EPISODE_END,
    NO_TRANSITION,
    SF_TD_LOSS,
    SF_TD_WEIGHT,
    SYNPO_LOSS_TERMS,
    LossWeights,
    imitation_losses,
)
from rllib_synpo.networks import make_network
from rllib_synpo.optimizers import fused_adam_options
from rllib_synpo.precision import PRECISION, resolve_precision, training_autocast

Pair = tuple[int, int]


@dataclass
class DirectConfig:
    network: str = "synpo"  # or a baseline: rllib_synpo.networks.NETWORKS
    encoder: str = "compact"
    encoder_kwargs: dict = field(default_factory=dict)
    feature_dim: int = 128
    embedding_dim: int = 128
    network_kwargs: dict = field(default_factory=dict)  # further sizes/options of the network
    lr: float = 1e-3
    weight_decay: float = 0.0
    # Weight decay of the embeddings and the coefficient functions alone (None: weight_decay):
    # regularizes how environment and task combine without shrinking the state encoder.
    coefficient_weight_decay: float | None = None
    batch_size: int = 256
    l1: float = 0.01  # reward loss
    l2: float = 0.1  # environment disentanglement
    l3: float = 0.001  # task disentanglement
    sf_td_weight: float = SF_TD_WEIGHT  # SF network's TD term (needs batches with "next_row")
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
    # Collection only (evaluation starts with all five): each treasure outside the collected
    # pair's task is absent from the start with this probability (not in the paper).
    absent_treasures: float = 0.0
    device: str = "cpu"  # torch device of the network, its updates and its evaluation
    precision: str = "float32"  # of the training forward pass: rllib_synpo.precision.PRECISIONS

    def __post_init__(self) -> None:
        """Refuse what would fail deep in a run, or run without meaning (a zero batch, an
        epsilon above 1), naming the field and the bad value."""
        check_settings(vars(self), {
            POSITIVE_NUMBER: ("lr", "pick_weight"),
            NON_NEGATIVE_NUMBER: ("weight_decay", "l1", "l2", "l3", "sf_td_weight"),
            PROBABILITY: ("epsilon", "dagger"),
            POSITIVE_INT: ("batch_size", "num_collectors", "collect_every", "replay_capacity"),
            NON_NEGATIVE_INT: ("warmup_states",),
            optional(NON_NEGATIVE_NUMBER): ("coefficient_weight_decay",),
            PRECISION: ("precision",),
        })

    def model_config(self) -> dict:
        """The RLModule ``model_config`` that builds this config's network."""
        return {
            "network": self.network, "encoder": self.encoder, "encoder_kwargs": dict(self.encoder_kwargs),
            "feature_dim": self.feature_dim, "embedding_dim": self.embedding_dim, **self.network_kwargs,
        }


NO_SUCCESSOR = EPISODE_END  # next_index of a row whose episode ended at that step (and batch next_row)
PENDING_SUCCESSOR = -2  # next_index of a row whose successor has not been collected yet
_COLUMNS = ("obs", "env_id", "task_id", "expert_action", "action", "reward", "agent", "treasures")


class StateReplay:
    """FIFO of single states (uint8 stacked observation, ids, labels), sampled uniformly.

    With ``track_successors`` (SF's TD term), every `add` must hold one row per collector slot,
    in slot order, and consecutive adds must be consecutive steps of those slots, with
    ``ended[i]`` true where slot i's episode ended at that step. Each row's ``next_index`` then
    holds the row of its successor state (set when the successor is added), `NO_SUCCESSOR`
    where the episode ended (terminated, or truncated: treated as an end, as the trajectory
    replay does) and `PENDING_SUCCESSOR` until the successor arrives. FIFO order keeps these
    links valid: a row is always overwritten before its successor.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], *, track_successors: bool = False) -> None:
        self.capacity = capacity
        self.track_successors = track_successors
        self.obs = np.zeros((capacity, *obs_shape), np.uint8)
        self.env_id = np.zeros(capacity, np.int64)
        self.task_id = np.zeros(capacity, np.int64)
        self.expert_action = np.zeros(capacity, np.int64)
        self.action = np.zeros(capacity, np.int64)
        self.reward = np.zeros(capacity, np.float32)
        self.agent = np.zeros(capacity, np.int64)
        self.treasures = np.zeros((capacity, NUM_COLOURS), np.int64)
        self.next_index = np.full(capacity, PENDING_SUCCESSOR, np.int64)
        self.size = 0
        self._next = 0
        self._last_rows: np.ndarray | None = None  # rows of the latest add (successor tracking)

    def add(self, ended: np.ndarray | None = None, **columns: np.ndarray) -> None:
        """Append one row per entry of ``columns`` (overwriting the oldest rows when full);
        ``ended`` (per row) is required with successor tracking."""
        count = len(columns["obs"])
        if count > self.capacity:
            raise ValueError(f"cannot add {count} states to a replay of capacity {self.capacity}")
        rows = (self._next + np.arange(count)) % self.capacity
        if self.track_successors:
            self._link_successors(rows, ended)
        for name, values in columns.items():
            getattr(self, name)[rows] = values
        if self.track_successors:  # after the links: a predecessor overwritten here is reset
            self.next_index[rows] = np.where(ended, NO_SUCCESSOR, PENDING_SUCCESSOR)
            self._last_rows = rows
        self._next = int((self._next + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)

    def _link_successors(self, rows: np.ndarray, ended: np.ndarray | None) -> None:
        if ended is None or len(ended) != len(rows):
            raise ValueError("a replay that tracks successors needs `ended` for every added state")
        previous = self._last_rows
        if previous is None:
            return
        if len(previous) != len(rows):
            raise ValueError(f"successor tracking needs one row per collector slot: got {len(rows)} after {len(previous)}")
        waiting = self.next_index[previous] == PENDING_SUCCESSOR
        self.next_index[previous[waiting]] = rows[waiting]

    def sample(self, rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
        """``count`` uniformly drawn rows. With successor tracking, the rows are drawn among
        those whose successor is known, and the batch is followed by the drawn rows' successor
        states, with a ``next_row`` column: the batch row of each row's successor, `NO_SUCCESSOR`
        where the episode ended, `NO_TRANSITION` on the appended successor rows themselves
        (they train every term but SF's TD term, whose target they have no successor for)."""
        if not self.track_successors:
            return self.rows(rng.integers(self.size, size=count))
        known = self.size - (0 if self._last_rows is None else len(self._last_rows))
        if known < 1:
            raise ValueError("no stored state has a known successor yet; collect another step first")
        oldest = (self._next - self.size) % self.capacity
        rows = (oldest + rng.integers(known, size=count)) % self.capacity
        successors = self.next_index[rows]
        has_next = successors >= 0
        batch = self.rows(np.concatenate([rows, successors[has_next]]))
        next_row = np.full(len(batch["obs"]), NO_TRANSITION, np.int64)
        next_row[:count] = NO_SUCCESSOR
        next_row[np.flatnonzero(has_next)] = count + np.arange(int(has_next.sum()))
        batch["next_row"] = next_row
        return batch

    def rows(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The stored columns at ``rows`` (indices into the buffer)."""
        return {name: getattr(self, name)[rows] for name in _COLUMNS}


def synpo_losses(net: torch.nn.Module, batch: dict[str, torch.Tensor], config: DirectConfig) -> dict[str, torch.Tensor]:
    """The network's named terms (SynPo's four for SynPo), their weighted sum and the accuracy,
    on one batch."""
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    action_weights = None
    if config.pick_weight != 1.0:
        action_weights = torch.ones(NUM_ACTIONS, device=out.logits.device)
        action_weights[PICK_UP] = config.pick_weight
    terms = imitation_losses(
        net,
        out,
        expert_actions=batch["expert_action"],
        executed_actions=batch["action"],
        rewards=batch["reward"],
        env_id=batch["env_id"],
        task_id=batch["task_id"],
        weights=LossWeights(config.l1, config.l2, config.l3, config.sf_td_weight),
        task_labels=batch.get("task_labels"),
        next_rows=batch.get("next_row"),
        action_weights=action_weights,
    )
    terms["accuracy"] = (out.logits.argmax(-1) == batch["expert_action"]).float().mean()
    return terms


def needs_successors(net: torch.nn.Module, config: DirectConfig) -> bool:
    """Whether ``net`` trains SF's TD term (so its batches must carry successor states)."""
    return SF_TD_LOSS in getattr(net, "LOSS_TERMS", SYNPO_LOSS_TERMS) and config.sf_td_weight > 0


def network_for(config: DirectConfig, spec: GridSpec) -> torch.nn.Module:
    """``config.model_config()``'s network for the gridworld ``spec`` (the one an exported
    checkpoint's RLModule rebuilds)."""
    sizes = config.model_config()
    return make_network(
        sizes.pop("network"), obs_shape=spec.obs_shape, num_actions=NUM_ACTIONS, num_envs=spec.num_envs, num_tasks=spec.num_tasks, **sizes
    )


COEFFICIENT_MODULES = ("env_embedding", "task_embedding", "alpha", "beta")  # what coefficient_weight_decay covers


def parameter_groups(net: torch.nn.Module, config: DirectConfig) -> list[dict]:
    """Adam parameter groups: `COEFFICIENT_MODULES` with ``coefficient_weight_decay``, the rest
    with ``weight_decay``."""
    coefficient_decay = config.weight_decay if config.coefficient_weight_decay is None else config.coefficient_weight_decay
    coefficient, other = [], []
    for name, parameter in net.named_parameters():
        (coefficient if name.split(".")[0] in COEFFICIENT_MODULES else other).append(parameter)
    return [
        {"params": other, "weight_decay": config.weight_decay},
        {"params": coefficient, "weight_decay": coefficient_decay},
    ]


def available_device(name: str) -> torch.device:
    """``name`` as a torch device, or a one-line error where this machine lacks it."""
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise ValueError(f"unknown torch device {name!r} ({error}); expected e.g. 'cpu' or 'cuda'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch finds no CUDA GPU here; use 'cpu'")
    return device


def _mean_or_nan(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


class DirectImitation:
    """Collect, store, update: one `step()` is a collection step plus an optimizer step."""

    def __init__(self, config: DirectConfig, seen_pairs: list[Pair], seed: int = 0) -> None:
        self.config = config
        self.device = available_device(config.device)
        self.precision = resolve_precision(config.precision, self.device)
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.env = BatchedGridWorld(
            config.num_collectors, pairs=seen_pairs, copy=False, absent_treasures=config.absent_treasures, **config.env_kwargs
        )
        self.obs, self.info = self.env.reset(seed=seed)
        spec = self.env.grid_spec
        self.net = network_for(config, spec).to(self.device)
        self.optimizer = torch.optim.Adam(parameter_groups(self.net, config), lr=config.lr, **fused_adam_options(self.net.parameters()))
        track = needs_successors(self.net, config)
        if track and config.replay_capacity <= config.num_collectors:
            raise ValueError(
                f"replay_capacity ({config.replay_capacity}) must exceed num_collectors "
                f"({config.num_collectors}) for SF's TD term (states need their successors stored)"
            )
        self.replay = StateReplay(config.replay_capacity, spec.obs_shape, track_successors=track)
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
                    obs = self._tensors({k: v[own] for k, v in self.obs.items()})
                    actions[own] = self.net(obs["obs"], obs["env_id"], obs["task_id"]).logits.argmax(-1).cpu().numpy()
                    self.net.train()
        if config.epsilon > 0:
            noisy = self.rng.random(n) < config.epsilon
            actions[noisy] = self.rng.integers(NUM_ACTIONS, size=int(noisy.sum()))
        state = {k: v.copy() for k, v in self.obs.items()}
        agent, treasures = self.env.state.agent.copy(), self.env.state.treasures.copy()
        self.obs, reward, terminated, truncated, self.info = self.env.step(actions)
        self.replay.add(
            ended=terminated | truncated,
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
        with training_autocast(self.precision, self.device):
            terms = synpo_losses(self.net, self._tensors(sample), self.config)
        self.optimizer.zero_grad()
        terms["total_loss"].backward()
        self.optimizer.step()
        self.updates += 1
        self.states_trained += len(sample["obs"])  # with successors: the appended rows too
        return {name: float(value.detach()) for name, value in terms.items()}

    def task_accuracy(self, count: int, rng: np.random.Generator) -> dict[str, float]:
        """Greedy agreement with the expert on ``count`` stored states, for every task of each
        state's environment, split by whether that (environment, task) pair is seen: the unseen
        figure measures, one step at a time, how well the coefficients compose for pairs never
        trained together (the expert is only queried here, never trained on). ``rng`` is separate
        from training's generator, so measuring does not change the run."""
        sample = self.replay.rows(rng.integers(self.replay.size, size=count))
        labels, possible = self.env.grid_spec.task_expert_actions(sample["env_id"], sample["agent"], sample["treasures"])
        was_training = self.net.training
        with torch.no_grad():
            self.net.eval()
            batch = self._tensors(sample)
            out = self.net(batch["obs"], batch["env_id"], batch["task_id"])
            greedy = self.net.task_logits(out.sa_features, batch["env_id"]).argmax(-1).cpu().numpy()
        self.net.train(was_training)
        correct = greedy == labels
        seen = self.seen_mask[sample["env_id"]]
        return {
            "seen_task_accuracy": _mean_or_nan(correct[possible & seen]),
            "unseen_task_accuracy": _mean_or_nan(correct[possible & ~seen]),
        }

    def _tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        return {name: torch.as_tensor(values).to(self.device, non_blocking=True) for name, values in arrays.items()}

    def set_lr(self, lr: float) -> None:
        """Learning rate of the next updates (schedules are driven by the caller)."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def describe(self) -> dict:
        return asdict(self.config)
