"""The coefficient probe on a small saved network: every variant is scored, and fitting the
unseen pairs' own coefficients (the oracle) beats leaving them untrained (per-pair)."""

import re

import pytest

from benchmarks.coefficient_probe import VARIANTS, main


@pytest.fixture
def weights(saved_run):
    return saved_run("--feature-dim", "16")


def test_every_variant_is_scored_and_the_oracle_beats_no_sharing(weights, capsys):
    argv = [str(weights), "--states", "4000", "--collect-steps", "20", "--steps", "60", "--batch", "512"]
    assert main(argv) == 0
    scores = {}
    for line in capsys.readouterr().out.splitlines()[1:]:
        name, seen, unseen = re.match(r"(\S+)\s+seen\s+([\d.]+)%\s+unseen\s+([\d.]+)%", line).groups()
        scores[name] = (float(seen), float(unseen))
    assert list(scores) == list(VARIANTS)
    assert all(0 <= value <= 100 for pair in scores.values() for value in pair)
    assert scores["oracle"][1] > scores["per-pair"][1]


def test_unknown_variant_is_named(weights):
    with pytest.raises(SystemExit, match="'ridge'"):
        main([str(weights), "--variants", "mlp,ridge"])


def test_a_network_without_coefficients_is_refused(saved_run):
    with pytest.raises(SystemExit, match="a 'mlp' network has no coefficients to probe"):
        main([str(saved_run("--network", "mlp", "--feature-dim", "16"))])
