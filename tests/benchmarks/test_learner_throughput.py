"""The learner-throughput benchmark runs every gridworld encoder (and option that changes its cost) and prints its figures."""

from benchmarks.learner_throughput import GRIDWORLD_ENCODERS, VARIANTS, main


def test_prints_a_rate_for_every_gridworld_encoder(capsys):
    assert main(["--seconds", "0.05", "--batch-size", "8", "--threads", "1", "--device", "cpu", "--precision", "float32", "bfloat16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "thor" not in GRIDWORLD_ENCODERS and {"compact", "paper_resnet"} <= set(GRIDWORLD_ENCODERS)
    labels = [label for label, _, _ in VARIANTS]
    assert "compact + batch_norm" in labels
    for label in labels:
        first, second = [row.split() for row in lines if row.startswith(f"{label} encoder")]
        assert "float32" in first and "bfloat16" in second and "states/s" in first and "original" in first
        # The second precision's rate against the first's, for the same encoder.
        ratio = float(second[-2].rstrip("x"))
        rates = [float(row[row.index("states/s") - 1].replace(",", "")) for row in (first, second)]
        assert second[-1] == "float32" and abs(ratio - rates[1] / rates[0]) < 0.01 * ratio + 0.01
