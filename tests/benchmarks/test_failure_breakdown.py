"""The failure-breakdown benchmark reads a checkpoint and prints shares that add up."""

import re

from benchmarks.failure_breakdown import main


def test_shares_of_every_outcome_add_up(module_checkpoint, capsys):
    assert main([str(module_checkpoint()), "--episodes", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [re.split(r" \(|: no pairs", line)[0] for line in lines] == [
        "seen",
        "unseen",
        "unseen, first colour starts a seen task of the maze",
        "unseen, first colour starts no seen task of the maze",
        "  of them, a seen task of the maze picks it second",
        "  of them, no seen task of the maze holds it",
    ]
    counted = [re.search(r"\((\d+) pairs", line) for line in lines]
    pairs = [int(count.group(1)) if count else 0 for count in counted]
    assert pairs[:2] == [144, 256] and pairs[2] + pairs[3] == 256 and pairs[4] + pairs[5] == pairs[3]
    for line, count in zip(lines, counted):
        shares = [float(v) for v in re.findall(r"(-?[\d.]+)%", line)]
        assert (len(shares) == 4 and abs(sum(shares) - 100) < 0.5) if count else not shares, line


def test_first_colour_coverage_follows_the_seen_tasks_of_each_maze():
    from synpo_envs.splits import Split, uncovered_pair_subsets

    from benchmarks.failure_breakdown import at_pairs, first_colour_covered

    # Task 0 is AB, 1 is BC, 5 is AC (the code's order): maze 0 has seen AB only.
    split = Split(2, 20, ((0, 0), (1, 1)))
    pairs = [(0, 5), (0, 1), (1, 5), (1, 0)]
    assert first_colour_covered(split, pairs).tolist() == [True, False, False, False]
    # Of the uncovered ones, maze 0's AB holds B (BC's first) second; maze 1's BC holds A nowhere.
    subsets = uncovered_pair_subsets(split.seen_mask())
    assert at_pairs(subsets["second_colour"], pairs).tolist() == [False, True, False, False]
    assert at_pairs(subsets["no_seen_task"], pairs).tolist() == [False, False, True, True]
