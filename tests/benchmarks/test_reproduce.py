"""``python -m rllib_synpo.reproduce`` with tiny budgets: table1 end to end (table, paper columns,
skip on rerun), bad input, and the other studies sharing the same run folder."""

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from synpo_envs.splits import Split

from rllib_synpo import reproduce
from rllib_synpo.budgeted import Budget
from rllib_synpo.direct import DirectConfig
from rllib_synpo.paper_numbers import BLIND, TABLE1
from rllib_synpo.reproduce import default_jobs, main, method_runs, parser
from rllib_synpo.study_runs import Progress, RunSpec, StudyError, load_result, run_study

ROOT = Path(__file__).resolve().parents[2]
# Tiny runs: 0.6 s of training, a small replay and batch, 5-step episodes, one final
# evaluation of one episode per pair.
TINY = [
    "--minutes-per-run", "0.01", "--eval-minutes", "0.01", "--seeds", "0", "--final-episodes", "1",
    "--num-collectors", "16", "--batch-size", "16", "--replay-capacity", "500", "--warmup-states", "32",
    "--max-steps", "5",
]
METHODS = ["synpo", "sf"]


def _reproduce(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "rllib_synpo.reproduce", *args, "--threads", "1"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def table1(tmp_path_factory):
    """The two runs side by side, each in its own process."""
    out = tmp_path_factory.mktemp("reproduce") / "gw"
    result = _reproduce("table1", *TINY, "--methods", *METHODS, "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result.stdout


def test_table1_writes_runs_and_the_table_beside_the_papers(table1):
    out, stdout = table1
    for name in ("synpo_seed0", "sf_seed0"):
        assert {p.suffix for p in out.glob(f"{name}.*")} == {".csv", ".png", ".pt", ".json"}
    assert "[run 1/2] synpo_seed0: minute" in stdout and "[run 2/2] sf_seed0" in stdout and "left" in stdout
    table = pd.read_csv(out.with_name("gw_table1.csv"))
    ours = table[table["section"].str.startswith("Setting 1")].set_index("method")
    assert list(ours.index) == ["SF", "SynPo"] and (ours["seeds"] == 1).all()
    for column in ("seen_avgsr_mean", "unseen_avgsr_mean", "seen_return_mean", "unseen_return_mean"):
        assert ours[column].astype(float).notna().all(), column
        assert ours[column.replace("_mean", "_std")].isna().all(), column  # one seed: no spread
    assert ours.loc["SynPo", "paper_seen_avgsr_mean"] == TABLE1["synpo"].seen
    assert ours.loc["SF", "paper_unseen_avgsr_std"] == TABLE1["sf"].unseen_std
    blind = table[table["section"].str.startswith("Blind")].set_index("method")
    assert blind.loc["MTL", "paper_seen_avgsr_mean"] == BLIND["mtl"].seen and (blind["seeds"] == 0).all()
    markdown = out.with_name("gw_table1.md").read_text()
    assert "| SynPo | 1 |" in markdown and "83.3 ± 0.5" in markdown and "paper unseen AvgSR %" in markdown
    synpo_row = next(line for line in markdown.splitlines() if line.startswith("| SynPo | 1 |"))
    assert synpo_row.count("±") == 2  # the paper's two cells; one seed of ours has no std
    results = [json.loads((out / f"{name}.json").read_text()) for name in ("synpo_seed0", "sf_seed0")]
    assert [(r["runs_side_by_side"], r["torch_threads"]) for r in results] == [(2, 1), (2, 1)]
    precision = results[0]["precision"]  # "auto" as this machine resolves it
    assert results[0]["settings"]["config"]["precision"] == "auto" and precision in ("float32", "bfloat16")
    facts = ("- command: `python -m rllib_synpo.reproduce table1", "- seeds: 0", "- hardware: ", "torch threads per run 1",
             "runs side by side 2", "- minutes per run: 0.01", "- wall time: ", f"forward pass in {precision}")
    for fact in facts:
        assert fact in markdown, fact


def test_rerun_skips_finished_runs(table1):
    out, _ = table1
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    result = _reproduce("table1", *TINY, "--methods", *METHODS, "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("result exists, skipped") == 2 and "training" not in result.stdout
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")} == stamps


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own errors
        return stop.code


@pytest.mark.parametrize(
    "argv, message",
    [
        (["table1", "--methods", "synpo", "dqn"], "unknown method 'dqn'"),
        (["table1", "--seeds", "0", "-1"], "--seeds"),
        (["table1", "--seeds", "0", "x"], "invalid int value"),
        (["table1", "--minutes-per-run", "-5"], "--minutes-per-run must be > 0"),
        (["ratio", "--fractions", "0.5", "1.5"], "--fractions"),
        (["tables"], "invalid choice"),
        (["table1", "--device", "warp9"], "unknown torch device 'warp9'"),
        (["table1", "--precision", "half"], "invalid choice: 'half'"),
        (["table1", "--jobs", "0"], "--jobs must be >= 1, got 0"),
        (["ablation", "--variants", "full", "no_dropout"], "unknown ablation variant 'no_dropout'"),
        (["ablation", "--variants", "sf", "sf"], "--variants lists a variant twice"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(argv, message, capsys, tmp_path):
    assert _exit_code([*argv, "--out", str(tmp_path / "gw")] if argv != ["tables"] else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "gw").exists()


def test_a_failed_run_fails_the_study_once_the_runs_beside_it_finish(tmp_path, capsys):
    good, bad = method_runs(parser().parse_args(["table1", *TINY, "--methods", *METHODS]))
    bad = replace(bad, config=replace(bad.config, network="nope"))
    with pytest.raises(ValueError, match="unknown network 'nope'"):
        run_study([bad, good], tmp_path, jobs=2, threads=1)
    assert "run sf_seed0 failed; the runs in progress finish first" in capsys.readouterr().out
    assert [p.name for p in tmp_path.glob("*.json")] == ["synpo_seed0.json"]


def test_ctrl_c_stops_the_runs_side_by_side_and_says_how_to_resume(tmp_path):
    out = tmp_path / "gw"
    budget = [*TINY, "--methods", *METHODS, "--jobs", "2", "--threads", "1", "--out", str(out)]
    budget[budget.index("--minutes-per-run") + 1] = "5"
    study = subprocess.Popen(
        [sys.executable, "-m", "rllib_synpo.reproduce", "table1", *budget], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's foreground job has it
    )
    started = [study.stdout.readline() for _ in METHODS]
    assert all("training 5 min" in line for line in started), started
    os.killpg(study.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    _, err = study.communicate(timeout=60)
    assert study.returncode == reproduce.INTERRUPTED, err[-3000:]
    assert err == f"interrupted: the finished runs are stored under {out}; the same command resumes\n"
    assert not list(out.glob("*.json"))


@pytest.mark.parametrize(
    "flags, cores, jobs",
    [([], 2, 2), ([], 1, 1), (["--threads", "2"], 2, 1), (["--threads", "2"], 8, 4), (["--jobs", "3"], 2, 3),
     (["--device", "cuda"], 8, 1)],
)
def test_runs_side_by_side_share_the_cores(flags, cores, jobs, monkeypatch):
    monkeypatch.setattr(reproduce, "cpu_cores", lambda: cores)
    assert default_jobs(parser().parse_args(["table1", *flags])) == jobs


def test_time_left_counts_the_rounds_still_to_come():
    """Before any training the run's budget is the estimate for it and for each later round."""
    budget = Budget(minutes=10, eval_minutes=1, eval_episodes=2, final_episodes=100, lr_schedule="cosine")
    progress = Progress(total=5)
    progress.start(1, SimpleNamespace(name="synpo_seed0", budget=budget), rounds_after=2)
    assert progress.seconds_left(train_seconds=0) == pytest.approx(3 * 600, abs=5)


def test_each_progress_line_is_one_write(monkeypatch):
    """Runs side by side share stdout: a line written in pieces can interleave with another run's."""
    writes = []
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(write=writes.append, flush=lambda: None))
    budget = Budget(minutes=10, eval_minutes=1, eval_episodes=2, final_episodes=100, lr_schedule="cosine")
    progress = Progress(total=5)
    progress.start(1, SimpleNamespace(name="synpo_seed0", budget=budget), rounds_after=0)
    progress.on_heartbeat(train_seconds=60)
    assert len(writes) == 2 and all(w.endswith("\n") and w.count("\n") == 1 for w in writes), writes


def test_stored_results_with_other_settings_are_not_reused(table1, capsys):
    out, _ = table1
    changed = [*TINY, "--methods", *METHODS, "--out", str(out)]
    changed[changed.index("--final-episodes") + 1] = "2"
    assert _exit_code(["table1", *changed]) == 2
    assert "other settings" in capsys.readouterr().err


def test_blind_trains_window_0(table1):
    out, _ = table1
    assert main(["blind", *TINY, "--methods", "synpo", "--out", str(out)]) == 0
    blind = json.loads((out / "blind_synpo_seed0.json").read_text())
    assert blind["settings"]["config"]["env_kwargs"]["window"] == 0
    assert "| SynPo | 1 |" in out.with_name("gw_blind.md").read_text()


def test_ablation_reuses_table1s_full_model(table1, capsys):
    out, _ = table1
    assert main(["ablation", *TINY, "--out", str(out)]) == 0
    assert "synpo_seed0: result exists, skipped" in capsys.readouterr().out
    ablation = pd.read_csv(out.with_name("gw_ablation.csv"))
    assert len(ablation) == 4 and (ablation["seeds"] == 1).all()
    no_env = json.loads((out / "synpo_no_env_disentangle_seed0.json").read_text())["settings"]["config"]
    assert (no_env["l2"], no_env["l3"]) == (0.0, 0.001)
    assert out.with_name("gw_ablation.png").read_bytes()[:4] == b"\x89PNG"


def test_ablation_variants_choose_the_runs_sf_without_its_td_term_among_them(table1, capsys):
    out, _ = table1
    assert main(["ablation", *TINY, "--variants", "sf", "sf_no_td", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "sf_seed0: result exists, skipped" in printed and "synpo_no_disentangle" not in printed
    no_td = json.loads((out / "sf_no_td_seed0.json").read_text())["settings"]["config"]
    assert (no_td["network"], no_td["sf_td_weight"]) == ("sf", 0.0)
    ablation = pd.read_csv(out.with_name("gw_ablation.csv"))
    assert list(ablation["method"]) == ["SF (full)", "SF w/o TD term (sf_td_weight = 0)"]


def test_ratio_trains_on_10x10_splits(table1):
    out, _ = table1
    assert main(["ratio", *TINY, "--fractions", "0.2", "0.5", "--out", str(out)]) == 0
    ratio = pd.read_csv(out.with_name("gw_ratio.csv"))
    assert list(ratio["method"]) == ["20% seen", "50% seen"]
    assert len(json.loads((out / "ratio20_synpo_seed0.json").read_text())["settings"]["split"]["seen"]) == 20
    assert out.with_name("gw_ratio.png").read_bytes()[:4] == b"\x89PNG"


def test_convergence_plots_table1s_curves(table1, capsys):
    out, _ = table1
    assert main(["convergence", *TINY, "--out", str(out)]) == 0
    assert "training" not in capsys.readouterr().out
    curve = pd.read_csv(out.with_name("gw_convergence.csv"))
    assert list(curve["method"]) == ["SynPo"] and curve["seen_mean"].between(0, 100).all()
    assert out.with_name("gw_convergence.png").read_bytes()[:4] == b"\x89PNG"


def test_results_stored_before_a_new_option_existed_are_still_reused(table1):
    """A `DirectConfig` field added later (here: precision) is absent from older results; at
    its default the run is the same run, at another value it is not."""
    out, _ = table1
    path = out / "synpo_seed0.json"
    result = json.loads(path.read_text())
    settings = result["settings"]
    spec = RunSpec(
        name="synpo_seed0", group="synpo", seed=settings["seed"], config=DirectConfig(**settings["config"]),
        split=Split.from_dict(settings["split"]), budget=Budget(**settings["budget"]),
    )
    assert spec.settings() == settings
    older = out.parent / "older"
    older.mkdir(exist_ok=True)
    del result["settings"]["config"]["precision"]
    (older / path.name).write_text(json.dumps(result))
    float32 = replace(spec, config=replace(spec.config, precision=DirectConfig.precision))
    assert load_result(float32, older)["settings"] == result["settings"]
    for other in ("bfloat16", "auto"):
        with pytest.raises(StudyError, match="other settings"):
            load_result(replace(spec, config=replace(spec.config, precision=other)), older)


def test_report_only_tables_the_stored_runs_and_names_the_others(table1, tmp_path, capsys):
    out = tmp_path / "gw"
    shutil.copytree(table1[0], out)  # a copy: this table replaces the fixture folder's
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    argv = ["table1", *TINY, "--seeds", "0", "1", "--methods", "synpo", "sf", "mlp", "--out", str(out), "--report-only"]
    assert main(argv) == 0
    assert "training" not in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps  # nothing trained or rewritten
    table = pd.read_csv(out.with_name("gw_table1.csv"))
    ours = table[table["section"].str.startswith("Setting 1")].set_index("method")["seeds"]
    assert ours.to_dict() == {"SF": 1, "MLP": 0, "SynPo": 1}
    markdown = out.with_name("gw_table1.md").read_text()
    assert "- --report-only: 4 run(s) not stored yet, left out: mlp_seed0, synpo_seed1, sf_seed1, mlp_seed1" in markdown
    assert main(["convergence", *TINY, "--seeds", "0", "1", "--out", str(out), "--report-only"]) == 0
    assert pd.read_csv(out.with_name("gw_convergence.csv"))["method"].unique().tolist() == ["SynPo"]


def test_report_only_without_stored_runs_is_an_error(tmp_path, capsys):
    assert main(["table1", *TINY, "--methods", "mlp", "--out", str(tmp_path / "empty"), "--report-only"]) == 2
    assert "error: --report-only: none of this study's 1 runs is stored under" in capsys.readouterr().err
