"""Seen/unseen splits: the paper's settings, coverage, JSON round trips, bad requests."""

import json

import numpy as np
import pytest
from synpo_envs.splits import (
    Split,
    SplitError,
    quadrant,
    random_split,
    ratio_split,
    transfer_split,
)


def test_paper_setting_1_split():
    split = random_split(seed=0)
    mask = split.seen_mask()
    assert mask.shape == (20, 20) and mask.sum() == 144 and len(split.unseen) == 256
    assert mask.sum(axis=0).min() >= 4 and mask.sum(axis=1).min() >= 4
    assert random_split(seed=0) == split and random_split(seed=1) != split


@pytest.mark.parametrize("seed", range(5))
def test_random_split_coverage_holds_for_other_requests(seed):
    split = random_split(12, 9, num_seen=40, min_per_env=3, min_per_task=2, seed=seed)
    mask = split.seen_mask()
    assert mask.sum() == 40 and mask.sum(1).min() >= 3 and mask.sum(0).min() >= 2


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
def test_ratio_splits(fraction):
    mask = ratio_split(fraction, seed=1).seen_mask()
    assert mask.shape == (10, 10) and mask.sum() == round(100 * fraction)
    assert mask.sum(0).min() >= 1 and mask.sum(1).min() >= 1


def test_transfer_settings():
    two, three = transfer_split(2), transfer_split(3)
    assert two.seen == three.seen and len(two.seen) == 100
    assert all(e < 10 and t < 10 for e, t in two.seen)
    assert {quadrant(p) for p in two.adapt} == {"cross_env", "cross_task"} and len(two.adapt) == 200
    assert {quadrant(p) for p in three.adapt} == {"Q"} and len(three.adapt) == 100
    assert quadrant((12, 3)) == "cross_env" and quadrant((3, 12)) == "cross_task"


def test_json_round_trip(tmp_path):
    split = transfer_split(2)
    path = tmp_path / "split.json"
    split.save(path)
    assert Split.load(path) == split
    assert json.loads(path.read_text())["num_envs"] == 20


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_seen=10), "at least 80"),
        (dict(num_seen=401), r"\[1, 400\]"),
        (dict(min_per_env=21), "exceeds"),
        (dict(seed=-1), r"seed=-1 must be an integer >= 0"),
        (dict(seed="x"), r"seed='x' must be an integer >= 0"),
    ],
)
def test_impossible_requests_are_explained(kwargs, message):
    with pytest.raises(SplitError, match=message):
        random_split(**kwargs)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"num_envs": 2, "num_tasks": 2, "seen": [[0, 2]]}, r"\(0, 2\) out of range"),
        ({"num_envs": 2, "num_tasks": 2, "seen": [[0, 1], [0, 1]]}, "duplicates"),
        ({"num_envs": 2, "num_tasks": 2, "seen": [[0, 1]], "colour": 1}, "colour"),
        ({"num_envs": 2, "seen": [[0, 1]]}, "num_tasks"),
        ({"num_envs": 2, "num_tasks": 2, "seen": [["a", 1]]}, "not \\(env_id, task_id\\)"),
        ({"num_envs": 2, "num_tasks": 2, "seen": [[True, 1]]}, "not \\(env_id, task_id\\)"),
        (
            {"num_envs": True, "num_tasks": 2, "seen": [[0, 1]]},
            "num_envs must be a positive integer, got True",
        ),
    ],
)
def test_malformed_split_files_are_named(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SplitError, match=message) as err:
        Split.load(path)
    assert str(path) in str(err.value)
    path.write_text("{not json")
    with pytest.raises(SplitError, match="not valid JSON"):
        Split.load(path)


def test_seen_mask_matches_is_seen():
    split = random_split(seed=3)
    mask = split.seen_mask()
    assert all(mask[p] == split.is_seen(p) for p in split.all_pairs)
    assert np.array_equal(
        ~mask, np.isin(np.arange(400).reshape(20, 20), [e * 20 + t for e, t in split.unseen])
    )


def test_numpy_sizes_are_accepted_and_saved_as_plain_ints():
    split = Split(num_envs=np.int64(2), num_tasks=np.int32(2), seen=((np.int64(0), 1),))
    assert type(split.num_envs) is int and type(split.num_tasks) is int
    assert json.loads(json.dumps(split.to_dict()))["num_envs"] == 2


def test_first_colour_uncovered_pairs_by_hand():
    from synpo_envs.splits import first_colour_uncovered

    # tasks 0-4 start with A, B, C, D, E (AB, BC, CD, DE, EA); 5 "AC" starts with A like task 0
    seen = np.zeros((2, 6), bool)
    seen[0, 0] = seen[1, 1] = seen[1, 2] = True
    uncovered = first_colour_uncovered(seen)
    assert uncovered[0].tolist() == [False, True, True, True, True, False]  # env 0 went for A first
    assert uncovered[1].tolist() == [True, False, False, True, True, True]  # env 1 for B and C
    assert not (uncovered & seen).any()
    with pytest.raises(ValueError, match="seen_mask must be"):
        first_colour_uncovered(np.zeros((2, 21), bool))


def test_first_colour_in_seen_task_by_hand():
    from synpo_envs.splits import first_colour_in_seen_task

    # tasks 0-4: AB, BC, CD, DE, EA; env 0 saw AB only, env 1 saw CD only
    seen = np.zeros((2, 5), bool)
    seen[0, 0] = seen[1, 2] = True
    as_first = first_colour_in_seen_task(seen, position=0)
    as_second = first_colour_in_seen_task(seen, position=1)
    assert as_first[0].tolist() == [True, False, False, False, False]  # A starts AB: task AB
    assert as_second[0].tolist() == [False, True, False, False, False]  # B is AB's second: task BC
    assert as_first[1].tolist() == [False, False, True, False, False]  # C starts CD
    assert as_second[1].tolist() == [False, False, False, True, False]  # D is CD's second: task DE


def test_uncovered_pair_subsets_split_the_uncovered_pairs():
    from synpo_envs.splits import first_colour_uncovered, uncovered_pair_subsets

    # tasks 0-4: AB, BC, CD, DE, EA; env 0 saw AB only, env 1 saw CD only
    seen = np.zeros((2, 5), bool)
    seen[0, 0] = seen[1, 2] = True
    subsets = uncovered_pair_subsets(seen)
    assert (subsets["uncovered"] == first_colour_uncovered(seen)).all()
    assert subsets["second_colour"][0].tolist() == [False, True, False, False, False]  # BC: B in AB
    assert subsets["second_colour"][1].tolist() == [False, False, False, True, False]  # DE: D in CD
    assert (subsets["second_colour"] ^ subsets["no_seen_task"] == subsets["uncovered"]).all()
    # the counts of benchmarks/uncovered_breakdown.py's validation splits: 16 with no seen task
    assert int(uncovered_pair_subsets(random_split(seed=105).seen_mask())["no_seen_task"].sum()) == 16


def test_pair_subsets_partition_the_pairs():
    from synpo_envs.splits import PAIR_SUBSETS, pair_subsets

    seen = random_split(seed=0).seen_mask()
    masks = pair_subsets(seen)
    assert tuple(masks) == PAIR_SUBSETS
    assert (masks["seen"] == seen).all() and (masks["unseen"] == ~seen).all()
    assert (masks["unseen_uncovered"] ^ masks["unseen_covered"] == ~seen).all()  # disjoint, covering
    assert masks["unseen_uncovered"].sum() == 48 and masks["unseen_covered"].sum() == 208


def test_first_colour_uncovered_counts_of_the_papers_splits():
    """The counts the project's held-out study is designed around (split seeds 0-3, validation 100)."""
    counts = {seed: int(random_split(seed=seed).first_colour_uncovered().sum()) for seed in (0, 1, 2, 3, 100)}
    assert counts == {0: 48, 1: 60, 2: 40, 3: 88, 100: 60}
