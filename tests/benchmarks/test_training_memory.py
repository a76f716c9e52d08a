"""The training-memory benchmark on a tiny experiment: a row per evaluation, both modes."""

import pytest

from benchmarks.training_memory import main


def test_prints_memory_with_the_heap_released_and_kept(tiny_experiment, capsys):
    assert (
        main(["--experiment", str(tiny_experiment), "--iterations", "4", "--every", "2", "--threads", "1"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:2] == ["iteration", "rss"]
    assert [line.split()[0] for line in lines[2:]] == ["2", "4"]
    for line in lines[2:]:
        _, released, kept, ratio, *seconds = line.replace(",", "").split()
        assert float(released) > 0 and float(kept) > 0 and all(float(s) > 0 for s in seconds)
        assert abs(float(ratio) - float(released) / float(kept)) < 0.01


def test_bad_intervals_are_refused():
    with pytest.raises(SystemExit, match="--every 5 --iterations 4"):
        main(["--iterations", "4", "--every", "5"])
