"""The loss terms, each its own function (plain torch; the learners only add them), and
`imitation_losses`, the one place that picks a network's terms and weighs them (shared by the
imitation and PPO learners).

SynPo (and MLP, MTL, ModuleNet, which keep SynPo's objective):
``L = CE(pi, a_expert) + l1 * MSE(r_hat(s, a_executed), r) + l2 * CE_env + l3 * CE_task``.

SF (successor features, Kulkarni et al. 2016, "Deep Successor Reinforcement Learning", trained
by Q-imitation as in the SynPo paper): ``L = CE(softmax(Q), a_expert) + l1 * (phi.w - r)^2 +
sf_td * ||phi(s, a) + gamma m(s', a') - m(s, a)||^2 + sf_reconstruction * ||g(psi_s) - s||^2``,
``Q = m.w`` (``sf_env`` has no reconstruction term).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

# Names of the terms (the keys the learners log).
POLICY_LOSS = "policy_loss"
REWARD_LOSS = "reward_loss"
ENV_DISENTANGLE_LOSS = "env_disentangle_loss"
TASK_DISENTANGLE_LOSS = "task_disentangle_loss"
SF_TD_LOSS = "sf_td_loss"
SF_RECONSTRUCTION_LOSS = "sf_reconstruction_loss"
MAZE_MAP_LOSS = "maze_map_loss"
IMITATION_KL_LOSS = "imitation_kl_loss"
TOTAL_LOSS = "total_loss"
SYNPO_LOSS_TERMS = frozenset({POLICY_LOSS, REWARD_LOSS, ENV_DISENTANGLE_LOSS, TASK_DISENTANGLE_LOSS})

# ``next_row`` markers: the episode ended after this row (no bootstrap), or the row is only
# there as another row's successor and takes no part in the TD term (its own successor is not
# in the batch).
EPISODE_END = -1
NO_TRANSITION = -2
SF_TD_WEIGHT = 1.0  # Kulkarni et al. weigh the SR Bellman loss like the reward loss: one
SF_RECONSTRUCTION_WEIGHT = 1.0  # and the autoencoder's loss too

# Loss inputs that read parameters beyond the network's forward pass, computed inside the
# module's training forward pass (`loss_inputs`) so that torch's DistributedDataParallel (RLlib's
# ``num_learners`` > 1) sees every parameter a loss uses; keys of `SynPoOutputs.extras`.
ENV_SCORES = "env_scores"  # (N, E) the disentanglement head's scores of every environment
TASK_SCORES = "task_scores"  # (N, T) the same for every task
TASK_LOGITS = "task_logits"  # (N, T, A) the policy's logits for every task of each state (relabelling)
RECONSTRUCTION = "reconstruction"  # (N, D) SF's decoder output g(psi_s)
OBSERVATION = "observation"  # (N, D) the decoder's target: the encoder's input, flattened
# Keys of `SynPoOutputs.extras` that networks fill in their forward pass.
STATE_FEATURES = "state_features"  # (N, F) the paper's SF: psi_s, the decoder's input
# (N,) the environment ids the outputs are conditioned on, where they are not the batch's
# (SynPo's ``env_dropout`` hides some)
CONDITIONED_ENV_ID = "conditioned_env_id"
# (N, colours) bool: which treasure colours remain, for networks whose policy reads the task's
# subgoal (SynPo's ``subgoal_embedding``); `task_logits` sets each task's subgoal from it.
REMAINING_COLOURS = "remaining_colours"
# SynPo's ``maze_map``: (N, cells) the wall logits of each row's maze, and (N, cells) the walls the
# newest frame shows (1 wall, 0 floor, `UNLABELLED_CELL` not shown), the target (`loss_inputs`).
MAZE_MAP_LOGITS = "maze_map_logits"
SHOWN_WALLS = "shown_walls"
UNLABELLED_CELL = -1.0
MAZE_MAP_WEIGHT = 1.0


def policy_loss(logits: torch.Tensor, expert_actions: torch.Tensor) -> torch.Tensor:
    """Behaviour cloning: cross-entropy of the policy against the expert's action."""
    return F.cross_entropy(logits, expert_actions)


def relabelled_policy_loss(task_logits: torch.Tensor, task_labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy against the expert's action for every task of a state that has a label
    (``task_labels[n, t] >= 0``: a seen pair for which the state is possible)."""
    mask = task_labels >= 0
    return F.cross_entropy(task_logits[mask], task_labels[mask].long())


def taken(values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """values[n, actions[n], ...] for every row n."""
    return values[torch.arange(len(actions), device=values.device), actions]


def reward_loss(
    predicted_rewards: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor
) -> torch.Tensor:
    """MSE between the predicted reward of the action taken and the reward received."""
    return F.mse_loss(taken(predicted_rewards, actions), rewards.float())


def disentangle_loss(scores: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of scores against all environment (or task) embeddings for the true id."""
    return F.cross_entropy(scores, ids)


def kl_to_reference(reference_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Mean over rows of KL(pi_reference || pi): zero where the policy equals the reference
    (e.g. the imitation policy PPO starts from), large where the policy drops an action the
    reference prefers."""
    reference_log_probs = F.log_softmax(reference_logits, dim=-1)
    log_probs = F.log_softmax(logits, dim=-1)
    return (reference_log_probs.exp() * (reference_log_probs - log_probs)).sum(-1).mean()


def maze_map_loss(logits: torch.Tensor, shown_walls: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of a maze's wall logits against the walls and floor a frame shows,
    averaged over the cells it shows (``shown_walls`` != `UNLABELLED_CELL`)."""
    shown = shown_walls != UNLABELLED_CELL
    return F.binary_cross_entropy_with_logits(logits[shown].float(), shown_walls[shown].float())


# --- successor features (Kulkarni et al. 2016) ---------------------------------------------


def q_imitation_loss(q_values: torch.Tensor, expert_actions: torch.Tensor) -> torch.Tensor:
    """Q-imitation: cross-entropy of ``softmax(Q(s, .))`` against the expert's action."""
    return policy_loss(q_values, expert_actions)


def sf_reward_loss(
    features: torch.Tensor, task_weights: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor
) -> torch.Tensor:
    """Reward regression ``r ≈ phi(s, a) . w_task`` on the action taken; ``features`` (N, A, K),
    ``task_weights`` (N, K)."""
    predicted = (taken(features, actions) * task_weights).sum(-1)
    return F.mse_loss(predicted, rewards.float())


def sf_td_loss(
    successor: torch.Tensor,
    features: torch.Tensor,
    actions: torch.Tensor,
    next_rows: torch.Tensor,
    policy_actions: torch.Tensor,
    discount: float,
) -> torch.Tensor:
    """The successor features' Bellman consistency ``m(s, a) ≈ phi(s, a) + gamma m(s', a')``.

    ``successor``, ``features``: (N, A, K); ``actions``: the action executed at each row (the
    transition s -a-> s'); ``next_rows[n]``: the row of s' in the batch, `EPISODE_END` at an
    episode's end (no bootstrap), `NO_TRANSITION` for rows left out; ``policy_actions[j]``: the
    action a' whose successor features bootstrap at row j (the expert's: m is the expert policy's
    successor features). The target is not differentiated (semi-gradient TD; Kulkarni et al. also
    keep the SR loss out of phi). The squared error is averaged over rows and feature dimensions.
    """
    included = next_rows != NO_TRANSITION
    has_next = next_rows >= 0
    rows = next_rows.clamp(min=0)
    bootstrap = taken(successor[rows], policy_actions[rows]) * has_next.unsqueeze(-1).to(successor.dtype)
    target = taken(features, actions) + discount * bootstrap
    return F.mse_loss(taken(successor, actions)[included], target.detach()[included])


def sf_reconstruction_loss(reconstruction: torch.Tensor, observation: torch.Tensor) -> torch.Tensor:
    """Kulkarni et al.'s autoencoder term: the mean squared error of the decoder's output
    against the (flattened, [0, 1]-scaled) observation the state feature was computed from."""
    return F.mse_loss(reconstruction, observation)


# --- weighting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LossWeights:
    """Weights of the terms besides the policy term (weight 1): the paper's l1, l2, l3 and
    SF's TD and reconstruction terms and SynPo's ``maze_map`` term."""

    l1: float = 0.01  # reward
    l2: float = 0.1  # environment disentanglement
    l3: float = 0.001  # task disentanglement
    sf_td: float = SF_TD_WEIGHT
    sf_reconstruction: float = SF_RECONSTRUCTION_WEIGHT
    maze_map: float = MAZE_MAP_WEIGHT

    def by_term(self) -> dict[str, float]:
        return {
            POLICY_LOSS: 1.0,
            REWARD_LOSS: self.l1,
            ENV_DISENTANGLE_LOSS: self.l2,
            TASK_DISENTANGLE_LOSS: self.l3,
            SF_TD_LOSS: self.sf_td,
            SF_RECONSTRUCTION_LOSS: self.sf_reconstruction,
            MAZE_MAP_LOSS: self.maze_map,
        }


def synpo_total(terms: dict[str, torch.Tensor], weights: LossWeights) -> torch.Tensor:
    """The weighted sum of the named terms present in ``terms`` (a network trains only its own
    terms, e.g. MTL has no environment disentanglement); other keys are ignored."""
    by_term = weights.by_term()
    present = [by_term[name] * value for name, value in terms.items() if name in by_term]
    return torch.stack(present).sum()


def every_task_logits(net: torch.nn.Module, out, env_id: torch.Tensor) -> torch.Tensor:
    """(N, T, A): ``net``'s policy logits for every task of each state, in the environment the
    outputs were conditioned on (and, where the network reads subgoals, with the treasures that
    remain in each state)."""
    conditions = {REMAINING_COLOURS: out.extras[REMAINING_COLOURS]} if REMAINING_COLOURS in out.extras else {}
    return net.task_logits(out.sa_features, out.extras.get(CONDITIONED_ENV_ID, env_id), **conditions)


def loss_inputs(
    net: torch.nn.Module,
    out,
    state,
    env_id: torch.Tensor,
    actions: torch.Tensor | None,
    relabelled: bool,
) -> dict[str, torch.Tensor]:
    """The `imitation_losses` inputs beyond ``out`` that ``net``'s terms need: the disentanglement
    scores of the state-action features of ``actions`` (the expert's, or PPO's taken actions),
    SF's reconstruction of ``state`` (the network's input) and its target, the walls ``state``'s
    newest frame shows (SynPo's ``maze_map``), and, for ``relabelled`` batches, the policy's
    logits for every task."""
    names = getattr(net, "LOSS_TERMS", SYNPO_LOSS_TERMS)
    inputs = {}
    if relabelled:
        inputs[TASK_LOGITS] = every_task_logits(net, out, env_id)
    if actions is not None and names & {ENV_DISENTANGLE_LOSS, TASK_DISENTANGLE_LOSS}:
        inputs[ENV_SCORES], inputs[TASK_SCORES] = net.disentangle_scores(
            taken(out.sa_features, actions.long())
        )
    if SF_RECONSTRUCTION_LOSS in names:
        inputs[RECONSTRUCTION] = net.reconstruct(out.extras[STATE_FEATURES])
        inputs[OBSERVATION] = net.reconstruction_target(state)
    if MAZE_MAP_LOSS in names:
        inputs[SHOWN_WALLS] = net.map_reader.shown_walls(state)
    return inputs


def imitation_losses(
    net: torch.nn.Module,
    out,
    *,
    expert_actions: torch.Tensor,
    executed_actions: torch.Tensor,
    rewards: torch.Tensor,
    env_id: torch.Tensor,
    task_id: torch.Tensor,
    weights: LossWeights,
    task_labels: torch.Tensor | None = None,
    next_rows: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """The terms ``net`` trains (its ``LOSS_TERMS``) on one batch, and their weighted
    ``total_loss``.

    ``out`` is ``net``'s `SynPoOutputs` on the batch. With ``task_labels`` (relabelling), the
    policy term covers every labelled task of each state (``net.task_logits``). SF's TD term
    needs ``next_rows`` (see `sf_td_loss`) unless its weight is 0. Inputs that `loss_inputs`
    put into ``out.extras`` are used from there, the others computed here, except those that read
    the network's input (SF's reconstruction and its target, the walls for ``maze_map``):
    ``loss_inputs`` only.
    """
    names = getattr(net, "LOSS_TERMS", SYNPO_LOSS_TERMS)
    if task_labels is not None:
        task_logits = out.extras.get(TASK_LOGITS)
        if task_logits is None:
            task_logits = every_task_logits(net, out, env_id)
        terms = {POLICY_LOSS: relabelled_policy_loss(task_logits, task_labels)}
    else:
        terms = {POLICY_LOSS: policy_loss(out.logits, expert_actions)}
    if SF_TD_LOSS in names:  # successor features: the reward and TD terms read phi, m and w
        phi, w = out.extras["features"], out.extras["task_weights"]
        terms[REWARD_LOSS] = sf_reward_loss(phi, w, executed_actions, rewards)
        if next_rows is not None:
            terms[SF_TD_LOSS] = sf_td_loss(
                out.sa_features, phi, executed_actions, next_rows.long(), expert_actions, net.discount
            )
        elif weights.sf_td != 0:
            raise ValueError(
                "the SF network's TD term needs the batch's next rows ('next_row': the row of each "
                "step's next state in the batch, -1 at an episode's end); provide them or set the "
                "SF TD weight (sf_td_weight) to 0"
            )
    else:
        terms[REWARD_LOSS] = reward_loss(out.reward, executed_actions, rewards)
    if SF_RECONSTRUCTION_LOSS in names:
        if OBSERVATION not in out.extras:
            raise ValueError(
                "the SF network's reconstruction term needs the observation and its reconstruction "
                "in the outputs' extras: add `loss_inputs(net, out, state, ...)` to them first"
            )
        terms[SF_RECONSTRUCTION_LOSS] = sf_reconstruction_loss(
            out.extras[RECONSTRUCTION], out.extras[OBSERVATION]
        )
    if MAZE_MAP_LOSS in names:
        if SHOWN_WALLS not in out.extras:
            raise ValueError(
                "the maze_map term needs the walls each frame shows in the outputs' extras: add "
                "`loss_inputs(net, out, state, ...)` to them first"
            )
        terms[MAZE_MAP_LOSS] = maze_map_loss(out.extras[MAZE_MAP_LOGITS], out.extras[SHOWN_WALLS])
    if names & {ENV_DISENTANGLE_LOSS, TASK_DISENTANGLE_LOSS}:
        if ENV_SCORES in out.extras:
            env_scores, task_scores = out.extras[ENV_SCORES], out.extras[TASK_SCORES]
        else:
            env_scores, task_scores = net.disentangle_scores(taken(out.sa_features, expert_actions))
        if ENV_DISENTANGLE_LOSS in names:
            terms[ENV_DISENTANGLE_LOSS] = disentangle_loss(env_scores, env_id)
        if TASK_DISENTANGLE_LOSS in names:
            terms[TASK_DISENTANGLE_LOSS] = disentangle_loss(task_scores, task_id)
    terms[TOTAL_LOSS] = synpo_total(terms, weights)
    return terms
