"""The Ray-free trainer's configuration checks, composition diagnostic and optimizer groups, without Ray."""

import numpy as np
import pytest
import torch

from rllib_synpo.direct import (
    COEFFICIENT_MODULES,
    DirectConfig,
    DirectImitation,
    parameter_groups,
)

SEEN = [(0, 0), (0, 1), (1, 1)]


def _trainer(**overrides) -> DirectImitation:
    config = DirectConfig(num_collectors=8, replay_capacity=512, warmup_states=64, batch_size=16, **overrides)
    trainer = DirectImitation(config, SEEN, seed=0)
    trainer.step()
    return trainer


def test_task_accuracy_splits_seen_and_unseen_tasks_and_leaves_training_untouched():
    trainer = _trainer()
    state = trainer.rng.bit_generator.state
    first = trainer.task_accuracy(256, np.random.default_rng(1))
    assert set(first) == {"seen_task_accuracy", "unseen_task_accuracy"}
    assert all(0 <= value <= 1 for value in first.values())
    assert trainer.task_accuracy(256, np.random.default_rng(1)) == first  # same generator, same figure
    assert trainer.rng.bit_generator.state == state  # training's draws are not consumed
    assert trainer.net.training


def test_task_accuracy_is_one_for_a_network_that_copies_the_expert(monkeypatch):
    trainer = _trainer()
    sample_columns, spec, scored = trainer.replay.rows, trainer.env.grid_spec, {}

    def columns(rows):  # remember the expert's labels of the states being scored
        sample = sample_columns(rows)
        scored["labels"], _ = spec.task_expert_actions(sample["env_id"], sample["agent"], sample["treasures"])
        return sample

    monkeypatch.setattr(trainer.replay, "rows", columns)
    monkeypatch.setattr(trainer.net, "forward", lambda obs, env_id, task_id: type("Out", (), {"sa_features": None}))
    monkeypatch.setattr(trainer.net, "task_logits", lambda sa, env_id: torch.nn.functional.one_hot(torch.as_tensor(scored["labels"]), 5))
    assert trainer.task_accuracy(128, np.random.default_rng(0)) == {"seen_task_accuracy": 1.0, "unseen_task_accuracy": 1.0}


def test_coefficient_weight_decay_covers_embeddings_and_coefficients_only():
    trainer = _trainer(weight_decay=1e-4, coefficient_weight_decay=1e-2)
    other, coefficient = trainer.optimizer.param_groups
    assert (other["weight_decay"], coefficient["weight_decay"]) == (1e-4, 1e-2)
    names = {id(p): n for n, p in trainer.net.named_parameters()}
    assert {names[id(p)].split(".")[0] for p in coefficient["params"]} == set(COEFFICIENT_MODULES)
    assert "encoder" in {names[id(p)].split(".")[0] for p in other["params"]}


@pytest.mark.parametrize("coefficient_weight_decay, expected", [(None, 3e-3), (0.0, 0.0)])
def test_coefficient_weight_decay_defaults_to_the_weight_decay(coefficient_weight_decay, expected):
    trainer = _trainer()
    config = DirectConfig(weight_decay=3e-3, coefficient_weight_decay=coefficient_weight_decay)
    assert [g["weight_decay"] for g in parameter_groups(trainer.net, config)] == [3e-3, expected]


@pytest.mark.parametrize(
    "device, message",
    [("warp9", "unknown torch device 'warp9'"), pytest.param("cuda", "finds no CUDA GPU", marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here"))],
)
def test_a_device_this_machine_lacks_is_one_clear_error(device, message):
    with pytest.raises(ValueError, match=message):
        DirectImitation(DirectConfig(device=device, num_collectors=8), SEEN)


def test_best_recipe_gives_coefficient_options_only_to_networks_with_coefficients():
    from rllib_synpo.budgeted import (
        BEST_COEFFICIENT_OPTIONS,
        BEST_ENCODER_OPTIONS,
        BEST_WEIGHT_DECAY,
        best_recipe,
    )

    for network in ("synpo", "mtl", "mlp", "sf"):
        config = best_recipe(network=network)
        assert config.weight_decay == BEST_WEIGHT_DECAY and config.relabel_seen_tasks
        assert config.network_kwargs == (BEST_COEFFICIENT_OPTIONS if network in ("synpo", "mtl") else {})
        assert config.encoder == "compact" and config.encoder_kwargs == BEST_ENCODER_OPTIONS
    assert best_recipe(network_kwargs={}).network_kwargs == {}  # an explicit choice wins
    assert best_recipe(encoder="paper_resnet").encoder_kwargs == {}  # the options are the compact encoder's


def test_the_tuned_example_is_the_best_recipe_through_rllib():
    """tuned_examples/synpo_gridworld.yaml trains what `best_recipe` trains (the learning-rate
    schedule aside: RLlib's is by states collected, the benchmark's by minutes)."""
    from pathlib import Path

    import yaml

    from rllib_synpo.budgeted import best_recipe

    path = Path(__file__).resolve().parents[2] / "tuned_examples" / "synpo_gridworld.yaml"
    ((_, experiment),) = yaml.safe_load(path.read_text()).items()
    config, recipe = experiment["config"], best_recipe()
    assert config["relabel_seen_tasks"] == recipe.relabel_seen_tasks
    assert config["weight_decay"] == recipe.weight_decay
    assert (config["l1"], config["l2"], config["l3"]) == (recipe.l1, recipe.l2, recipe.l3)
    assert {"embedding_dim": recipe.embedding_dim, **config["model_config"]} == recipe.model_config()  # both default to 128


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("batch_size", 0, "an integer >= 1"),
        ("num_collectors", 2.0, "an integer >= 1"),
        ("lr", 0.0, "a number > 0"),
        ("pick_weight", -1.0, "a number > 0"),
        ("l1", -0.01, "a number >= 0"),
        ("weight_decay", "1e-4", "a number >= 0"),
        ("epsilon", 1.5, r"a probability in \[0, 1\]"),
        ("dagger", -0.1, r"a probability in \[0, 1\]"),
        ("collect_every", 0, "an integer >= 1"),
        ("warmup_states", -1, "an integer >= 0"),
        ("coefficient_weight_decay", -1e-3, "None or a number >= 0"),
        ("precision", "float16", r"one of \['float32', 'bfloat16', 'auto'\]"),
    ],
)
def test_config_names_a_bad_value(field, value, expected):
    with pytest.raises(ValueError, match=rf"^{field} must be {expected}, got {value!r}$"):
        DirectConfig(**{field: value})
