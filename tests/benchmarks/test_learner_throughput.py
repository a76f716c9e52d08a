"""The learner-throughput benchmark runs every gridworld encoder (and option that changes its cost) and prints its figures."""

from benchmarks.learner_throughput import GRIDWORLD_ENCODERS, VARIANTS, main


def test_prints_a_rate_for_every_gridworld_encoder(capsys):
    assert main(["--seconds", "0.05", "--batch-size", "8", "--threads", "1", "--device", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "thor" not in GRIDWORLD_ENCODERS and {"compact", "paper_resnet"} <= set(GRIDWORLD_ENCODERS)
    labels = [label for label, _, _ in VARIANTS]
    assert "compact + batch_norm" in labels
    for label in labels:
        (line,) = [row for row in lines if row.startswith(f"{label} encoder")]
        assert "states/s" in line and "x original" in line
