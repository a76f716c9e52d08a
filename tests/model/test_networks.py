"""Network shapes and structure, without Ray."""

import inspect
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from rllib_synpo.losses import CONDITIONED_ENV_ID
from rllib_synpo.networks import ENCODERS, CompactEncoder, PaperResNetEncoder, SynPoNetwork
from rllib_synpo.networks.encoders import ENCODER_OPTION_RULES
from rllib_synpo.networks.synpo import UNKNOWN_ENV

OBS_SHAPE = (12, 16, 16)


def _net(**kwargs):
    return SynPoNetwork(obs_shape=OBS_SHAPE, num_actions=5, num_envs=7, num_tasks=9, **kwargs)


def _inputs(n=6, shape=OBS_SHAPE, num_envs=7, num_tasks=9):
    obs = torch.randint(0, 256, (n, *shape), dtype=torch.uint8)
    return obs, torch.randint(0, num_envs, (n,)), torch.randint(0, num_tasks, (n,))


@pytest.mark.parametrize("encoder", ["compact", "paper_resnet"])
def test_output_shapes(encoder):
    net = _net(encoder=encoder, basis_dim=24, embedding_dim=16, feature_dim=32)
    out = net(*_inputs())
    assert out.logits.shape == (6, 5) and out.reward.shape == (6, 5)
    assert out.sa_features.shape == (6, 5, 24) and out.value.shape == (6,)
    env_scores, task_scores = net.disentangle_scores(out.sa_features[:, 0])
    assert env_scores.shape == (6, 7) and task_scores.shape == (6, 9)


def test_sizes_follow_the_observation():
    net = SynPoNetwork(obs_shape=(8, 16, 16), num_actions=3, num_envs=2, num_tasks=2)
    assert net(*_inputs(shape=(8, 16, 16), num_envs=2, num_tasks=2)).logits.shape == (6, 3)


def test_paper_encoder_matches_the_paper_description():
    encoder = PaperResNetEncoder(OBS_SHAPE, feature_dim=128)
    params = sum(p.numel() for p in encoder.parameters())
    assert 2.7e6 < params < 3.0e6  # "~2.8M parameters in this part alone"
    assert encoder.project.in_features == 2 * 2 * 256
    stem = encoder.body[1]
    assert stem.groups == 4 and stem.out_channels == 32
    assert not encoder.body[0].affine


def test_compact_encoder_batch_norm_standardizes_its_input_and_each_convolution():
    plain, normed = (
        CompactEncoder(OBS_SHAPE, feature_dim=32),
        CompactEncoder(OBS_SHAPE, feature_dim=32, batch_norm=True),
    )
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in plain.modules())
    norms = [m for m in normed.convs if isinstance(m, torch.nn.BatchNorm2d)]
    convs = [m for m in normed.convs if isinstance(m, torch.nn.Conv2d)]
    assert len(norms) == 1 + len(convs) == 4 and not norms[0].affine
    assert all(conv.bias is None for conv in convs)  # BatchNorm's shift replaces the bias
    # Building does not move the running statistics; a training pass does, an eval pass does not.
    assert all(int(norm.num_batches_tracked) == 0 for norm in norms)
    obs = _inputs()[0]
    normed(obs)
    assert all(int(norm.num_batches_tracked) == 1 for norm in norms)
    normed.eval()
    normed(obs)
    assert all(int(norm.num_batches_tracked) == 1 for norm in norms)


def test_policy_logits_are_the_bilinear_form():
    net = _net()
    obs, env_id, task_id = _inputs()
    out = net(obs, env_id, task_id)
    psi = net.encoder(obs)
    alpha = net.alpha(torch.cat([net.task_embedding(task_id), net.env_embedding(env_id)], -1))
    expected = torch.stack([(psi @ net.basis[a] * alpha).sum(-1) for a in range(5)], -1) + net.policy_bias
    assert torch.allclose(out.logits, expected, atol=1e-5)


def test_product_coefficients_multiply_a_task_factor_and_an_env_factor():
    net = _net(coefficient_function="product")
    obs, env_id, task_id = _inputs()
    alpha = net.alpha(net.coefficients(env_id, task_id))
    expected = net.alpha.task(net.task_embedding(task_id)) * net.alpha.env(net.env_embedding(env_id))
    assert torch.allclose(alpha, expected)
    assert net(obs, env_id, task_id).logits.shape == (6, 5)


def test_coefficient_dropout_acts_in_training_only():
    torch.manual_seed(0)
    net = _net(coefficient_dropout=0.5)
    inputs = _inputs()
    assert not torch.allclose(net(*inputs).logits, net(*inputs).logits)  # fresh masks each call
    net.eval()
    obs, env_id, task_id = inputs
    sa = torch.einsum("nf,afk->nak", net.encoder(obs), net.basis)
    alpha = net.alpha(net.coefficients(env_id, task_id))
    assert torch.allclose(
        net(*inputs).logits, torch.einsum("nak,nk->na", sa, alpha) + net.policy_bias, atol=1e-5
    )


def test_normalized_embeddings_reach_the_coefficients_at_unit_length():
    net = _net(normalize_embeddings=True)
    _, env_id, task_id = _inputs()
    net.env_embedding.weight.data.mul_(7.0)  # the table's scale must not reach alpha
    task, env = net.coefficients(env_id, task_id).chunk(2, dim=-1)
    assert torch.allclose(task.norm(dim=-1), torch.ones(len(task_id)))
    assert torch.allclose(
        env, net.env_embedding(env_id) / net.env_embedding(env_id).norm(dim=-1, keepdim=True)
    )
    assert not torch.allclose(
        _net().coefficients(env_id, task_id).norm(dim=-1), torch.full((len(env_id),), 2**0.5)
    )


def test_unknown_coefficient_function_is_named():
    with pytest.raises(ValueError, match="'sum'.*'mlp', 'product'"):
        _net(coefficient_function="sum")


def test_value_head_starts_at_zero():
    assert torch.all(_net()(*_inputs()).value == 0)


def test_unknown_encoder_is_named():
    with pytest.raises(ValueError, match="'resnet9000'"):
        _net(encoder="resnet9000")


def test_unknown_encoder_option_is_named_with_the_accepted_ones():
    with pytest.raises(
        ValueError,
        match=(
            r"unknown encoder_kwargs \['batchnorm'\] for encoder 'compact'; "
            r"it takes \['batch_norm', 'width'\]"
        ),
    ):
        _net(encoder="compact", encoder_kwargs={"batchnorm": True})
    with pytest.raises(ValueError, match=r"\['width'\] for encoder 'paper_resnet'; it takes none"):
        _net(encoder="paper_resnet", encoder_kwargs={"width": 8})


@pytest.mark.parametrize(
    "encoder, kwargs, message",
    [
        ("compact", {"width": 0}, "encoder_kwargs width must be an integer >= 1, got 0"),
        ("compact", {"batch_norm": "yes"}, "encoder_kwargs batch_norm must be true or false, got 'yes'"),
        ("dense", {"width": 2.5}, "encoder_kwargs width must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_encoder_option_values_are_named(encoder, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _net(encoder=encoder, encoder_kwargs=kwargs)


def test_every_encoder_option_has_a_rule():
    for encoder in ENCODERS.values():
        options = set(inspect.signature(encoder).parameters) - {"obs_shape", "feature_dim"}
        assert options <= set(ENCODER_OPTION_RULES), encoder


def test_networks_do_not_import_ray():
    code = "import sys, rllib_synpo.networks, rllib_synpo.losses; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_env_dropout_hides_environments_in_training_only():
    torch.manual_seed(0)
    net = _net(env_dropout=0.5, normalize_embeddings=True, coefficient_function="product")
    obs, env_id, task_id = _inputs(n=64)
    out = net(obs, env_id, task_id)
    conditioned = out.extras[CONDITIONED_ENV_ID]
    hidden = conditioned == UNKNOWN_ENV
    assert 16 < int(hidden.sum()) < 48  # about half of 64
    assert torch.equal(conditioned[~hidden], env_id[~hidden])
    # The hidden rows' policy is the unknown environment's, whatever their environment.
    net.eval()
    unknown = torch.full_like(env_id, UNKNOWN_ENV)
    as_unknown = net(obs, unknown, task_id).logits
    as_known = net(obs, env_id, task_id).logits
    alpha = net.alpha(
        torch.cat(
            [
                F.normalize(net.task_embedding(task_id), dim=-1),
                F.normalize(net.unknown_env.expand(64, -1), dim=-1),
            ],
            -1,
        )
    )
    sa = torch.einsum("nf,afk->nak", net.encoder(obs), net.basis)
    assert torch.allclose(as_unknown, torch.einsum("nak,nk->na", sa, alpha) + net.policy_bias, atol=1e-5)
    assert not torch.allclose(as_unknown, as_known)
    # Eval mode hides nothing and reports the batch's ids.
    assert torch.equal(net(obs, env_id, task_id).extras[CONDITIONED_ENV_ID], env_id)
    # Every task's logits (relabelling) follow the ids the outputs were conditioned on.
    net.train()
    torch.manual_seed(1)
    out = net(obs, env_id, task_id)
    conditioned = out.extras[CONDITIONED_ENV_ID]
    assert (conditioned == UNKNOWN_ENV).any()
    net.eval()  # the same BatchNorm statistics for both passes below
    out = net(obs, conditioned, task_id)
    every_task = net.task_logits(out.sa_features, conditioned)
    assert torch.allclose(every_task[torch.arange(64), task_id], out.logits, atol=1e-5)
    assert net.pair_coefficients().shape[0] == 7 + 1  # the unknown environment last


def test_an_env_dropout_schedule_starts_at_its_first_probability():
    # The learner moves it along the schedule (tests/rllib/test_algorithm.py); the network
    # has an unknown environment where any point of the schedule hides some.
    net = _net(env_dropout=[[0, 0.0], [300, 0.0], [600, 0.25]])
    assert net.env_dropout == 0.0 and net.unknown_env is not None
    obs, env_id, task_id = _inputs(n=64)
    assert torch.equal(net(obs, env_id, task_id).extras[CONDITIONED_ENV_ID], env_id)  # hides nothing yet
    assert _net(env_dropout=[[0, 0.0], [10, 0.0]]).unknown_env is None


def test_without_env_dropout_there_is_no_unknown_environment():
    net = _net()
    obs, env_id, task_id = _inputs()
    assert net.unknown_env is None and net(obs, env_id, task_id).extras == {}
    with pytest.raises(IndexError):
        net(obs, torch.full_like(env_id, -1), task_id)
