"""SynPo on RLlib: one-iteration smoke runs, env runners, checkpoints, the module alone."""

import copy
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from tests.rllib.conftest import TINY_MODEL, tiny_config

LOSS_NAMES = ("policy_loss", "reward_loss", "env_disentangle_loss", "task_disentangle_loss", "total_loss")


def _module_weights(algo):
    module = algo.get_module("synpo")
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_one_iteration_with_the_local_env_runner(ray_session):
    algo = tiny_config().build_algo()
    try:
        result = algo.train()
        learner = result["learners"]["synpo"]
        for name in LOSS_NAMES:
            assert np.isfinite(learner[name]), name
        assert len(algo.replay) == 4 and result["expert_success_rate"] > 0
        steps = sum(len(t) for t in algo.replay.trajectories())
        assert result["num_states_collected"] == result["num_states_collected_lifetime"] == steps
        assert (
            0 < result["env_runners"]["num_env_steps_sampled"] <= steps
            and result["env_runners"]["num_episodes"] == 1
        )
        second = algo.train()
        assert (
            second["num_states_collected_lifetime"]
            == steps + second["num_states_collected"]
            == algo.replay.steps_added
        )
        # The env runner hands over the episodes it kept for its metrics (they used to pile up).
        assert not algo.env_runner._done_episodes_for_metrics
        split_seen = set(map(tuple, algo.config.env_config["pairs"]))
        assert all((t.env_id, t.task_id) in split_seen for t in algo.replay.trajectories())
    finally:
        algo.stop()


def test_an_env_dropout_schedule_moves_on_the_learning_rate_clock(ray_session):
    # hidden_env_symmetries as well: the learner builds and updates that network too.
    schedule = [[0, 0.0], [10**6, 0.5]]
    config = tiny_config().rl_module(
        model_config={**TINY_MODEL, "env_dropout": schedule, "hidden_env_symmetries": True}
    )
    algo = config.build_algo()

    def probabilities():
        def probability(learner):
            return learner.module["synpo"].unwrapped().net.env_dropout

        return [result.get() for result in algo.learner_group.foreach_learner(probability)]

    try:
        assert probabilities() == [0.0]
        algo.train()  # updates at the states collected so far (the default clock)
        (now,) = probabilities()
        assert now > 0 and now == pytest.approx(0.5 * algo.replay.steps_added / 10**6)
    finally:
        algo.stop()


def test_env_runners_batch_nothing_for_a_module_that_never_acts(ray_session):
    from rllib_synpo.checkpoint import MODULE_ID
    from rllib_synpo.env.expert_env_runner import ModuleDoesNotAct

    algo = tiny_config().build_algo()
    try:
        pipeline = algo.env_runner._env_to_module
        assert [type(c) for c in pipeline.connectors] == [ModuleDoesNotAct]
        slot_space = algo.env_runner.env.envs[0].unwrapped.observation_spaces["slot_0"]
        assert pipeline.observation_space == gym.spaces.Dict(
            {MODULE_ID: slot_space}
        )  # the module's, as RLlib maps it
        assert algo.get_module(MODULE_ID).observation_space == slot_space
        batch = {"untouched": object()}
        assert pipeline(rl_module=None, batch=batch, episodes=[], explore=False) is batch
        assert len(algo._collect()) == 4  # whole episodes still come back
    finally:
        algo.stop()


def test_env_runners_count_steps_per_module_not_per_pair_slot(ray_session):
    result = tiny_config().build_algo()
    try:
        runners = result.train()["env_runners"]
        collected = result.replay.steps_added
    finally:
        result.stop()
    assert runners["num_module_steps_sampled"] == {"synpo": collected}  # every slot's steps
    assert runners["num_module_steps_sampled_lifetime"] == {"synpo": collected}
    assert runners["num_env_steps_sampled"] > 0 and runners["num_episodes"] > 0
    assert "num_agent_steps_sampled" not in runners


def _same_trajectories(first, second) -> bool:
    fields = ("frames", "expert_action", "action", "reward", "task_labels")
    return len(first) == len(second) and all(
        (a.env_id, a.task_id) == (b.env_id, b.task_id)
        and all(
            getattr(a, f).dtype == getattr(b, f).dtype and np.array_equal(getattr(a, f), getattr(b, f))
            for f in fields
        )
        for a, b in zip(first, second)
    )


def test_the_array_path_collects_what_rllibs_sample_collects(ray_session):
    from rllib_synpo.env.trajectory import collect_trajectories

    config = tiny_config(relabel_seen_tasks=True, expert_epsilon=0.3)
    through_rllib, through_arrays = config.build_algo(), config.build_algo()
    try:
        assert through_arrays.env_runner._can_play_arrays()
        layout = through_rllib.layout
        for episodes in (1, 2, 1):  # the env's streams continue across collections either way
            expected = collect_trajectories(through_rllib.env_runner, episodes, layout)
            assert _same_trajectories(
                through_arrays.env_runner.sample_trajectories(episodes, layout), expected
            )
            assert any(t.task_labels is not None and (t.action != t.expert_action).any() for t in expected)
        rllib_metrics, array_metrics = (
            through_rllib.env_runner.get_metrics(),
            through_arrays.env_runner.get_metrics(),
        )
    finally:
        through_rllib.stop(), through_arrays.stop()
    keys = (
        "num_env_steps_sampled",
        "num_episodes_lifetime",
        "num_module_steps_sampled",
        "episode_len_mean",
        "episode_len_max",
        "agent_steps",
    )
    for key in keys:
        assert _peek(array_metrics[key]) == _peek(rllib_metrics[key]), key
    assert _peek(array_metrics["episode_return_mean"]) == pytest.approx(
        _peek(rllib_metrics["episode_return_mean"])
    )
    assert "num_agent_steps_sampled" not in array_metrics and "num_agent_steps_sampled" not in rllib_metrics


def _peek(stats):
    return {k: _peek(v) for k, v in stats.items()} if isinstance(stats, dict) else stats.peek()


def test_episode_callbacks_get_rllibs_episodes(ray_session):
    from ray.rllib.callbacks.callbacks import RLlibCallback

    ended = []

    class CountEpisodes(RLlibCallback):
        def on_episode_end(self, *, episode, **kwargs):
            ended.append(len(episode.agent_episodes))

    for config in (
        tiny_config().callbacks(CountEpisodes),
        tiny_config().callbacks(on_episode_end=CountEpisodes().on_episode_end),
    ):
        algo = config.build_algo()
        try:
            assert not algo.env_runner._can_play_arrays()
            algo.train()
        finally:
            algo.stop()
    assert ended == [4, 4]  # one multi-agent episode of 4 pair slots per collection


def test_the_env_runners_module_is_synced_only_where_it_is_read(ray_session):
    algo = tiny_config().build_algo()
    try:
        algo.train()
        learner = algo.learner_group._learner.module["synpo"].state_dict()
        idle = algo.env_runner.module["synpo"].state_dict()  # never acts: not synced by train()
        assert not all(torch.equal(idle[k], v) for k, v in learner.items())
        read = algo.get_module("synpo").state_dict()
        assert all(torch.equal(read[k], v) for k, v in learner.items())
    finally:
        algo.stop()


def test_every_collection_brings_new_episodes(ray_session):
    algo = tiny_config().build_algo()
    try:
        first, second = algo._collect(), algo._collect()
        assert not all(np.array_equal(a.frames, b.frames) for a, b in zip(first, second))
    finally:
        algo.stop()


@pytest.mark.parametrize("subgoal_embedding", ["none", "add"])
def test_one_iteration_with_relabelled_seen_tasks_and_state_batches(ray_session, subgoal_embedding):
    config = tiny_config(relabel_seen_tasks=True, states_per_update=32)
    config.rl_module(model_config={**config.model_config, "subgoal_embedding": subgoal_embedding})
    algo = config.build_algo()
    try:
        result = algo.train()
        assert np.isfinite(result["learners"]["synpo"]["policy_loss"])
        assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 32
        labels = algo.replay.sample(2)["task_labels"]
        assert labels.shape[1] == 20 and (labels >= 0).any(axis=1).all()
    finally:
        algo.stop()


def test_state_batches_of_an_iteration_are_one_learner_call_of_several_updates(ray_session):
    algo = tiny_config(states_per_update=16, updates_per_iteration=3).build_algo()
    try:
        optimizer = algo.learner_group._learner.get_optimizer("synpo")
        steps_before = (
            sum(state["step"] for state in optimizer.state_dict()["state"].values()) if optimizer.state else 0
        )
        result = algo.train()
        assert result["learners"]["synpo"]["num_module_steps_trained"] == 3 * 16  # states trained
        steps = {int(state["step"]) for state in optimizer.state_dict()["state"].values()}
        assert steps_before == 0 and steps == {3}  # three Adam steps on every parameter
    finally:
        algo.stop()


def test_successor_features_train_on_state_batches_with_successors(ray_session):
    config = tiny_config(states_per_update=32)
    config.rl_module(model_config={**config.model_config, "network": "sf"})
    algo = config.build_algo()
    try:
        learner = algo.train()["learners"]["synpo"]
        assert np.isfinite(learner["sf_td_loss"]) and learner["sf_td_loss"] > 0
    finally:
        algo.stop()


def test_learning_rate_schedule_follows_sampled_steps(ray_session):
    algo = tiny_config().training(lr=[[0, 1e-3], [400, 1e-5]]).build_algo()
    try:
        rates = [algo.train()["learners"]["synpo"]["default_optimizer_learning_rate"] for _ in range(3)]
        assert rates[0] > rates[-1] >= 1e-5, rates
    finally:
        algo.stop()


def test_learning_rate_schedule_can_follow_training_seconds(ray_session):
    algo = (
        tiny_config(lr_schedule_clock="training_seconds").training(lr=[[0, 1e-3], [3600, 1e-5]]).build_algo()
    )
    try:
        algo._time_total = 1800.0  # half an hour into the run, as a restored checkpoint says
        rate = algo.train()["learners"]["synpo"]["default_optimizer_learning_rate"]
        assert rate == pytest.approx(1e-3 - (1e-3 - 1e-5) * 1800 / 3600, rel=0.01)  # within ~18 s of 1800
    finally:
        algo.stop()


def test_weight_decay_reaches_the_learners_fused_adam(ray_session):
    algo = tiny_config(weight_decay=1e-4).build_algo()
    try:
        optimizer = algo.learner_group._learner.get_optimizer("synpo")
        assert isinstance(optimizer, torch.optim.Adam)
        assert [(group["weight_decay"], group["fused"]) for group in optimizer.param_groups] == [(1e-4, True)]
    finally:
        algo.stop()


def _step_from(learner, state, gradients, apply_gradients):
    """The module's weights after ``apply_gradients`` from ``state`` (module and optimizer)."""
    module, optimizer = learner.module["synpo"], learner.get_optimizer("synpo")
    module.load_state_dict(state[0])
    optimizer.load_state_dict(
        copy.deepcopy(state[1])
    )  # it adopts the tensors, which the step changes in place
    apply_gradients(learner, {ref: g.clone() for ref, g in gradients.items()})
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


@pytest.mark.parametrize(
    "poison", [None, float("nan"), float("inf"), 1e30]
)  # 1e30: finite, but the norm overflows
def test_the_learners_single_finite_check_steps_as_rllibs_apply_gradients(ray_session, poison):
    from ray.rllib.core.learner.torch.torch_learner import TorchLearner

    algo = tiny_config().build_algo()
    try:
        algo.train()
        learner = algo.learner_group._learner
        state = (
            {k: v.clone() for k, v in learner.module["synpo"].state_dict().items()},
            copy.deepcopy(learner.get_optimizer("synpo").state_dict()),
        )
        generator = torch.Generator().manual_seed(0)
        gradients = {
            ref: torch.randn(p.shape, generator=generator) for ref, p in learner.parameters_by_ref.items()
        }
        if poison is not None:
            next(iter(gradients.values())).view(-1)[0] = poison
        ours = _step_from(learner, state, gradients, type(learner).apply_gradients)
        rllibs = _step_from(learner, state, gradients, TorchLearner.apply_gradients)
        assert ours.keys() == rllibs.keys()
        for name in ours:
            assert torch.equal(ours[name], rllibs[name]), name
            assert torch.isfinite(ours[name]).all(), name
        assert any(not torch.equal(ours[name], state[0][name]) for name in ours)  # the step happened
    finally:
        algo.stop()


@pytest.mark.parametrize("precision, dtype", [("float32", torch.float32), ("bfloat16", torch.bfloat16)])
def test_the_learners_forward_pass_runs_at_the_configured_precision(ray_session, precision, dtype):
    algo = tiny_config(precision=precision).build_algo()
    try:
        seen = []
        net = algo.learner_group._learner.module["synpo"].unwrapped().net
        net.encoder.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
        result = algo.train()
        assert seen and set(seen) == {dtype}
        assert np.isfinite(result["learners"]["synpo"]["total_loss"])
        assert all(p.dtype == torch.float32 for p in net.parameters())
    finally:
        algo.stop()


def test_periodic_evaluation_reports_seen_and_unseen(ray_session):
    config = tiny_config(greedy_episodes_per_pair=1).evaluation(evaluation_interval=1)
    config.environment(env_config={"num_slots": 4, "gridworld": {"max_steps": 20}})
    algo = config.build_algo()
    try:
        evaluation = algo.train()["evaluation"]
        for part in ("seen", "unseen"):
            assert 0.0 <= evaluation[f"{part}_avg_success_rate"] <= 1.0
        assert evaluation["seen_pairs"] == 144 and evaluation["unseen_pairs"] == 256
    finally:
        algo.stop()


def test_results_between_evaluations_carry_the_latest_one(ray_session):
    config = tiny_config(greedy_episodes_per_pair=1).evaluation(evaluation_interval=2)
    config.environment(env_config={"num_slots": 4, "gridworld": {"max_steps": 20}})
    algo = config.build_algo()
    try:
        first, second, third = (algo.train() for _ in range(3))
        assert "evaluation" not in first and "last_evaluation" not in first
        evaluated = {k: v for k, v in second["evaluation"].items() if k.startswith(("seen_", "unseen_"))}
        assert evaluated["seen_pairs"] == 144
        assert "evaluation" not in third
        assert second["last_evaluation"] == third["last_evaluation"] == evaluated
    finally:
        algo.stop()


def test_two_env_runners_share_the_seen_pairs(ray_session):
    algo = tiny_config(episodes_per_env_runner=3).env_runners(num_env_runners=2).build_algo()
    try:
        result = algo.train()
        pairs = [tuple(p) for p in algo.config.env_config["pairs"]]
        shards = [set(pairs[0::2]), set(pairs[1::2])]
        collected = [(t.env_id, t.task_id) for t in algo.replay.trajectories()]
        assert len(collected) == 2 * 3 * 4
        assert result["env_runners"]["num_episodes"] == 2 * 3  # both runners' metrics
        assert all(any(p in shard for p in collected) for shard in shards)
    finally:
        algo.stop()


def test_batch_norm_statistics_train_sync_and_reach_the_checkpoint(ray_session, tmp_path):
    from ray.rllib.core.rl_module.rl_module import RLModule

    config = tiny_config()
    config.rl_module(model_config={**config.model_config, "encoder_kwargs": {"width": 4, "batch_norm": True}})
    algo = config.build_algo()
    try:
        algo.train()
        statistics = {k: v for k, v in _module_weights(algo).items() if "running_" in k}
        algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    # The learner's updates moved the statistics, the env runner's copy received them, and the
    # checkpoint holds them (an eval-mode policy depends on them).
    assert len(statistics) == 2 * 4 and not torch.equal(
        statistics["net.encoder.convs.0.running_var"], torch.ones(12)
    )
    loaded = RLModule.from_checkpoint(tmp_path / "ckpt" / "learner_group" / "learner" / "rl_module" / "synpo")
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in statistics.items())


def test_checkpoint_round_trip_and_module_alone_without_ray(ray_session, tmp_path):
    algo = tiny_config().build_algo()
    try:
        algo.train()
        algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
        weights, replay_size, steps = _module_weights(algo), len(algo.replay), algo.replay.steps_added
        seconds = algo._time_total
    finally:
        algo.stop()
    restored = tiny_config().build_algo()
    try:
        restored.restore_from_path(path)
        assert all(torch.equal(weights[k], v) for k, v in _module_weights(restored).items())
        assert len(restored.replay) == replay_size
        assert restored._time_total == seconds > 0  # the training seconds (a schedule's clock) too
        torch.manual_seed(0)
        obs = torch.randint(0, 256, (3, 12, 16, 16), dtype=torch.uint8)
        ids = torch.tensor([0, 5, 19])
        expected = restored.get_module("synpo").net(obs, ids, ids).logits.detach().numpy()
        assert (
            restored.train()["num_states_collected_lifetime"] == restored.replay.steps_added > steps
        )  # counted from the start
    finally:
        restored.stop()
    meta = json.loads((tmp_path / "ckpt" / "synpo_meta.json").read_text())
    assert len(meta["split"]["seen"]) == 144

    module_path = tmp_path / "ckpt" / "learner_group" / "learner" / "rl_module" / "synpo"
    code = f"""
import sys, torch
from ray.rllib.core.rl_module.rl_module import RLModule
module = RLModule.from_checkpoint({str(module_path)!r})
torch.manual_seed(0)
obs = torch.randint(0, 256, (3, 12, 16, 16), dtype=torch.uint8)
ids = torch.tensor([0, 5, 19])
out = module.forward_inference({{"obs": {{"obs": obs, "env_id": ids, "task_id": ids}}}})
import ray
assert not ray.is_initialized()
print(out["action_dist_inputs"].tolist())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert np.allclose(json.loads(out.stdout.strip().splitlines()[-1]), expected, atol=1e-5)


@pytest.mark.parametrize(
    "training, message",
    [
        ({"l1": -1.0}, "`l1`"),
        ({"trajectories_per_update": 0}, "trajectories_per_update"),
        ({"states_per_update": 0.5}, "states_per_update"),
        ({"expert_epsilon": 1.5}, "expert_epsilon"),
        # Not a number at all: named, not a TypeError from a comparison.
        ({"expert_epsilon": "0.1"}, r"`expert_epsilon` must be a probability in \[0, 1\], got '0.1'"),
        ({"l2": True}, "`l2` must be a number >= 0, got True"),
        ({"weight_decay": -1e-4}, "`weight_decay`"),
        ({"split": {"random": {"num_seen": 5}}}, "too few"),
        ({"encoder": "resnet9000"}, "resnet9000"),
        ({"precision": "half"}, r"`precision` must be one of \['float32', 'bfloat16', 'auto'\], got 'half'"),
        (
            {"lr": [[0, 1e-3], [3600, "2e-05"]]},
            (
                r"`lr` must be a number > 0 or a schedule .*write 2.0e-05\), "
                r"got \[\[0, 0.001\], \[3600, '2e-05'\]\]"
            ),
        ),
        ({"lr": [[0, 1e-3], [100, -1e-5]]}, r"`lr` must be a number > 0 or a schedule"),
        (
            {"lr_schedule_clock": "minutes"},
            r"`lr_schedule_clock` must be one of \['states_collected', 'training_seconds'\], got 'minutes'",
        ),
    ],
)
def test_validate_names_bad_knobs(training, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**training).validate()


def test_unknown_model_config_key_is_named():
    config = tiny_config()
    config.rl_module(model_config={**config.model_config, "colour": 1})
    with pytest.raises(ValueError, match="colour"):
        config.validate()


def test_subgoal_embedding_refuses_frames_with_an_agent_channel():
    config = tiny_config()
    config.rl_module(model_config={**config.model_config, "subgoal_embedding": "add"})
    config.environment(env_config={"num_slots": 4, "gridworld": {"agent_channel": True}})
    with pytest.raises(ValueError, match="subgoal_embedding 'add' reads RGB frames; .* agent_channel: true"):
        config.validate()
