"""The learning-speed benchmark with a tiny budget: it trains, evaluates and writes its curve."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _run_tiny(out: Path, *extra: str) -> None:
    args = [
        "benchmarks/learning_speed.py", "--minutes", "0.05", "--eval-minutes", "0.025", "--eval-episodes", "1",
        "--final-episodes", "1", "--threads", "1", "--num-collectors", "32", "--batch-size", "32",
        "--replay-capacity", "2000", "--warmup-states", "64", "--out", str(out), *extra,
    ]
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("extra", [[], ["--relabel", "--dagger", "0.5", "--absent-treasures", "0.3", "--lr-schedule", "cosine", "--pairs", "0:0,0:1,1:1", "--batch-norm", "--basis-dim", "16"]])
def test_tiny_budget_writes_csv_png_and_meta(tmp_path, extra):
    out = tmp_path / "curve"
    _run_tiny(out, *extra)
    curve = pd.read_csv(out.with_suffix(".csv"))
    assert len(curve) >= 2 and curve["updates"].is_monotonic_increasing
    for column in ("seen_avg_success_rate", "unseen_avg_success_rate", "seen_first_pick_accuracy", "policy_loss",
                   "seen_task_accuracy", "unseen_task_accuracy"):
        assert curve[column].between(0, 10).all(), column
    assert curve["episodes_per_pair"].iloc[-1] == 1
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    meta = out.with_suffix(".json").read_text()
    assert ('"relabel_seen_tasks": true' in meta and '"absent_treasures": 0.3' in meta and '"basis_dim": 16' in meta) or not extra


def test_cosine_schedule_decays_from_lr_to_the_final_fraction():
    from benchmarks.learning_speed import _parser, scheduled_lr

    args = _parser().parse_args(["--lr", "0.002", "--lr-schedule", "cosine", "--lr-final", "0.1"])
    rates = [scheduled_lr(args, progress) for progress in (0.0, 0.5, 1.0, 2.0)]
    assert rates == pytest.approx([0.002, 0.0011, 0.0002, 0.0002])
    constant = _parser().parse_args(["--lr", "0.002"])
    assert scheduled_lr(constant, 0.7) == 0.002


def test_coefficient_options_are_refused_for_networks_without_them():
    from benchmarks.learning_speed import main

    with pytest.raises(SystemExit, match=r"apply to networks \['synpo', 'mtl'\] only, not 'sf'"):
        main(["--network", "sf", "--coefficient-dropout", "0.3"])


@pytest.mark.parametrize("flag", ["--basis-dim", "--feature-dim", "--embedding-dim", "--width"])
def test_layer_sizes_must_be_positive(flag, capsys):
    from benchmarks.learning_speed import main

    with pytest.raises(SystemExit):
        main([flag, "0"])
    assert f"argument {flag}: expected a positive integer, got '0'" in capsys.readouterr().err


def test_a_bad_trainer_setting_is_a_one_line_error():
    from benchmarks.learning_speed import main

    with pytest.raises(SystemExit, match=r"^epsilon must be a probability in \[0, 1\], got 1.5$"):
        main(["--epsilon", "1.5"])


def test_compact_encoder_options_are_refused_for_other_encoders():
    from benchmarks.learning_speed import main

    with pytest.raises(SystemExit, match=r"apply to the compact encoder only, not 'paper_resnet'"):
        main(["--encoder", "paper_resnet", "--batch-norm"])


@pytest.mark.timeout(600)
def test_transfer_split_run_exports_a_checkpoint_of_the_p_quadrant(tmp_path):
    from rllib_synpo.evaluate import load_checkpoint

    _run_tiny(tmp_path / "curve", "--split", "transfer", "--normalize-embeddings", "--export", str(tmp_path / "ckpt"))
    curve = pd.read_csv(tmp_path / "curve.csv")
    assert (curve["seen_pairs"] == 100).all() and (curve["unseen_pairs"] == 0).all()
    net, split, _ = load_checkpoint(tmp_path / "ckpt")
    assert set(split.seen) == {(e, t) for e in range(10) for t in range(10)} and net.normalize_embeddings
    with pytest.raises(SystemExit, match="ckpt exists; name a new folder"):
        from benchmarks.learning_speed import main

        main(["--export", str(tmp_path / "ckpt")])
    # The same checkpoint, written afterwards from the run's .pt and the command line in its .json.
    from benchmarks.export_run import main as export_run

    assert export_run([str(tmp_path / "curve.pt"), str(tmp_path / "later")]) == 0
    later, later_split, _ = load_checkpoint(tmp_path / "later")
    assert later_split.to_dict() == split.to_dict()
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in later.state_dict().items())
    recorded = json.loads((tmp_path / "later" / "synpo_meta.json").read_text())["model_config"]
    assert recorded == json.loads((tmp_path / "ckpt" / "synpo_meta.json").read_text())["model_config"]
    assert recorded["normalize_embeddings"] is True
    with pytest.raises(SystemExit, match="curve.json not found"):
        (tmp_path / "curve.json").unlink()
        export_run([str(tmp_path / "curve.pt"), str(tmp_path / "again")])
