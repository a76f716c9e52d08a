"""``rllib report``: tables and figures of hand-made Ray Tune experiment folders, number by number.

The folders have the shape ``rllib train file`` + ``rllib evaluate`` write (Tune's experiment
state, one folder per started trial with params.json, progress.csv, a checkpoint and evaluation/),
so the tests need neither Ray nor a training run.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rllib_synpo.studies.figures import curve_band, evaluation_rows, mean_matrix
from rllib_synpo.studies.paper_numbers import BLIND, TABLE1
from rllib_synpo.studies.report import report_experiment
from rllib_synpo.studies.study import format_value, group_labels, read_study, short_names
from rllib_synpo.studies.trials import ReportError, Trial, flatten

STATES = "learners/__all_modules__/num_module_steps_trained_lifetime"
SEEN, UNSEEN = "evaluation/seen_avg_success_rate", "evaluation/unseen_avg_success_rate"
# Columns of a real progress.csv that the report does not read (it must pick its own out).
OTHER_COLUMNS = (
    "timers/training_iteration",
    "evaluation/seen_avg_return",
    "learners/synpo/num_module_steps_trained_lifetime",
)
TINY_MODEL = {"encoder": "compact", "feature_dim": 16, "embedding_dim": 8, "basis_dim": 8, "hidden_dim": 16}


def _tag(grid: dict) -> str:
    """Tune's experiment tag of a trial's grid values, without the trial's index."""
    return ",".join(f"{key.split('/')[-1]}={value}" for key, value in grid.items())


def _dirname(index: int, grid: dict) -> str:
    tag = re.sub(r"[^\w=.,-]", "_", _tag(grid))
    return f"SynPo_synpo_pairs_31a8d_{index:05d}_{index}_{tag}_2026-12-01_21-21-38"


def _progress(path: Path, states: list[float], seconds: list[float], evaluations: dict[int, tuple]) -> None:
    """progress.csv with evaluation rows only at the given iterations (empty cells elsewhere)."""
    rows = []
    for i, (done, elapsed) in enumerate(zip(states, seconds)):
        seen, unseen = evaluations.get(i, (None, None))
        rows.append(
            {
                "training_iteration": i + 1,
                "time_total_s": elapsed,
                STATES: done,
                SEEN: seen,
                UNSEEN: unseen,
                **{column: 0.5 for column in OTHER_COLUMNS},
            }
        )
    pd.DataFrame(rows).to_csv(path, index=False)


def _trial(
    exp: Path,
    index: int,
    grid: dict,
    params: dict,
    status: str = "TERMINATED",
    seen: float | None = 0.5,
    unseen: float | None = 0.4,
    states: float = 1000.0,
    seconds: float = 600.0,
    evaluations: dict | None = None,
    evaluated: bool = True,
    started: bool = True,
) -> dict:
    """Writes one trial's folder (when started) and returns its Tune trial JSON."""
    trial = {
        "trial_id": f"31a8d_{index:05d}",
        "status": status,
        "experiment_tag": f"{index}_{_tag(grid)}",
        "evaluated_params": grid,
        "trainable_name": "SynPo",
        "config": params,
        "custom_dirname": None,
        "storage": {"_type": "CLOUDPICKLE_FALLBACK", "value": "8005"},
        "results": "80054e2e",
    }
    if not started:
        return trial
    name = _dirname(index, grid)
    trial["relative_logdir"] = name
    folder = exp / name
    checkpoint = folder / "checkpoint_000002"
    checkpoint.mkdir(parents=True)
    (folder / "checkpoint_000001").mkdir()
    seen_pairs = [[0, 0], [1, 1]]
    meta = {"module_id": "synpo", "split": {"num_envs": 2, "num_tasks": 3, "seen": seen_pairs, "adapt": []}}
    (checkpoint / "synpo_meta.json").write_text(json.dumps(meta))
    (folder / "params.json").write_text(json.dumps(params))
    _progress(folder / "progress.csv", [states / 2, states], [seconds / 2, seconds], evaluations or {})
    if evaluated:
        (folder / "evaluation").mkdir()
        summary = {
            "seen": {"avg_success_rate": seen, "avg_return": 9.1, "first_pick_accuracy": 0.9, "pairs": 144},
            "unseen": {
                "avg_success_rate": unseen,
                "avg_return": 8.0,
                "first_pick_accuracy": 0.8,
                "pairs": 256,
            },
            "episodes_per_pair": 100,
            "policy": "greedy",
            "checkpoint": f"/elsewhere/{name}/checkpoint_000002",
            "seconds": 40.1,
            "seed": 0,
        }
        (folder / "evaluation" / "summary.json").write_text(json.dumps(summary))
        frame = pd.DataFrame(
            np.full((2, 3), 0.5),
            index=pd.Index(range(2), name="env_id"),
            columns=["task_0", "task_1", "task_2"],
        )
        frame.to_csv(folder / "evaluation" / "success_matrix.csv")
    return trial


def _state(exp: Path, trials: list[dict], stamp: str = "2026-12-01_21-21-38") -> None:
    """Tune's experiment_state file: trial_data pairs of (trial JSON, runtime JSON) strings."""
    exp.mkdir(parents=True, exist_ok=True)
    runtime = json.dumps({"start_time": 1.0, "num_failures": 0, "last_result": {}})
    state = {"trial_data": [[json.dumps(t), runtime] for t in trials], "runner_data": {}, "stats": {}}
    (exp / f"experiment_state-{stamp}.json").write_text(json.dumps(state))
    (exp / f"basic-variant-state-{stamp}.json").write_text("{}")
    (exp / ".validate_storage_marker").touch()


def _params(seed: int, network: str | None = None, window: int | None = None, **config) -> dict:
    model = dict(TINY_MODEL) | ({"network": network} if network else {})
    gridworld = {"max_steps": 60} | ({"window": window} if window is not None else {})
    return {
        "seed": seed,
        "env": "synpo_pairs",
        "_model_config": model,
        "env_config": {"num_slots": 4, "gridworld": gridworld},
        "evaluation_interval": 1,
        **config,
    }


def _with_mazes(params: dict, generated: dict) -> dict:
    params["env_config"]["gridworld"]["mazes"] = {"generated": generated}
    return params


def _rows(out: Path) -> dict[str, pd.Series]:
    frame = pd.read_csv(out / "report.csv")
    return {row["group"]: row for _, row in frame.iterrows()}


# (seen, unseen) success rates of the 2 networks x 3 seeds study, and their hand-computed stats.
RATES = {
    "mlp": [(0.60, 0.50), (0.70, 0.55), (0.80, 0.65)],
    "synpo": [(0.90, 0.80), (0.92, 0.86), (0.94, 0.83)],
}
EXPECTED = {  # (seen mean, seen std, unseen mean, unseen std) in %, std with ddof 1
    "mlp": (70.0, 10.0, 170 / 3, math.sqrt(175 / 3)),
    "synpo": (92.0, 2.0, 83.0, 3.0),
}


@pytest.fixture
def networks_study(tmp_path) -> Path:
    exp = tmp_path / "storage" / "networks"
    exp.mkdir(parents=True)
    trials = []
    for n, network in enumerate(RATES):
        for seed, (seen, unseen) in enumerate(RATES[network]):
            index = 3 * n + seed
            grid = {"_model_config/network": network, "seed": seed}
            trials.append(
                _trial(
                    exp,
                    index,
                    grid,
                    _params(seed, network),
                    seen=seen,
                    unseen=unseen,
                    evaluations={0: (seen / 2, unseen / 2), 1: (seen, unseen)},
                    states=1000.0 * (index + 1),
                    seconds=60.0 * (index + 1),
                )
            )
    _state(exp, trials)
    return exp


def test_two_networks_three_seeds_number_by_number(networks_study):
    paths = report_experiment(networks_study, echo=None)
    out = networks_study / "report"
    assert paths[:4] == [out / "report.md", out / "report.csv", out / "curves.png", out / "heatmap.png"]
    trial_folders = sorted(p for p in networks_study.iterdir() if (p / "params.json").is_file())
    assert sorted(paths[4:]) == [out / trial.name for trial in trial_folders] and len(trial_folders) == 6
    for trial in trial_folders:  # the numbers behind the table travel with the report
        record = out / trial.name
        assert sorted(os.listdir(record)) == ["params.json", "success_matrix.csv", "summary.json"]
        assert (record / "params.json").read_bytes() == (trial / "params.json").read_bytes()
        for name in ("summary.json", "success_matrix.csv"):
            assert (record / name).read_bytes() == (trial / "evaluation" / name).read_bytes()
    rows = _rows(out)
    assert list(rows) == ["network=mlp", "network=synpo"]
    for n, network in enumerate(RATES):
        row = rows[f"network={network}"]
        assert row["trials"] == 3 and row["seeds"] == "0 1 2"
        assert [row["seen_mean"], row["seen_std"], row["unseen_mean"], row["unseen_std"]] == pytest.approx(
            EXPECTED[network]
        )
        paper = TABLE1[network]
        assert [row["paper_seen"], row["paper_seen_std"], row["paper_unseen"], row["paper_unseen_std"]] == [
            paper.seen,
            paper.seen_std,
            paper.unseen,
            paper.unseen_std,
        ]
        # trial i trained 1000 (i + 1) states in 60 (i + 1) seconds: mean over i = 3n, 3n + 1, 3n + 2
        assert row["states_trained_mean"] == pytest.approx(1000.0 * (3 * n + 2))
        assert row["train_minutes_mean"] == pytest.approx(3 * n + 2)
    markdown = (out / "report.md").read_text()
    assert (
        "| network=mlp | 3 | 0, 1, 2 | 70.0 ± 10.0 | 69.0 ± 2.0 | 56.7 ± 7.6 | 66.1 ± 2.6 | MLP, window 1 "
        in markdown
    )
    assert "| 2,000 | 2.0 |" in markdown
    assert "- Missing trials (not finished, left out of the numbers): 0" in markdown
    assert "- Evaluation episodes per pair: 100" in markdown
    for png in paths[2:4]:
        assert png.stat().st_size > 1000


def test_the_experiment_folder_is_named_relative_to_the_working_directory(networks_study, monkeypatch):
    trial = next(p for p in sorted(networks_study.iterdir()) if (p / "params.json").is_file())
    summary_path = trial / "evaluation" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary_path.write_text(json.dumps(summary | {"checkpoint": str(trial / "checkpoint_000002")}))
    monkeypatch.chdir(networks_study.parent.parent)
    report_experiment(Path("storage/networks"), echo=None)
    assert "- Experiment folder: `storage/networks`" in (networks_study / "report" / "report.md").read_text()
    copied = json.loads((networks_study / "report" / trial.name / "summary.json").read_text())
    assert copied == summary | {"checkpoint": f"storage/networks/{trial.name}/checkpoint_000002"}
    elsewhere = networks_study.parent.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report_experiment(networks_study, echo=None)
    assert (
        f"- Experiment folder: `{networks_study.resolve()}`"
        in (networks_study / "report" / "report.md").read_text()
    )


def test_groups_follow_the_grid_whatever_order_the_experiment_state_lists_the_trials(networks_study):
    state_file = next(networks_study.glob("experiment_state-*.json"))
    state = json.loads(state_file.read_text())
    state["trial_data"].reverse()  # a resumed run's state lists its trials in another order
    state_file.write_text(json.dumps(state))
    study = read_study(networks_study)
    grid = [(trial.grid["_model_config/network"], trial.grid["seed"]) for trial in study.trials]
    assert grid == [(network, seed) for network in RATES for seed in range(3)]
    report_experiment(networks_study, echo=None)
    assert list(_rows(networks_study / "report")) == ["network=mlp", "network=synpo"]


def test_out_folder_and_the_seeds_mean_success_matrix(networks_study, tmp_path):
    study = read_study(networks_study)
    assert [len(g.trials) for g in study.groups] == [3, 3]
    matrices = [
        np.array([[1.0, np.nan, 0.0], [0.5, 0.5, np.nan]]),
        np.array([[0.0, np.nan, 0.0], [1.0, 0.5, 0.2]]),
    ]
    mean = mean_matrix(matrices, study.groups[0])
    np.testing.assert_allclose(mean, [[0.5, np.nan, 0.0], [0.75, 0.5, 0.2]])
    assert study.groups[0].trials[0].seen_mask.tolist() == [[True, False, False], [False, True, False]]
    out = tmp_path / "elsewhere"
    assert [p.parent for p in report_experiment(networks_study, out, echo=None)] == [out] * (4 + 6)
    # into the experiment folder itself: the trial folders are there already, left as they were
    before = {p: p.read_bytes() for p in networks_study.glob("*/**/*") if p.is_file()}
    assert len(report_experiment(networks_study, networks_study, echo=None)) == 4
    assert {p: p.read_bytes() for p in networks_study.glob("*/**/*") if p.is_file()} == before


def test_paper_numbers_only_in_the_papers_setting(tmp_path):
    """One seed per group: the blind mlp has the paper's window-0 numbers; sf at window 0 (not in
    the blind table), an l3 ablation, a ratio split and a second maze set have none; a random
    split's seed is free, and so is spelling the built-in mazes as their generator call."""
    exp = tmp_path / "setting"
    cases = [
        ({"_model_config/network": "mlp", "env_config/gridworld/window": 0}, _params(0, "mlp", 0)),
        ({"_model_config/network": "sf", "env_config/gridworld/window": 0}, _params(0, "sf", 0)),
        ({"_model_config/network": "synpo", "l3": 0.1}, _params(0, "synpo", 1, l3=0.1)),
        (
            {"split": {"ratio": {"fraction": 0.3, "seed": 0}}},
            _params(0, split={"ratio": {"fraction": 0.3, "seed": 0}}),
        ),
        ({"split": {"random": {"seed": 3}}}, _params(0, split={"random": {"seed": 3}})),
        (
            {"split": {"random": {"seed": 3, "num_seen": 100}}},
            _params(0, split={"random": {"seed": 3, "num_seen": 100}}),
        ),
        ({"env_config/gridworld/mazes": "other"}, _with_mazes(_params(0), {"count": 20, "seed": 2019})),
        ({"env_config/gridworld/mazes": "built-in"}, _with_mazes(_params(0), {"count": 20, "seed": 2018})),
    ]
    exp.mkdir()
    _state(
        exp, [_trial(exp, i, grid, params, seen=0.5, unseen=0.25) for i, (grid, params) in enumerate(cases)]
    )
    report_experiment(exp, echo=None)
    rows = list(_rows(exp / "report").values())
    assert [row["group"] for row in rows] == [
        "network=mlp, window=0",
        "network=sf, window=0",
        "network=synpo, l3=0.1",
        "fraction=0.3",
        "random/seed=3",
        "random/seed=3, num_seen=100",
        "mazes=other",
        "mazes=built-in",
    ]
    assert [rows[0]["paper_seen"], rows[0]["paper_unseen_std"]] == [
        BLIND["mlp"].seen,
        BLIND["mlp"].unseen_std,
    ]
    assert [rows[4]["paper_seen"], rows[4]["paper_unseen"]] == [TABLE1["synpo"].seen, TABLE1["synpo"].unseen]
    assert [rows[7]["paper_seen"], rows[7]["paper_unseen"]] == [TABLE1["synpo"].seen, TABLE1["synpo"].unseen]
    for row in (rows[1], rows[2], rows[3], rows[5], rows[6]):
        assert all(
            math.isnan(row[c]) for c in ("paper_seen", "paper_seen_std", "paper_unseen", "paper_unseen_std")
        )
    # A single seed has a mean and no std, in the csv and the table.
    assert rows[0]["seen_mean"] == pytest.approx(50.0) and math.isnan(rows[0]["seen_std"])
    assert (
        "| network=sf, window=0 | 1 | 0 | 50.0 | - | 25.0 | - | - |"
        in (exp / "report" / "report.md").read_text()
    )


def test_network_options_beyond_the_papers_are_named_beside_the_papers_row(tmp_path):
    """A group whose network adds options the paper's lacks keeps the paper's numbers (the same
    setting) and names the options, in the CSV and the set-up; an option at its default is not
    named, and a plain group names none."""
    exp = tmp_path / "options"
    beyond = {"normalize_embeddings": False, "subgoal_embedding": "add", "maze_map": True, "map_routes": True}
    cases = [
        ({"_model_config/maze_map": False}, _params(0, "synpo")),
        ({"_model_config/maze_map": True}, _params(0, "synpo", _model_config=TINY_MODEL | beyond)),
    ]
    exp.mkdir()
    _state(exp, [_trial(exp, i, grid, params) for i, (grid, params) in enumerate(cases)])
    report_experiment(exp, echo=None)
    plain, planner = _rows(exp / "report").values()
    assert math.isnan(plain["network_options"])
    assert planner["network_options"] == "subgoal_embedding=add maze_map=true map_routes=true"
    assert planner["paper_unseen"] == plain["paper_unseen"] == TABLE1["synpo"].unseen
    text = (exp / "report" / "report.md").read_text()
    assert "  - maze_map=true: subgoal_embedding=add, maze_map=true, map_routes=true" in text
    assert "  - maze_map=false:" not in text


def test_a_partial_study_reports_the_finished_trials_and_names_the_missing(tmp_path):
    exp = tmp_path / "partial"
    exp.mkdir()
    trials = [
        _trial(exp, 0, {"seed": 0}, _params(0), seen=0.8, unseen=0.6),
        _trial(exp, 1, {"seed": 1}, _params(1), seen=0.6, unseen=0.4),
        _trial(exp, 2, {"seed": 2}, _params(2), status="ERROR", evaluated=False),
        _trial(exp, 3, {"seed": 3}, _params(3), status="PENDING", started=False),
    ]
    trials.append({"trial_id": "31a8d_00004", "status": "PENDING", "evaluated_params": {"seed": 4}})
    _state(exp, trials)
    echoed = []
    report_experiment(exp, echo=echoed.append)
    row = _rows(exp / "report")["partial"]
    assert [row["trials"], row["seen_mean"], row["seen_std"]] == [
        2,
        pytest.approx(70.0),
        pytest.approx(math.sqrt(200)),
    ]
    markdown = (exp / "report" / "report.md").read_text()
    assert "- Trials: 5; finished and evaluated: 2" in markdown
    assert "- Missing trials (not finished, left out of the numbers): 3" in markdown
    assert f"  - {_dirname(2, {'seed': 2})} (ERROR), group partial" in markdown
    assert "  - 31a8d_00003 (3_seed=3) (PENDING)" in markdown
    assert "  - 31a8d_00004 (never started) (PENDING)" in markdown
    assert echoed == [
        f"left out: {_dirname(2, {'seed': 2})} (ERROR), group partial",
        "left out: 31a8d_00003 (3_seed=3) (PENDING), group partial",
        "left out: 31a8d_00004 (never started) (PENDING), group partial",
    ]


def test_a_trial_stopped_before_its_stop_criteria_is_missing_though_tune_says_terminated(tmp_path):
    """After Ctrl-C Tune marks the running trials TERMINATED; their last result tells."""
    exp = tmp_path / "interrupted"
    done = _trial(exp, 0, {"seed": 0}, _params(0), seen=0.8, unseen=0.6)
    cut = _trial(exp, 1, {"seed": 1}, _params(1), seen=0.1, unseen=0.1)
    for trial in (done, cut):
        trial["stopping_criterion"] = {"time_total_s": 3600}
    exp.mkdir(exist_ok=True)
    results = [{"time_total_s": 3601.5}, {"time_total_s": 1200.0}]
    runtimes = [json.dumps({"start_time": 1.0, "last_result": result}) for result in results]
    state = {
        "trial_data": [[json.dumps(t), r] for t, r in zip((done, cut), runtimes)],
        "runner_data": {},
        "stats": {},
    }
    (exp / "experiment_state-2026-12-01_21-21-38.json").write_text(json.dumps(state))
    report_experiment(exp, echo=None)
    row = _rows(exp / "report")["interrupted"]
    assert [row["trials"], row["seen_mean"]] == [1, pytest.approx(80.0)]
    markdown = (exp / "report" / "report.md").read_text()
    assert f"{_dirname(1, {'seed': 1})} (TERMINATED before its stop criteria)" in markdown


def test_states_and_curves_come_from_result_json_where_progress_csv_lacks_their_columns(tmp_path):
    """Tune's progress.csv keeps the first result's columns: a trial whose updates start after
    a warm-up has no learner or evaluation columns there, but every key in result.json."""
    exp = tmp_path / "warmup"
    trials = [_trial(exp, i, {"seed": i}, _params(i)) for i in range(2)]
    _state(exp, trials)
    for index, trial in enumerate(trials):
        folder = exp / trial["relative_logdir"]
        pd.DataFrame({"training_iteration": [1, 2, 3], "time_total_s": [1.0, 2.0, 3.0]}).to_csv(
            folder / "progress.csv", index=False
        )
        results = [
            {"training_iteration": 1, "time_total_s": 60.0},
            {
                "training_iteration": 2,
                "time_total_s": 120.0,
                "learners": {"__all_modules__": {"num_module_steps_trained_lifetime": 2048}},
                "evaluation": {"seen_avg_success_rate": 0.2, "unseen_avg_success_rate": 0.1 * index},
            },
            {
                "training_iteration": 3,
                "time_total_s": 180.0,
                "learners": {"__all_modules__": {"num_module_steps_trained_lifetime": 4096 * (index + 1)}},
            },
        ]
        (folder / "result.json").write_text("".join(json.dumps(r) + "\n" for r in results))
    report_experiment(exp, echo=None)
    row = _rows(exp / "report")["warmup"]
    assert row["states_trained_mean"] == pytest.approx((4096 + 8192) / 2)
    assert row["train_minutes_mean"] == pytest.approx(3.0)
    (group,) = read_study(exp).groups
    unseen = sorted(
        float(t.progress["evaluation/unseen_avg_success_rate"].dropna().iloc[0]) for t in group.trials
    )
    assert unseen == [0.0, 0.1]  # each trial's periodic evaluation, read from its result.json


def test_a_resumed_trial_counts_each_iteration_once_from_the_timeline_it_ended_on(tmp_path):
    """Tune appends a resumed trial's results to its result.json from its last checkpoint on, so
    the iterations after that checkpoint are there twice: the report reads the second run's."""
    exp = tmp_path / "resumed"
    (trial,) = [_trial(exp, 0, {"seed": 0}, _params(0))]
    _state(exp, [trial])
    first_run = [(1, 60.0, None), (2, 120.0, 0.3), (3, 180.0, None), (4, 240.0, 0.5)]
    resumed_from_2 = [(3, 170.0, None), (4, 230.0, 0.4), (5, 290.0, None), (6, 350.0, 0.6)]
    lines = [
        json.dumps(
            {
                "training_iteration": iteration,
                "time_total_s": seconds,
                **(
                    {}
                    if unseen is None
                    else {"evaluation": {"seen_avg_success_rate": 0.9, "unseen_avg_success_rate": unseen}}
                ),
            }
        )
        for iteration, seconds, unseen in first_run + resumed_from_2
    ]
    (exp / trial["relative_logdir"] / "result.json").write_text("\n".join(lines) + "\n")
    (evaluated,) = read_study(exp).groups[0].trials
    assert evaluated.progress["training_iteration"].tolist() == [1, 2, 3, 4, 5, 6]
    assert evaluated.progress["time_total_s"].tolist() == [60.0, 120.0, 170.0, 230.0, 290.0, 350.0]
    rows = evaluation_rows(evaluated)
    assert rows[UNSEEN].tolist() == [0.3, 0.4, 0.6]


def test_progress_csv_rows_a_resumed_trial_appended_under_other_columns_are_left_out(tmp_path):
    """Without result.json the report falls back on progress.csv, where a resumed trial's rows
    follow the first run's header with as many cells as its own first result had keys."""
    exp = tmp_path / "resumed_csv"
    (trial,) = [_trial(exp, 0, {"seed": 0}, _params(0))]
    _state(exp, [trial])
    progress = exp / trial["relative_logdir"] / "progress.csv"
    progress.write_text(
        "training_iteration,time_total_s\n1,60.0\n2,120.0\n"
        "3,170.0,2048,0.9,0.4\n3,175.0\n"  # a longer row from the resumed run, then one that fits
    )
    (evaluated,) = read_study(exp).groups[0].trials
    assert evaluated.progress["training_iteration"].tolist() == [1, 2, 3]
    assert evaluated.progress["time_total_s"].tolist() == [60.0, 120.0, 175.0]


def test_a_finished_trial_without_evaluation_is_an_error(tmp_path):
    exp = tmp_path / "unevaluated"
    exp.mkdir()
    _state(
        exp,
        [_trial(exp, 0, {"seed": 0}, _params(0)), _trial(exp, 1, {"seed": 1}, _params(1), evaluated=False)],
    )
    with pytest.raises(
        ReportError,
        match=re.escape(_dirname(1, {"seed": 1})) + ".*" + re.escape(f"run `rllib evaluate {exp}` first"),
    ):
        report_experiment(exp, echo=None)


def test_a_folder_without_trials_or_finished_trials_is_an_error(tmp_path):
    (tmp_path / "empty" / "not_a_trial").mkdir(parents=True)
    with pytest.raises(
        ReportError, match="holds no Tune trials .no experiment_state-.*json and no trial folder"
    ):
        report_experiment(tmp_path / "empty", echo=None)
    with pytest.raises(ReportError, match="is not a folder"):
        report_experiment(tmp_path / "absent", echo=None)
    exp = tmp_path / "running"
    exp.mkdir()
    _state(exp, [_trial(exp, 0, {"seed": 0}, _params(0), status="RUNNING", evaluated=False)])
    with pytest.raises(ReportError, match="has no finished trial .statuses RUNNING"):
        report_experiment(exp, echo=None)


def test_without_experiment_state_the_params_differences_are_the_groups(tmp_path):
    """Trial folders only: groups by the params.json values that differ (l2, l3), not the seed nor
    Tune's text of an object (it differs between trials); the ablations (l2 or l3 off their
    defaults) have no paper numbers."""
    exp = tmp_path / "ablation"
    exp.mkdir()
    index = 0
    for l2, l3 in ((0.0, 0.001), (0.1, 0.001), (0.1, 0.1)):
        for seed in (0, 1):
            callback = f"<function on_result at 0x7f00{index:02d}>"
            params = _params(seed, l2=l2, l3=l3, callbacks_on_train_result=callback)
            _trial(exp, index, {"seed": seed}, params, seen=0.5 + 0.1 * seed)
            index += 1
    report_experiment(exp, echo=None)
    rows = _rows(exp / "report")
    assert list(rows) == ["l2=0, l3=0.001", "l2=0.1, l3=0.001", "l2=0.1, l3=0.1"]
    assert [row["trials"] for row in rows.values()] == [2, 2, 2]
    assert rows["l2=0.1, l3=0.001"]["paper_seen"] == TABLE1["synpo"].seen
    assert math.isnan(rows["l2=0, l3=0.001"]["paper_seen"]) and math.isnan(
        rows["l2=0.1, l3=0.1"]["paper_seen"]
    )
    assert rows["l2=0, l3=0.001"]["seen_mean"] == pytest.approx(55.0)
    assert (
        "- Tune experiment states: none; trials found from their folders"
        in (exp / "report" / "report.md").read_text()
    )


def test_the_newest_experiment_state_names_the_trials(tmp_path):
    exp = tmp_path / "resumed"
    exp.mkdir()
    first = _trial(exp, 0, {"seed": 0}, _params(0), seen=0.2)
    second = _trial(exp, 1, {"seed": 1}, _params(1), seen=0.4)
    _state(exp, [dict(first, status="RUNNING"), dict(second, status="PENDING")], stamp="2026-12-01_09-00-00")
    _state(exp, [first, second], stamp="2026-12-02_09-00-00")
    report_experiment(exp, echo=None)
    assert _rows(exp / "report")["resumed"]["seen_mean"] == pytest.approx(30.0)


def test_trials_of_two_runs_into_one_folder_are_reported_together(tmp_path):
    """A second `rllib train file` into the same experiment folder (other seeds) writes its own
    experiment state; the report counts the trials of both."""
    exp = tmp_path / "two-runs"
    exp.mkdir()
    _state(exp, [_trial(exp, 0, {"seed": 0}, _params(0), seen=0.2)], stamp="2026-12-01_09-00-00")
    _state(exp, [_trial(exp, 1, {"seed": 1}, _params(1), seen=0.4)], stamp="2026-12-02_09-00-00")
    study = read_study(exp)
    assert [len(g.trials) for g in study.groups] == [2]
    assert [state.name for state in study.state_files] == [
        "experiment_state-2026-12-01_09-00-00.json",
        "experiment_state-2026-12-02_09-00-00.json",
    ]
    report_experiment(exp, echo=None)
    assert (
        "- Tune experiment states: experiment_state-2026-12-01_09-00-00.json, "
        "experiment_state-2026-12-02_09-00-00.json" in (exp / "report" / "report.md").read_text()
    )


def test_learning_curves_align_seeds_by_evaluation_and_truncate_to_the_shortest(tmp_path):
    """progress.csv as Tune writes it: evaluation cells empty on rows without an evaluation."""
    exp = tmp_path / "curves"
    exp.mkdir()
    _state(
        exp,
        [
            _trial(exp, 0, {"seed": 0}, _params(0), evaluations={0: (0.2, 0.1), 1: (0.6, 0.3)}),
            _trial(exp, 1, {"seed": 1}, _params(1), seconds=1200.0, evaluations={1: (0.4, 0.2)}),
        ],
    )
    group = read_study(exp).groups[0]
    curves = [evaluation_rows(t) for t in group.trials]
    assert [len(c) for c in curves] == [2, 1]
    minutes, mean, std = curve_band(curves, "seen")
    # seed 0's first evaluation (5 minutes, 20 %) beside seed 1's only one (20 minutes, 40 %)
    assert minutes.tolist() == pytest.approx([12.5]) and mean.tolist() == pytest.approx([30.0])
    assert std.tolist() == pytest.approx([math.sqrt(200)])
    assert curve_band(curves[:1], "unseen")[2] is None


def test_short_unique_names_of_grid_keys():
    keys = ["_model_config/network", "split/ratio/seed", "split/ratio/fraction", "a/l2", "b/l2"]
    assert short_names(keys) == {
        "_model_config/network": "network",
        "split/ratio/seed": "ratio/seed",
        "split/ratio/fraction": "fraction",
        "a/l2": "a/l2",
        "b/l2": "b/l2",
    }
    assert [format_value(v) for v in (0.0, 0.001, 1e-05, 3, "mlp", None, [1, 2])] == [
        "0",
        "0.001",
        "1e-05",
        "3",
        "mlp",
        "null",
        "[1, 2]",
    ]


def test_a_grid_over_whole_model_configs_is_labelled_by_what_tells_the_groups_apart():
    plain = {"network": "mlp", "encoder": "compact"}
    coefficients = {
        **plain,
        "network": "mtl",
        "normalize_embeddings": True,
        "coefficient_function": "product",
    }
    configs = [plain, coefficients, {**coefficients, "network": "synpo"}]
    trials = [
        Trial(f"t{i}_{seed}", "TERMINATED", None, flatten({"_model_config": c, "seed": seed}), {})
        for i, c in enumerate(configs)
        for seed in (0, 1)
    ]
    labels = group_labels(trials, "table1")
    assert [labels[f"t{i}_0"] for i in range(3)] == ["network=mlp", "network=mtl", "network=synpo"]
    assert labels["t1_0"] == labels["t1_1"]


def test_model_configs_that_each_set_a_different_option_are_labelled_by_their_own_option():
    base = {"network": "synpo", "normalize_embeddings": True}
    configs = [{**base, "basis_dim": 32}, {**base, "coefficient_dropout": 0.25}]
    trials = [
        Trial(f"t{i}", "TERMINATED", None, flatten({"_model_config": c, "seed": 0}), {})
        for i, c in enumerate(configs)
    ]
    assert group_labels(trials, "screen") == {"t0": "basis_dim=32", "t1": "coefficient_dropout=0.25"}


def test_importing_the_module_loads_neither_ray_nor_matplotlib():
    probe = (
        "import sys, rllib_synpo.studies.report; "
        "print(sorted({'ray', 'matplotlib'} & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unseen_pairs_split_by_first_colour_from_the_summary_or_the_matrix(tmp_path):
    """Seen (0, 0) "AB" and (1, 1) "BC": every unseen pair of env 0 starts with B or C and of env 1
    with A or C, so all are uncovered. A summary with the parts is used as written; one
    without them (written before) gets them from its success matrix."""
    exp = tmp_path / "colours"
    exp.mkdir()
    _state(exp, [_trial(exp, i, {"seed": i}, _params(i)) for i in range(2)])
    summary_path = next(exp.glob("*00001*")) / "evaluation" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["unseen_uncovered"] = {"avg_success_rate": 0.3, "pairs": 4}
    summary["unseen_covered"] = {"avg_success_rate": None, "pairs": 0}
    summary_path.write_text(json.dumps(summary))
    report_experiment(exp, echo=None)
    (row,) = _rows(exp / "report").values()
    # seed 0 from the matrix (every pair 0.5), seed 1 from its summary
    assert [row["unseen_uncovered_mean"], row["unseen_uncovered_std"]] == pytest.approx(
        [40.0, 14.142], abs=1e-3
    )
    assert math.isnan(row["unseen_covered_mean"])
    assert "| 40.0 ± 14.1 | - |" in (exp / "report" / "report.md").read_text()
