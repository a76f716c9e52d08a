"""Each loss term on a hand-made batch: its value, that weight 0 removes it, where gradients go."""

import math

import numpy as np
import pytest
import torch

from rllib_synpo.losses import (
    LossWeights,
    disentangle_loss,
    imitation_losses,
    kl_to_reference,
    policy_loss,
    reward_loss,
    taken,
)
from rllib_synpo.networks import SynPoNetwork


def test_policy_loss_is_cross_entropy_of_the_expert_action():
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])
    actions = torch.tensor([0, 0])
    assert policy_loss(logits, actions).item() == pytest.approx((math.log(2) + math.log(4 / 3)) / 2)


def test_reward_loss_reads_the_action_taken():
    predicted = torch.tensor([[1.0, 5.0], [0.0, 2.0]])
    assert reward_loss(predicted, torch.tensor([1, 0]), torch.tensor([4.0, 1.0])).item() == pytest.approx(
        (1 + 1) / 2
    )
    assert taken(predicted, torch.tensor([1, 1])).tolist() == [5.0, 2.0]


def test_disentangle_loss_is_cross_entropy_over_ids():
    scores = torch.tensor([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert disentangle_loss(scores, torch.tensor([0, 2])).item() == pytest.approx(
        (-torch.log_softmax(scores[0], 0)[0] + math.log(3)).item() / 2
    )


def test_kl_to_the_reference_is_zero_at_the_reference_and_weighs_its_preferred_actions():
    reference = torch.tensor([[math.log(3.0), 0.0], [0.0, 0.0]])  # probabilities (3/4, 1/4), (1/2, 1/2)
    assert kl_to_reference(reference, reference.clone()).item() == pytest.approx(0.0, abs=1e-7)
    uniform = torch.zeros(2, 2)
    expected_first_row = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    assert kl_to_reference(reference, uniform).item() == pytest.approx(expected_first_row / 2)
    assert kl_to_reference(uniform, reference).item() != pytest.approx(
        expected_first_row / 2
    )  # KL(reference || pi)
    logits = uniform.clone().requires_grad_(True)
    kl_to_reference(reference, logits).backward()
    assert logits.grad[0, 0] < 0 < logits.grad[0, 1]  # gradient descent raises the preferred action


def _batch(n=8):
    g = torch.Generator().manual_seed(0)
    return {
        "obs": torch.randint(0, 256, (n, 12, 16, 16), dtype=torch.uint8, generator=g),
        "env_id": torch.randint(0, 3, (n,), generator=g),
        "task_id": torch.randint(0, 4, (n,), generator=g),
        "expert_action": torch.randint(0, 5, (n,), generator=g),
        "action": torch.randint(0, 5, (n,), generator=g),
        "reward": torch.randn(n, generator=g),
    }


def _net():
    torch.manual_seed(0)
    return SynPoNetwork(obs_shape=(12, 16, 16), num_actions=5, num_envs=3, num_tasks=4, hidden_dim=32)


DEFAULT_WEIGHTS = LossWeights()


def _terms(net, batch, weights=DEFAULT_WEIGHTS):
    """The network's loss terms on ``batch`` (the function both learners call)."""
    out = net(batch["obs"], batch["env_id"], batch["task_id"])
    return imitation_losses(
        net,
        out,
        expert_actions=batch["expert_action"],
        executed_actions=batch["action"],
        rewards=batch["reward"],
        env_id=batch["env_id"],
        task_id=batch["task_id"],
        weights=weights,
    )


def _grads(net, loss):
    net.zero_grad()
    loss.backward()
    return {name for name, p in net.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}


def test_total_is_the_weighted_sum_and_zero_weights_remove_terms():
    batch = _batch()
    weights = LossWeights(l1=0.5, l2=0.25, l3=2.0)
    terms = _terms(_net(), batch, weights)
    expected = (
        terms["policy_loss"]
        + 0.5 * terms["reward_loss"]
        + 0.25 * terms["env_disentangle_loss"]
        + 2.0 * terms["task_disentangle_loss"]
    )
    assert terms["total_loss"].item() == pytest.approx(expected.item(), rel=1e-6)
    only_policy = _terms(_net(), batch, LossWeights(l1=0, l2=0, l3=0))
    assert only_policy["total_loss"].item() == pytest.approx(only_policy["policy_loss"].item())


def test_gradients_reach_the_expected_parameters():
    batch = _batch()
    net = _net()
    terms = _terms(net, batch)
    policy = _grads(net, terms["policy_loss"])
    assert {
        "alpha.0.weight",
        "basis",
        "policy_bias",
        "env_embedding.weight",
        "task_embedding.weight",
    } <= policy
    assert not any(
        n.startswith(("beta", "env_head", "task_head", "value_head")) or n == "reward_bias" for n in policy
    )
    terms = _terms(net, batch)
    reward = _grads(net, terms["reward_loss"])
    assert {"beta.0.weight", "reward_bias", "basis"} <= reward and not any(
        n.startswith("alpha") for n in reward
    )
    terms = _terms(net, batch)
    env = _grads(net, terms["env_disentangle_loss"])
    assert {"env_head.0.weight", "env_embedding.weight", "basis"} <= env and not any(
        n.startswith("task_head") for n in env
    )
    terms = _terms(net, batch)
    task = _grads(net, terms["task_disentangle_loss"])
    assert {"task_head.0.weight", "task_embedding.weight"} <= task and not any(
        n.startswith("env_head") for n in task
    )


def test_learner_terms_read_the_batch_columns_of_the_rllib_module():
    import gymnasium as gym
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import synpo_loss_terms
    from rllib_synpo.columns import EXECUTED_ACTION, EXPERT_ACTION
    from rllib_synpo.rl_module import SynPoTorchRLModule

    obs_space = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0, 255, (12, 16, 16), np.uint8),
            "env_id": gym.spaces.Discrete(3),
            "task_id": gym.spaces.Discrete(4),
        }
    )
    module = RLModuleSpec(
        module_class=SynPoTorchRLModule,
        observation_space=obs_space,
        action_space=gym.spaces.Discrete(5),
        model_config={"hidden_dim": 32},
    ).build()
    raw = _batch()
    batch = {
        Columns.OBS: {"obs": raw["obs"], "env_id": raw["env_id"], "task_id": raw["task_id"]},
        EXPERT_ACTION: raw["expert_action"],
        EXECUTED_ACTION: raw["action"],
        Columns.REWARDS: raw["reward"],
    }
    terms = synpo_loss_terms(module, batch, module.forward_train(batch))
    out = module.net(raw["obs"], raw["env_id"], raw["task_id"])
    assert terms["policy_loss"].item() == pytest.approx(
        policy_loss(out.logits, raw["expert_action"]).item(), rel=1e-6
    )
    assert terms["reward_loss"].item() == pytest.approx(
        reward_loss(out.reward, raw["action"], raw["reward"]).item(), rel=1e-6
    )
