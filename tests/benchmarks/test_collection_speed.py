"""The collection benchmark on a tiny experiment: both paths timed over the same states."""

import pytest

from benchmarks.collection_speed import main


def test_prints_both_paths_and_their_ratio(tiny_experiment, capsys):
    assert main(["--experiment", str(tiny_experiment), "--collections", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 collections per path of 1 episode(s), 4 pair slots" in lines[0]
    rows = {line[:12].strip(): line[12:].split() for line in lines[2:4]}
    assert set(rows) == {"array path", "RLlib sample"}
    (array_states, array_us), (rllib_states, rllib_us) = rows["array path"], rows["RLlib sample"]
    assert int(array_states) > 0 and int(rllib_states) > 0
    ratio = float(lines[4].removeprefix("RLlib sample / array path: ").rstrip("x"))
    assert ratio == pytest.approx(
        float(rllib_us) / float(array_us), rel=0.02
    )  # from the printed, rounded figures


def test_no_collections_is_refused(tiny_experiment):
    with pytest.raises(SystemExit, match="--collections must be >= 1, got 0"):
        main(["--experiment", str(tiny_experiment), "--collections", "0"])
