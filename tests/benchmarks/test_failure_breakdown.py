"""The failure-breakdown benchmark reads a checkpoint and prints shares that add up."""

import re

from benchmarks.failure_breakdown import main


def test_shares_of_every_outcome_add_up(module_checkpoint, capsys):
    assert main([str(module_checkpoint()), "--episodes", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "seen",
        "unseen",
        "unseen, first colour starts a seen task of the maze",
        "unseen, first colour starts no seen task of the maze",
    ]
    pairs = [int(re.search(r"\((\d+) pairs", line).group(1)) for line in lines]
    assert pairs[:2] == [144, 256] and pairs[2] + pairs[3] == 256
    for line in lines:
        shares = [float(v) for v in re.findall(r"(-?[\d.]+)%", line)]
        assert len(shares) == 4 and abs(sum(shares) - 100) < 0.5, line


def test_first_colour_coverage_follows_the_seen_tasks_of_each_maze():
    from synpo_envs.splits import Split

    from benchmarks.failure_breakdown import first_colour_covered

    # Task 0 is AB, 1 is BC, 5 is AC (the code's order): maze 0 has seen AB only.
    split = Split(2, 20, ((0, 0), (1, 1)))
    assert first_colour_covered(split, [(0, 5), (0, 1), (1, 5), (1, 0)]).tolist() == [
        True,
        False,
        False,
        False,
    ]
