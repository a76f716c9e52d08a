"""PPO fine-tuning from a real (tiny) SynPo imitation checkpoint: one iteration, the loaded-policy
assertion, broken checkpoints, knobs, the tuned example and Tune."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from tests.rllib.conftest import TINY_MODEL, tiny_config

AUX_LOSSES = ("env_disentangle_loss", "task_disentangle_loss", "reward_loss")
MODULE_FILES = Path("learner_group") / "learner" / "rl_module" / "synpo"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def imitation_checkpoint(ray_session, tmp_path_factory) -> Path:
    algo = tiny_config().build_algo()
    try:
        algo.train()
        algo.train()
        return Path(algo.save_to_path(tmp_path_factory.mktemp("imitation") / "ckpt"))
    finally:
        algo.stop()


def tiny_ppo_config(checkpoint, **training):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig

    config = SynPoPPOConfig().rl_module(model_config=dict(TINY_MODEL))
    config.training(
        **{
            "imitation_checkpoint": str(checkpoint),
            "train_batch_size": 128,
            "minibatch_size": 64,
            "num_epochs": 1,
            **training,
        }
    )
    return config.environment(env_config={"num_slots": 4}).debugging(seed=3)


@pytest.fixture(scope="module")
def ppo_algo(imitation_checkpoint):
    algo = tiny_ppo_config(imitation_checkpoint, greedy_episodes_per_pair=1).build_algo()
    yield algo
    algo.stop()


def _weights(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_one_iteration_from_the_imitation_checkpoint(ppo_algo, tmp_path):
    from rllib_synpo.checkpoint import load_checkpoint

    algo = ppo_algo
    assert algo.load_check["pairs"] == 144 and algo.load_check["episodes_per_pair"] == 1
    env_config = algo.config.env_config
    assert env_config["behaviour"] == "policy" and len(env_config["pairs"]) == 144
    assert env_config["gridworld"] == {"max_steps": 60}  # the checkpoint's
    optimizer = algo.learner_group._learner.get_optimizer("synpo")
    assert isinstance(optimizer, torch.optim.RMSprop) and optimizer.param_groups[0]["weight_decay"] == 1e-4
    assert (optimizer.defaults["alpha"], optimizer.defaults["eps"]) == (0.99, 1e-5)  # the paper's
    value_optimizer = algo.learner_group._learner.get_optimizer("synpo", "value")  # the value head's own
    value_head = {
        id(p) for p in algo.learner_group._learner.module["synpo"].unwrapped().net.value_head.parameters()
    }
    assert {id(p) for p in value_optimizer.param_groups[0]["params"]} == value_head
    assert not value_head & {id(p) for p in optimizer.param_groups[0]["params"]}
    assert value_optimizer.param_groups[0]["lr"] == 1e-3 and optimizer.param_groups[0]["lr"] == 2.5e-5
    before = _weights(algo.get_module("synpo"))
    result = algo.train()
    learner = result["learners"]["synpo"]
    for name in ("policy_loss", "vf_loss", "entropy", *AUX_LOSSES):
        assert np.isfinite(learner[name]), name
    after = _weights(algo.get_module("synpo"))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    evaluation = algo.evaluate()
    assert evaluation["seen_pairs"] == 144 and evaluation["unseen_pairs"] == 256
    path = algo.save_to_path(tmp_path / "ppo")
    net, split, gridworld = load_checkpoint(path)  # `rllib evaluate` reads PPO checkpoints too
    assert len(split.seen) == 144 and gridworld == {"max_steps": 60}
    assert all(torch.equal(after[f"net.{k}"], v) for k, v in net.state_dict().items())


def test_a_load_that_does_not_take_fails_loudly(imitation_checkpoint, monkeypatch):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import ImitationCheckpointError, SynPoPPO

    monkeypatch.setattr(SynPoPPO, "restore_from_path", lambda self, *args, **kwargs: None)
    with pytest.raises(ImitationCheckpointError, match="did not load .* tensor"):
        tiny_ppo_config(imitation_checkpoint).build_algo()


def test_the_greedy_evaluation_check_catches_a_different_policy(ppo_algo, imitation_checkpoint, monkeypatch):
    from ray.rllib.core.rl_module.rl_module import RLModule

    from rllib_synpo.algorithms.synpo_ppo import synpo_ppo as ppo

    other = RLModule.from_checkpoint(imitation_checkpoint / MODULE_FILES)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator))
    monkeypatch.setattr(ppo, "_state", lambda module: {})  # let it past the weight check
    with pytest.raises(ppo.ImitationCheckpointError, match="greedy evaluation after loading"):
        ppo.check_loaded_policy(ppo_algo, other, where="test")


def test_a_mismatched_checkpoint_fails_loudly(imitation_checkpoint, tmp_path):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import ImitationCheckpointError
    from rllib_synpo.checkpoint import META_FILE

    other = {**TINY_MODEL, "embedding_dim": 16}
    with pytest.raises(
        ValueError, match="model_config .* differs from the imitation checkpoint's .*leave model_config out"
    ):
        tiny_ppo_config(imitation_checkpoint).rl_module(model_config=other).build_algo()
    # A checkpoint that does not record its model_config (older ones) fails when loading.
    older = Path(shutil.copytree(imitation_checkpoint, tmp_path / "older"))
    meta = json.loads((older / META_FILE).read_text())
    del meta["model_config"]
    (older / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(
        ImitationCheckpointError,
        match="could not load the imitation module .*size mismatch for net.env_embedding.weight",
    ):
        tiny_ppo_config(older).rl_module(model_config=other).build_algo()


def test_a_corrupted_checkpoint_fails_loudly(imitation_checkpoint, tmp_path):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import ImitationCheckpointError

    broken = Path(shutil.copytree(imitation_checkpoint, tmp_path / "broken"))
    (broken / MODULE_FILES / "module_state.pkl").write_bytes(b"not a pickle")
    with pytest.raises(ImitationCheckpointError, match="could not load the imitation module"):
        tiny_ppo_config(broken).build_algo()
    with pytest.raises(
        ImitationCheckpointError, match="could not load the imitation module"
    ):  # the KL's reference too
        tiny_ppo_config(broken, imitation_kl_coeff=1.0).build_algo()


@pytest.mark.parametrize(
    "training, message",
    [
        ({"l2": -1.0}, "`l2` must be a number >= 0"),
        ({"optimizer_type": "sgd"}, "`optimizer_type` must be one of"),
        ({"weight_decay": -0.1}, "weight_decay"),
        ({"value_lr": 0}, "`value_lr` must be a number > 0, got 0"),
        (
            {"lr": [[0, 2.5e-5], [1000, "1e-05"]]},
            (
                r"`lr` must be a number > 0 or a schedule .*write 2.0e-05\), "
                r"got \[\[0, 2.5e-05\], \[1000, '1e-05'\]\]"
            ),
        ),
        ({"imitation_kl_coeff": -1.0}, "`imitation_kl_coeff` must be a number >= 0"),
        ({"load_check_episodes_per_pair": 0}, "load_check_episodes_per_pair"),
        ({"finetune_pairs": "train"}, "`finetune_pairs` must be one of .*got 'train'"),
        ({"imitation_checkpoint": "/nonexistent/run"}, "/nonexistent/run is not a SynPo checkpoint"),
    ],
)
def test_validate_names_bad_knobs(imitation_checkpoint, training, message):
    with pytest.raises(ValueError, match=message):
        tiny_ppo_config(imitation_checkpoint, **training).validate()


@pytest.mark.parametrize("which, count", [("seen", 144), ("unseen", 256), ("all", 400)])
def test_finetune_pairs_picks_the_pairs_ppo_interacts_with(imitation_checkpoint, which, count):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig

    config = tiny_ppo_config(imitation_checkpoint, finetune_pairs=which)
    config.validate()
    split, _ = config.resolved_split()
    expected = {"seen": split.seen, "unseen": split.unseen, "all": split.all_pairs}[which]
    assert len(expected) == count and config.env_config["pairs"] == [list(p) for p in expected]
    assert SynPoPPOConfig().finetune_pairs == "seen"


def test_finetune_pairs_needs_pairs_of_that_kind(imitation_checkpoint):
    from synpo_envs.splits import Split

    split, _ = tiny_ppo_config(imitation_checkpoint).resolved_split()
    every_pair = Split(num_envs=20, num_tasks=20, seen=split.all_pairs, name="everything")
    with pytest.raises(
        ValueError, match="`finetune_pairs` 'unseen': the split 'everything' has no unseen pairs"
    ):
        tiny_ppo_config(imitation_checkpoint, finetune_pairs="unseen", split=every_pair).validate()


def test_the_kl_penalty_needs_the_imitation_checkpoint():
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig

    with pytest.raises(ValueError, match="`imitation_kl_coeff` 0.5 needs an `imitation_checkpoint`"):
        SynPoPPOConfig().training(imitation_kl_coeff=0.5).validate()


def test_ppo_refuses_a_network_that_hides_environments():
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig

    config = SynPoPPOConfig().rl_module(model_config={"network": "synpo", "env_dropout": 0.25})
    with pytest.raises(ValueError, match="env_dropout 0.25 hides environments .* PPO's likelihood ratios"):
        config.validate()
    schedule = {"network": "synpo", "env_dropout": [[0, 0.0], [300, 0.25]]}
    with pytest.raises(ValueError, match=r"env_dropout \[\[0, 0.0\], \[300, 0.25\]\] hides"):
        SynPoPPOConfig().rl_module(model_config=schedule).validate()
    SynPoPPOConfig().rl_module(
        model_config={"network": "synpo", "env_dropout": [[0, 0.0], [300, 0.0]]}
    ).validate()


def test_the_kl_penalty_reads_a_frozen_imitation_policy(imitation_checkpoint):
    """The reference starts equal to the trained module (KL 0), is logged as its own term,
    and stays the checkpoint's policy while PPO moves the module away from it."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.learner.learner import DEFAULT_OPTIMIZER

    from rllib_synpo.algorithms.synpo_ppo.torch.synpo_ppo_torch_learner import VALUE_OPTIMIZER
    from rllib_synpo.env.pair_env import SynPoPairsEnv
    from rllib_synpo.losses import kl_to_reference

    algo = tiny_ppo_config(imitation_checkpoint, imitation_kl_coeff=1.0).build_algo()
    try:
        learner = algo.learner_group._learner
        module, reference = learner.module["synpo"].unwrapped(), learner.imitation_reference
        optimized = {
            id(p)
            for name in (DEFAULT_OPTIMIZER, VALUE_OPTIMIZER)
            for group in learner.get_optimizer("synpo", name).param_groups
            for p in group["params"]
        }
        assert not optimized & {id(p) for p in reference.parameters()}
        env = SynPoPairsEnv({"num_slots": 4, "pairs": [[0, 0], [3, 5]], "gridworld": {"max_steps": 60}})
        observations, _ = env.reset(seed=0)
        obs = {
            key: torch.as_tensor(np.stack([o[key] for o in observations.values()]))
            for key in next(iter(observations.values()))
        }

        def kl() -> float:
            logits = [
                m.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
                for m in (reference, module)
            ]
            return kl_to_reference(*logits).item()

        reference_before = _weights(reference)
        assert kl() == pytest.approx(0.0, abs=1e-6)
        result = algo.train()
        assert result["learners"]["synpo"]["imitation_kl_loss"] >= 0
        assert kl() > 0
        assert all(torch.equal(v, _weights(reference)[k]) for k, v in reference_before.items())
    finally:
        algo.stop()


def test_validate_rejects_another_gridworld_or_the_expert(imitation_checkpoint):
    config = tiny_ppo_config(imitation_checkpoint).environment(env_config={"gridworld": {"max_steps": 30}})
    with pytest.raises(ValueError, match="differs from the imitation checkpoint's"):
        config.validate()
    config = tiny_ppo_config(imitation_checkpoint).environment(env_config={"behaviour": "expert"})
    with pytest.raises(ValueError, match="behaviour must be 'policy'"):
        config.validate()


def test_the_checkpoint_decides_the_network_and_spelled_out_gridworld_defaults_match(imitation_checkpoint):
    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOConfig
    from rllib_synpo.rl_module import check_model_config

    config = SynPoPPOConfig().training(imitation_checkpoint=str(imitation_checkpoint))  # no model_config
    config.environment(
        env_config={"gridworld": {"max_steps": 60, "window": 1, "frame_stack": 4}}
    )  # spelled-out defaults
    config.validate()
    assert check_model_config(config.model_config) == check_model_config(TINY_MODEL)


def _tuned_example(checkpoint, tmp_path) -> Path:
    """The shipped PPO example, pointed at the tiny checkpoint (its model and gridworld)."""
    shipped = Path(__file__).resolve().parents[2] / "tuned_examples" / "synpo_gridworld_ppo.yaml"
    experiments = yaml.safe_load(shipped.read_text())
    config = experiments["synpo-gridworld-ppo"]["config"]
    config.update(
        imitation_checkpoint=str(checkpoint),
        model_config=TINY_MODEL,
        env_config={"num_slots": 4, "gridworld": {"max_steps": 60}},
    )
    path = tmp_path / "ppo.yaml"
    path.write_text(yaml.safe_dump(experiments))
    return path


def test_the_tuned_example_is_valid(imitation_checkpoint, tmp_path):
    from rllib_synpo.cli.experiments import load_experiments

    experiments = load_experiments(_tuned_example(imitation_checkpoint, tmp_path))
    spec = experiments["synpo-gridworld-ppo"]
    assert spec["run"] == "SynPoPPO"
    assert (
        spec["config"]["optimizer_type"] == "rmsprop"
        and spec["config"]["lr"] == 2.5e-5
        and spec["config"]["clip_param"] == 0.1
    )


def test_tune_runs_synpoppo_by_name(imitation_checkpoint, tmp_path):
    from ray import tune

    from rllib_synpo.cli.experiments import experiment_config, load_experiments

    experiments = load_experiments(_tuned_example(imitation_checkpoint, tmp_path))
    spec = experiments["synpo-gridworld-ppo"]
    config = experiment_config(spec)
    spec.pop("env")
    config.update(train_batch_size=128, minibatch_size=64, num_epochs=1, evaluation_interval=None)
    spec.update(config=config, stop={"training_iteration": 1}, storage_path=str(tmp_path / "runs"))
    spec["checkpoint_config"] = {"checkpoint_at_end": True}
    trials = tune.run_experiments(experiments, verbose=0)
    assert [t.status for t in trials] == ["TERMINATED"]
    assert list((tmp_path / "runs" / "synpo-gridworld-ppo").glob("*/checkpoint_*/synpo_meta.json"))


def test_slots_done_before_their_episode_ends_count_zero_steps_not_nan(imitation_checkpoint):
    """A pair slot whose gridworld episode ended waits for the others; a sample of only such
    steps must count it as 0 agent steps (RLlib's own count is NaN there, ray#62635, and PPO's
    sampling loop then fails with "cannot convert float NaN to integer")."""
    from ray.rllib.utils.metrics import NUM_AGENT_STEPS_SAMPLED

    from rllib_synpo.algorithms.synpo_ppo.synpo_ppo import SynPoPPOEnvRunner

    # The expert's episodes end at different steps in different slots (PPO runs the policy).
    config = tiny_ppo_config(imitation_checkpoint)
    config.environment(
        env_config={
            "num_slots": 4,
            "behaviour": "expert",
            "pairs": [[0, 0], [1, 1]],
            "gridworld": {"max_steps": 60},
        }
    )
    runner = SynPoPPOEnvRunner(config=config, worker_index=0, num_workers=0)
    absent = 0
    for _ in range(60):
        episodes = runner.sample(num_timesteps=1)  # one env step
        stepped = {
            str(aid) for episode in episodes for aid, agent in episode.agent_episodes.items() if len(agent)
        }
        counts = runner.get_metrics()[NUM_AGENT_STEPS_SAMPLED]
        absent += len(set(counts) - stepped)
        assert all(float(count) >= 0 for count in counts.values()), counts  # NaN fails too
        assert sum(int(count) for count in counts.values()) == len(stepped)
    runner.stop()
    assert absent > 0  # the case happened
