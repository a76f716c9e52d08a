"""`StopCriteriaCheck` on hand-made trials and results: a stop criterion that names no result
ends the run with a message naming close result names; one on evaluation results waits for
the trial's first evaluation. (The command end to end: tests/rllib/test_cli.py.)"""

from types import SimpleNamespace

import pytest

from rllib_synpo.cli import interrupt
from rllib_synpo.cli.stop_check import StopCriteriaCheck

RESULT = {"training_iteration": 2, "time_total_s": 5.0, "learners": {"__all_modules__": {"loss": 1.0}}}


@pytest.fixture
def stops(monkeypatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(interrupt, "stop_tune", lambda: calls.append(1))
    return calls


def _checked(stop: dict, result: dict) -> StopCriteriaCheck:
    check = StopCriteriaCheck()
    trial = SimpleNamespace(stopping_criterion=stop)
    check.on_trial_result(0, [trial], trial, result)
    return check


@pytest.mark.parametrize(
    "stop", [{"training_iteration": 9}, {"learners/__all_modules__/loss": 0.1}, {}, {"time_total_s": 60}]
)
def test_criteria_among_the_results_pass(stops, stop):
    assert _checked(stop, RESULT).problem is None and not stops


def test_a_misspelt_criterion_ends_the_run_naming_the_result_it_resembles(stops):
    problem = _checked({"time_total_s": 60, "training_iterations": 9}, RESULT).problem
    assert problem.startswith("stop criterion 'training_iterations' is not among trial ")
    assert "expected a result name such as training_iteration" in problem and stops == [1]


def test_a_criterion_with_nothing_like_it_suggests_the_common_ones(stops):
    problem = _checked({"zzz": 1}, RESULT).problem
    assert "such as training_iteration, time_total_s" in problem and stops == [1]


@pytest.mark.parametrize("prefix", ["evaluation", "last_evaluation"])
def test_an_evaluation_criterion_waits_for_the_first_evaluation(stops, prefix):
    stop = {f"{prefix}/unseen_avg_success_rate": 0.9}
    assert _checked(stop, RESULT).problem is None and not stops
    evaluated = {**RESULT, prefix: {"unseen_avg_success_rate": 0.5}}
    assert _checked(stop, evaluated).problem is None
    misspelt = {f"{prefix}/unseen_success_rate": 0.9}
    assert "unseen_avg_success_rate" in _checked(misspelt, evaluated).problem and stops == [1]
