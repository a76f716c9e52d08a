"""The paper's baselines (MLP, MTL, ModuleNet, SF) and SF conditioned on the environment as
networks of the same family: shapes, the SF loss terms by hand, MTL's and SF's blindness to
environments, ModuleNet's composition, unit-length embeddings, the factory."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from rllib_synpo.losses import (
    NO_TRANSITION,
    OBSERVATION,
    POLICY_LOSS,
    RECONSTRUCTION,
    REWARD_LOSS,
    SF_RECONSTRUCTION_LOSS,
    SF_TD_LOSS,
    TASK_DISENTANGLE_LOSS,
    TOTAL_LOSS,
    LossWeights,
    imitation_losses,
    loss_inputs,
    q_imitation_loss,
    sf_reconstruction_loss,
    sf_reward_loss,
    sf_td_loss,
    synpo_total,
)
from rllib_synpo.networks import NETWORKS, make_network
from rllib_synpo.networks.factory import OPTION_DEFAULTS, OPTION_NETWORKS

OBS_SHAPE = (12, 16, 16)
NUM_ACTIONS, NUM_ENVS, NUM_TASKS = 5, 3, 4
TINY = {
    "feature_dim": 16,
    "embedding_dim": 8,
    "basis_dim": 8,
    "hidden_dim": 16,
    "encoder_kwargs": {"width": 4},
}
KINDS = sorted(NETWORKS)


def _net(kind, **sizes):
    torch.manual_seed(0)
    return make_network(
        kind,
        obs_shape=OBS_SHAPE,
        num_actions=NUM_ACTIONS,
        num_envs=NUM_ENVS,
        num_tasks=NUM_TASKS,
        **{**TINY, **sizes},
    )


def _batch(n=8):
    g = torch.Generator().manual_seed(0)
    return {
        "obs": torch.randint(0, 256, (n, *OBS_SHAPE), dtype=torch.uint8, generator=g),
        "env_id": torch.randint(0, NUM_ENVS, (n,), generator=g),
        "task_id": torch.randint(0, NUM_TASKS, (n,), generator=g),
        "expert_action": torch.randint(0, NUM_ACTIONS, (n,), generator=g),
        "action": torch.randint(0, NUM_ACTIONS, (n,), generator=g),
        "reward": torch.randn(n, generator=g),
        # two episodes of n / 2 steps each
        "next_row": torch.tensor([i + 1 if (i + 1) % (n // 2) else -1 for i in range(n)]),
    }


def _outputs(net, batch):
    """The network's outputs with the loss inputs that the RLModule's training forward adds."""
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    out.extras.update(loss_inputs(net, out, batch["obs"], batch["env_id"], batch["expert_action"], False))
    return out


def _loss_kwargs(batch, weights=None):
    """`imitation_losses`' batch arguments for a `_batch`."""
    return {
        "expert_actions": batch["expert_action"],
        "executed_actions": batch["action"],
        "rewards": batch["reward"],
        "env_id": batch["env_id"],
        "task_id": batch["task_id"],
        "weights": weights or LossWeights(),
        "next_rows": batch["next_row"],
    }


def _terms(net, batch, weights=None, **overrides):
    return imitation_losses(net, _outputs(net, batch), **{**_loss_kwargs(batch, weights), **overrides})


def _grads(net, loss):
    net.zero_grad()
    loss.backward()
    return {name for name, p in net.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}


# --- every kind ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_network_has_the_synpo_interface(kind):
    net, batch = _net(kind), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    n = len(batch["obs"])
    assert out.logits.shape == (n, NUM_ACTIONS) and out.reward.shape == (n, NUM_ACTIONS)
    assert out.sa_features.shape[:2] == (n, NUM_ACTIONS) and out.value.shape == (n,)
    assert torch.all(out.value == 0)  # PPO starts from the imitation policy's values
    task_logits = net.task_logits(out.sa_features, batch["env_id"])
    assert task_logits.shape == (n, NUM_TASKS, NUM_ACTIONS)
    assert torch.allclose(task_logits[torch.arange(n), batch["task_id"]], out.logits, atol=1e-5)
    assert isinstance(net.env_embedding, torch.nn.Embedding) and net.env_embedding.num_embeddings == NUM_ENVS
    assert (
        isinstance(net.task_embedding, torch.nn.Embedding) and net.task_embedding.num_embeddings == NUM_TASKS
    )


@pytest.mark.parametrize("kind", KINDS)
def test_each_network_trains_exactly_its_terms(kind):
    net = _net(kind)
    terms = _terms(net, _batch(), task_labels=None)
    assert set(terms) == set(net.LOSS_TERMS) | {TOTAL_LOSS}
    assert torch.isfinite(terms[TOTAL_LOSS])
    assert _grads(net, terms[TOTAL_LOSS])


def test_which_terms_each_baseline_trains():
    assert NETWORKS["mlp"].LOSS_TERMS == NETWORKS["synpo"].LOSS_TERMS
    assert NETWORKS["mtl"].LOSS_TERMS == {POLICY_LOSS, REWARD_LOSS, TASK_DISENTANGLE_LOSS}
    assert NETWORKS["modulenet"].LOSS_TERMS == {POLICY_LOSS, REWARD_LOSS}
    assert NETWORKS["sf"].LOSS_TERMS == {POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS, SF_RECONSTRUCTION_LOSS}
    assert NETWORKS["sf_env"].LOSS_TERMS == {POLICY_LOSS, REWARD_LOSS, SF_TD_LOSS}


@pytest.mark.parametrize("kind", KINDS)
def test_relabelled_policy_term_works_for_every_network(kind):
    net, batch = _net(kind), _batch()
    labels = torch.full((len(batch["obs"]), NUM_TASKS), -1)
    labels[:, 0] = batch["expert_action"]
    terms = _terms(net, batch, task_labels=labels)
    assert POLICY_LOSS in terms and torch.isfinite(terms[POLICY_LOSS])


def test_env_dropout_relabelled_term_reads_the_environments_the_outputs_were_conditioned_on():
    from rllib_synpo.losses import CONDITIONED_ENV_ID, TASK_LOGITS

    torch.manual_seed(0)
    net, batch = _net("synpo", env_dropout=0.5), _batch(n=16)
    labels = torch.full((16, NUM_TASKS), -1)
    labels[:, 0] = batch["expert_action"]
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    conditioned = out.extras[CONDITIONED_ENV_ID]
    assert not torch.equal(conditioned, batch["env_id"])
    inputs = loss_inputs(net, out, batch["obs"], batch["env_id"], batch["expert_action"], relabelled=True)
    assert torch.equal(inputs[TASK_LOGITS], net.task_logits(out.sa_features, conditioned))
    assert not torch.allclose(inputs[TASK_LOGITS], net.task_logits(out.sa_features, batch["env_id"]))
    out.extras.update(inputs)
    terms = imitation_losses(net, out, **_loss_kwargs(batch), task_labels=labels)
    assert "unknown_env" in _grads(net, terms[TOTAL_LOSS])


def test_factory_names_a_bad_kind_and_the_choices():
    with pytest.raises(
        ValueError,
        match=r"network must be one of \['mlp', 'modulenet', 'mtl', 'sf', 'sf_env', 'synpo'\], got 'resnet'",
    ):
        _net("resnet")


# --- MLP -------------------------------------------------------------------------------------


def test_mlp_classifiers_read_the_state_feature():
    net, batch = _net("mlp"), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    psi = net.encoder(batch["obs"])
    assert torch.equal(out.sa_features[:, 3], psi)
    env_scores, task_scores = net.disentangle_scores(psi)
    assert env_scores.shape == (len(psi), NUM_ENVS) and task_scores.shape == (len(psi), NUM_TASKS)
    inputs = torch.cat([psi, net.env_embedding(batch["env_id"]), net.task_embedding(batch["task_id"])], -1)
    assert torch.allclose(out.logits, net.policy_head(inputs), atol=1e-6)


# --- MTL -------------------------------------------------------------------------------------


def test_mtl_ignores_the_environment_embedding():
    net, batch = _net("mtl"), _batch()
    before = net(batch["obs"], batch["env_id"], batch["task_id"])
    with torch.no_grad():
        net.env_embedding.weight.normal_()
        net.value_head.weight.normal_()  # the value reads [psi; e_task; 0] as well
    after = net(batch["obs"], batch["env_id"], batch["task_id"])
    other_envs = net(batch["obs"], (batch["env_id"] + 1) % NUM_ENVS, batch["task_id"])
    for changed in (after, other_envs):
        assert torch.equal(changed.logits, before.logits) and torch.equal(changed.reward, before.reward)
    assert torch.equal(other_envs.value, after.value)
    with torch.no_grad():
        net.task_embedding.weight.normal_()
    assert not torch.allclose(net(batch["obs"], batch["env_id"], batch["task_id"]).logits, before.logits)


def test_mtl_has_no_environment_classifier():
    net, batch = _net("mtl"), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    env_scores, task_scores = net.disentangle_scores(out.sa_features[:, 0])
    assert torch.all(env_scores == 0) and task_scores.shape == (len(batch["obs"]), NUM_TASKS)
    assert net.env_head is None
    assert "env_embedding.weight" not in _grads(net, _terms(net, batch)[TOTAL_LOSS])


# --- ModuleNet -------------------------------------------------------------------------------


def _every_env(batch):
    """Each state of the batch once per environment, same task."""
    n = len(batch["obs"])
    return (
        batch["obs"].repeat(NUM_ENVS, 1, 1, 1),
        torch.arange(NUM_ENVS).repeat_interleave(n),
        batch["task_id"].repeat(NUM_ENVS),
    )


def test_modulenet_composes_the_pairs_modules():
    net, batch = _net("modulenet"), _batch()
    n = len(batch["obs"])
    obs, env_id, task_id = _every_env(batch)
    before = net(obs, env_id, task_id).logits.view(NUM_ENVS, n, NUM_ACTIONS)
    with torch.no_grad():
        net.env_embedding.weight[0] = net.env_embedding.weight[1]  # env 0 gets env 1's module
    after = net(obs, env_id, task_id).logits.view(NUM_ENVS, n, NUM_ACTIONS)
    assert not torch.allclose(after[0], before[0])
    assert torch.allclose(after[0], before[1], atol=1e-6)  # env 0's policies are now env 1's
    assert torch.equal(after[1:], before[1:])  # every other environment's policies unchanged
    tasks_before = net.task_logits(net(obs, env_id, task_id).sa_features, env_id)
    with torch.no_grad():
        net.task_embedding.weight[2].normal_()  # a new module for task 2: only its policies change
    tasks_after = net.task_logits(net(obs, env_id, task_id).sa_features, env_id)
    others = [t for t in range(NUM_TASKS) if t != 2]
    assert torch.equal(tasks_after[:, others], tasks_before[:, others])
    assert not torch.allclose(tasks_after[:, 2], tasks_before[:, 2])


def test_modulenet_modules_are_the_embedding_rows():
    net = _net("modulenet")
    f, k, outputs = TINY["feature_dim"], TINY["basis_dim"], 2 * NUM_ACTIONS + 1
    assert net.task_embedding.embedding_dim == f * k + k
    assert net.env_embedding.embedding_dim == k * outputs + outputs
    with torch.no_grad():
        net.env_embedding.weight.fill_(1.0)
    net.init_module_rows("env", start=1)
    assert (
        torch.all(net.env_embedding.weight[0] == 1.0) and net.env_embedding.weight[1:].abs().max() <= k**-0.5
    )
    with pytest.raises(ValueError, match="'robot'"):
        net.init_module_rows("robot")
    with pytest.raises(NotImplementedError, match="ModuleNet"):
        net.disentangle_scores(torch.zeros(2, f))


# --- SF ----------------------------------------------------------------------------------------


def test_q_imitation_is_cross_entropy_of_softmax_q():
    q = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])
    assert q_imitation_loss(q, torch.tensor([0, 1])).item() == pytest.approx((math.log(2) + math.log(4)) / 2)


def test_sf_reward_loss_regresses_phi_dot_w():
    features = torch.tensor([[[1.0, 0.0], [0.0, 2.0]], [[3.0, 1.0], [1.0, 1.0]]])  # (N=2, A=2, K=2)
    w = torch.tensor([[1.0, 1.0], [2.0, 0.0]])
    # row 0 takes action 1: phi.w = 2, r = 1 -> 1; row 1 takes action 0: phi.w = 6, r = 4 -> 4
    loss = sf_reward_loss(features, w, torch.tensor([1, 0]), torch.tensor([1.0, 4.0]))
    assert loss.item() == pytest.approx((1 + 4) / 2)


def test_sf_td_loss_by_hand():
    # N=3 rows, A=2, K=1; rows 0 -> 1 -> 2 is one episode, 2 is its last step.
    successor = torch.tensor([[[1.0], [2.0]], [[3.0], [4.0]], [[5.0], [6.0]]], requires_grad=True)
    features = torch.tensor([[[0.5], [0.0]], [[0.0], [1.0]], [[2.0], [0.0]]], requires_grad=True)
    actions, policy_actions = torch.tensor([0, 1, 0]), torch.tensor([1, 0, 1])
    loss = sf_td_loss(successor, features, actions, torch.tensor([1, 2, -1]), policy_actions, discount=0.5)
    # row 0: m = 1, target 0.5 + 0.5 * m(1, a'=0) = 0.5 + 1.5 = 2 -> 1
    # row 1: m = 4, target 1.0 + 0.5 * m(2, a'=1) = 1 + 3 = 4 -> 0
    # row 2: m = 5, target 2.0 (episode end, no bootstrap) -> 9
    assert loss.item() == pytest.approx((1 + 0 + 9) / 3)
    loss.backward()
    assert features.grad is None  # the target is not differentiated
    expected = torch.zeros(3, 2, 1)
    expected[0, 0], expected[2, 0] = 2 * (1 - 2) / 3, 2 * (5 - 2) / 3  # only m(s, a_taken)
    assert torch.allclose(successor.grad, expected)
    # rows marked NO_TRANSITION (successors appended to a batch) are left out of the mean
    partial = sf_td_loss(
        successor, features, actions, torch.tensor([1, NO_TRANSITION, -1]), policy_actions, discount=0.5
    )
    assert partial.item() == pytest.approx((1 + 9) / 2)


def test_sf_reconstruction_loss_is_the_mean_squared_error():
    reconstruction = torch.tensor([[0.0, 1.0], [0.5, 0.5]])
    observation = torch.tensor([[1.0, 1.0], [0.5, 0.0]])
    assert sf_reconstruction_loss(reconstruction, observation).item() == pytest.approx((1 + 0.25) / 4)


@pytest.mark.parametrize("kind", ["sf", "sf_env"])
def test_sf_terms_from_the_network_and_their_weights(kind):
    net, batch = _net(kind), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    phi, w = out.extras["features"], out.extras["task_weights"]
    weights = LossWeights(l1=0.5, sf_td=2.0, sf_reconstruction=3.0)
    terms = _terms(net, batch, weights)
    assert terms[POLICY_LOSS].item() == pytest.approx(
        q_imitation_loss(out.logits, batch["expert_action"]).item(), rel=1e-6
    )
    assert terms[REWARD_LOSS].item() == pytest.approx(
        sf_reward_loss(phi, w, batch["action"], batch["reward"]).item(), rel=1e-6
    )
    td = sf_td_loss(
        out.sa_features, phi, batch["action"], batch["next_row"], batch["expert_action"], net.discount
    )
    assert terms[SF_TD_LOSS].item() == pytest.approx(td.item(), rel=1e-6)
    expected = terms[POLICY_LOSS] + 0.5 * terms[REWARD_LOSS] + 2.0 * terms[SF_TD_LOSS]
    if kind == "sf":  # Kulkarni et al.'s autoencoder: psi_s decoded back to the [0, 1] observation
        observation = batch["obs"].float().flatten(1) / 255.0
        reconstruction = sf_reconstruction_loss(net.decoder(net.encoder(batch["obs"])), observation)
        assert terms[SF_RECONSTRUCTION_LOSS].item() == pytest.approx(reconstruction.item(), rel=1e-6)
        expected = expected + 3.0 * terms[SF_RECONSTRUCTION_LOSS]
    else:
        assert SF_RECONSTRUCTION_LOSS not in terms and not hasattr(net, "decoder")
    assert terms[TOTAL_LOSS].item() == pytest.approx(expected.item(), rel=1e-6)
    without_td = synpo_total(terms, LossWeights(l1=0.5, sf_td=0.0, sf_reconstruction=0.0))
    assert without_td.item() == pytest.approx(
        (terms[POLICY_LOSS] + 0.5 * terms[REWARD_LOSS]).item(), rel=1e-6
    )
    # Without next rows the TD term can only be left out with a zero weight.
    with pytest.raises(ValueError, match="next_row"):
        _terms(net, batch, next_rows=None)
    no_td = _terms(net, batch, LossWeights(sf_td=0.0), next_rows=None)
    assert SF_TD_LOSS not in no_td


def test_sf_reconstruction_is_built_for_the_loss_only():
    """Acting (the forward pass) builds neither the reconstruction nor its target; the loss
    reads both from `loss_inputs` and names it when they are missing."""
    net, batch = _net("sf"), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    assert OBSERVATION not in out.extras and RECONSTRUCTION not in out.extras
    with pytest.raises(ValueError, match="loss_inputs"):
        imitation_losses(net, out, **_loss_kwargs(batch))
    inputs = loss_inputs(net, out, batch["obs"], batch["env_id"], None, relabelled=False)
    assert torch.equal(inputs[OBSERVATION], batch["obs"].float().flatten(1) / 255.0)
    assert inputs[RECONSTRUCTION].shape == inputs[OBSERVATION].shape


def test_the_papers_sf_never_reads_the_environment():
    """The paper's SF "lacks the capability of capturing the environmental priors": no output
    depends on the environment id or embedding; sf_env's successor features do."""
    net, batch = _net("sf"), _batch()
    before = net(batch["obs"], batch["env_id"], batch["task_id"])
    with torch.no_grad():
        net.env_embedding.weight.normal_()
        net.value_head.weight.normal_()
    after = net(batch["obs"], batch["env_id"], batch["task_id"])
    other_envs = net(batch["obs"], (batch["env_id"] + 1) % NUM_ENVS, batch["task_id"])
    for changed in (after, other_envs):
        assert torch.equal(changed.logits, before.logits) and torch.equal(changed.reward, before.reward)
        assert torch.equal(changed.sa_features, before.sa_features)
    assert torch.equal(other_envs.value, after.value)
    assert "env_embedding.weight" not in _grads(net, _terms(net, batch)[TOTAL_LOSS])
    conditioned = _net("sf_env")
    out = conditioned(batch["obs"], batch["env_id"], batch["task_id"])
    moved = conditioned(batch["obs"], (batch["env_id"] + 1) % NUM_ENVS, batch["task_id"])
    assert not torch.allclose(out.logits, moved.logits)


def test_sf_gradients_reach_the_expected_parameters():
    net, batch = _net("sf"), _batch()
    policy = _grads(net, _terms(net, batch)[POLICY_LOSS])
    assert {
        "successor.0.weight",
        "task_weights.weight",
        "task_embedding.weight",
        "encoder.project.0.weight",
    } <= (policy)
    assert not policy & {"feature_basis", "env_embedding.weight", "decoder.0.weight"}
    assert not any(name.startswith("value_head") for name in policy)
    reward = _grads(net, _terms(net, batch)[REWARD_LOSS])
    assert {"feature_basis", "task_weights.weight", "task_embedding.weight"} <= reward
    assert not any(name.startswith(("successor", "env_embedding", "decoder")) for name in reward)
    td = _grads(net, _terms(net, batch)[SF_TD_LOSS])
    assert "successor.0.weight" in td
    assert not td & {"feature_basis", "task_weights.weight", "task_embedding.weight", "env_embedding.weight"}
    reconstruction = _grads(net, _terms(net, batch)[SF_RECONSTRUCTION_LOSS])
    assert {"decoder.0.weight", "decoder.2.weight", "encoder.project.0.weight"} <= reconstruction
    assert not any(name.startswith(("successor", "task", "env", "feature_basis")) for name in reconstruction)
    conditioned = _net("sf_env")
    assert "env_embedding.weight" in _grads(conditioned, _terms(conditioned, batch)[SF_TD_LOSS])
    for kind in ("sf", "sf_env"):
        with pytest.raises(NotImplementedError, match="Kulkarni"):
            _net(kind).disentangle_scores(torch.zeros(2, TINY["basis_dim"]))


# --- unit-length embeddings -------------------------------------------------------------------


@pytest.mark.parametrize("kind", OPTION_NETWORKS["normalize_embeddings"])
def test_normalize_embeddings_makes_every_output_blind_to_the_embeddings_length(kind):
    net, batch = _net(kind, normalize_embeddings=True), _batch()
    before = net(batch["obs"], batch["env_id"], batch["task_id"])
    before_tasks = net.task_logits(before.sa_features, batch["env_id"])
    with torch.no_grad():  # rescale each row by its own positive factor
        for table in (net.env_embedding, net.task_embedding):
            table.weight.mul_(torch.rand(table.num_embeddings, 1) * 5 + 0.1)
    after = net(batch["obs"], batch["env_id"], batch["task_id"])
    assert torch.allclose(after.logits, before.logits, atol=1e-5)
    assert torch.allclose(after.reward, before.reward, atol=1e-5)
    assert torch.allclose(net.task_logits(after.sa_features, batch["env_id"]), before_tasks, atol=1e-5)
    plain = _net(kind)
    plain_before = plain(batch["obs"], batch["env_id"], batch["task_id"]).logits
    with torch.no_grad():
        plain.task_embedding.weight.mul_(3.0)
    assert not torch.allclose(plain(batch["obs"], batch["env_id"], batch["task_id"]).logits, plain_before)


# --- the RLlib module computes the network's own terms ---------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_rl_module_builds_every_network_and_its_learner_terms_are_the_networks(kind):
    import gymnasium as gym
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import (
        EXECUTED_ACTION,
        EXPERT_ACTION,
        NEXT_ROW,
        synpo_loss_terms,
    )
    from rllib_synpo.losses import LossWeights, imitation_losses
    from rllib_synpo.rl_module import SynPoTorchRLModule

    obs_space = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0, 255, OBS_SHAPE, np.uint8),
            "env_id": gym.spaces.Discrete(NUM_ENVS),
            "task_id": gym.spaces.Discrete(NUM_TASKS),
        }
    )
    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=SynPoTorchRLModule,
        observation_space=obs_space,
        action_space=gym.spaces.Discrete(NUM_ACTIONS),
        model_config={"network": kind, **TINY},
    ).build()
    assert isinstance(module.net, NETWORKS[kind])
    raw = _batch()
    batch = {
        Columns.OBS: {"obs": raw["obs"], "env_id": raw["env_id"], "task_id": raw["task_id"]},
        EXPERT_ACTION: raw["expert_action"],
        EXECUTED_ACTION: raw["action"],
        Columns.REWARDS: raw["reward"],
        NEXT_ROW: raw["next_row"],
    }
    learner_terms = synpo_loss_terms(module, batch, module.forward_train(batch))
    out = _outputs(module.net, raw)
    net_terms = imitation_losses(
        module.net,
        out,
        expert_actions=raw["expert_action"],
        executed_actions=raw["action"],
        rewards=raw["reward"],
        env_id=raw["env_id"],
        task_id=raw["task_id"],
        weights=LossWeights(),
        next_rows=raw["next_row"],
    )
    assert set(learner_terms) == set(net_terms)
    for name, value in learner_terms.items():
        assert value.item() == pytest.approx(net_terms[name].item(), rel=1e-6), name


def test_model_config_names_a_bad_network():
    from rllib_synpo.rl_module import DEFAULT_MODEL_CONFIG, check_model_config

    assert DEFAULT_MODEL_CONFIG["network"] == "synpo"
    with pytest.raises(
        ValueError,
        match=r"network must be one of "
        r"\['mlp', 'modulenet', 'mtl', 'sf', 'sf_env', 'synpo'\], got 'transformer'",
    ):
        check_model_config({"network": "transformer"})


def test_coefficient_options_reach_synpo_and_are_refused_by_networks_without_them():
    import synpo_envs

    from rllib_synpo.networks.synpo import ProductCoefficients
    from rllib_synpo.rl_module import check_model_config, network_from_spaces

    env = synpo_envs.GridWorld()
    net = network_from_spaces(
        env.observation_space,
        env.action_space,
        {"coefficient_function": "product", "coefficient_dropout": 0.5, "normalize_embeddings": True},
    )
    assert (
        isinstance(net.alpha, ProductCoefficients)
        and net.coefficient_dropout.p == 0.5
        and net.normalize_embeddings
    )
    assert "coefficient_dropout" not in check_model_config({"network": "mlp"})
    with pytest.raises(
        ValueError, match=r"'coefficient_dropout' applies to networks \['synpo', 'mtl'\] only, not 'sf'"
    ):
        check_model_config({"network": "sf", "coefficient_dropout": 0.3})
    for kind in ("mlp", "sf", "sf_env"):
        assert check_model_config({"network": kind, "normalize_embeddings": True})["normalize_embeddings"]
    with pytest.raises(ValueError, match=r"'normalize_embeddings' applies to .* only, not 'modulenet'"):
        check_model_config({"network": "modulenet", "normalize_embeddings": True})
    with pytest.raises(ValueError, match=r"coefficient_function must be one of \[.*\], got 'sum'"):
        check_model_config({"coefficient_function": "sum"})
    with pytest.raises(ValueError, match=r"coefficient_dropout must be a number in \[0, 1\), got 1.5"):
        check_model_config({"coefficient_dropout": 1.5})
    assert check_model_config({"env_dropout": 0.25})["env_dropout"] == 0.25
    with pytest.raises(ValueError, match=r"env_dropout must be a number in \[0, 1\) or a schedule .*, got 1"):
        check_model_config({"env_dropout": 1})
    schedule = [[0, 0.0], [300, 0.0], [600, 0.25]]
    assert check_model_config({"env_dropout": schedule})["env_dropout"] == schedule
    for bad in ([[0, 0.0], [300, 1.0]], [[10, 0.25]], [[0, 0.1], [300]], [[0, 0.1], [-5, 0.2]]):
        with pytest.raises(ValueError, match=rf"env_dropout must be .*, got {re.escape(repr(bad))}"):
            check_model_config({"env_dropout": bad})
    with pytest.raises(ValueError, match=r"'env_dropout' applies to networks \['synpo'\] only, not 'mtl'"):
        check_model_config({"network": "mtl", "env_dropout": 0.1})
    with pytest.raises(ValueError, match=r"normalize_embeddings must be true or false, got 'yes'"):
        check_model_config({"normalize_embeddings": "yes"})


@pytest.mark.parametrize("kind", ["mlp", "mtl", "modulenet", "sf", "sf_env"])
def test_tuned_examples_differ_from_synpo_only_in_the_network(kind):
    import yaml

    from rllib_synpo.rl_module import check_model_config

    examples = Path(__file__).resolve().parents[2] / "tuned_examples"
    (synpo,) = yaml.safe_load((examples / "synpo_gridworld.yaml").read_text()).values()
    ((name, baseline),) = yaml.safe_load((examples / f"{kind}_gridworld.yaml").read_text()).items()
    assert name == f"{kind}-gridworld"
    synpo_model = synpo["config"].pop("model_config")
    # SynPo's options that apply to the baseline carry over; the others are left out.
    synpo_model = {
        k: v for k, v in synpo_model.items() if k not in OPTION_DEFAULTS or kind in OPTION_NETWORKS[k]
    }
    assert baseline["config"].pop("model_config") == {**synpo_model, "network": kind}
    assert baseline == synpo
    check_model_config({"network": kind})


@pytest.mark.parametrize("kind", KINDS)
def test_the_value_loss_trains_the_value_head_and_not_the_policy_features(kind):
    net, batch = _net(kind), _batch()
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    (out.value - batch["reward"]).square().mean().backward()
    reached = {name for name, p in net.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    if kind == "modulenet":  # its value is an output of its environment modules (SynPoOutputs.value)
        assert "env_embedding.weight" in reached
    else:
        assert reached == {"value_head.weight", "value_head.bias"}


@pytest.mark.parametrize("key", ["feature_dim", "embedding_dim", "basis_dim", "hidden_dim"])
@pytest.mark.parametrize("value", [0, -4, 1.5, True])
def test_layer_sizes_must_be_positive_integers(key, value):
    """The RLModule's network and `make_network` name the bad size."""
    import synpo_envs

    from rllib_synpo.networks import make_network
    from rllib_synpo.rl_module import network_from_spaces

    env = synpo_envs.GridWorld()
    message = rf"{key} must be an integer >= 1, got {value!r}"
    with pytest.raises(ValueError, match=message):
        network_from_spaces(env.observation_space, env.action_space, {key: value})
    with pytest.raises(ValueError, match=message):
        make_network(
            "synpo",
            obs_shape=(12, 16, 16),
            num_actions=5,
            num_envs=2,
            num_tasks=3,
            encoder="compact",
            **{key: value},
        )
