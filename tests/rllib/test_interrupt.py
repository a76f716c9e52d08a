"""`CheckpointOnInterrupt` on hand-made trials: what it asks of Tune after Ctrl-C, and when it
ends the run. (The command end to end: tests/rllib/test_cli.py.)"""

import os
import signal
from types import SimpleNamespace

import pytest
from ray.tune.experiment import Trial
from ray.tune.result import SHOULD_CHECKPOINT

from rllib_synpo.cli import interrupt
from rllib_synpo.cli.interrupt import CheckpointOnInterrupt, checkpoint_on_interrupt


def _trial(trial_id: str, status: str = Trial.RUNNING, reported: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        trial_id=trial_id, status=status, last_result={"training_iteration": 3} if reported else {}
    )


@pytest.fixture
def stops(monkeypatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(interrupt, "stop_tune", lambda: calls.append(1))
    return calls


def test_results_ask_for_no_checkpoint_before_ctrl_c(stops):
    callback, trial = CheckpointOnInterrupt(), _trial("a")
    result = {"training_iteration": 3}
    callback.on_trial_result(0, [trial], trial, result)
    callback.on_step_end(0, [trial])
    assert SHOULD_CHECKPOINT not in result and not stops


def test_after_ctrl_c_each_trial_saves_once_then_the_run_ends(stops, capsys):
    callback = CheckpointOnInterrupt()
    first, second = _trial("a"), _trial("b")
    pending, silent = _trial("c", status=Trial.PENDING), _trial("d", reported=False)
    trials = [first, second, pending, silent]
    callback.interrupt()
    assert interrupt.SAVING_MESSAGE in capsys.readouterr().err
    result = {"training_iteration": 4}
    callback.on_trial_result(0, trials, first, result)
    assert result[SHOULD_CHECKPOINT] is True
    callback.on_checkpoint(0, trials, first, checkpoint=None)
    callback.on_step_end(0, trials)
    assert not stops  # the second trial has not saved yet
    later = {"training_iteration": 5}
    callback.on_trial_result(0, trials, first, later)
    assert SHOULD_CHECKPOINT not in later  # saved once is enough
    callback.on_checkpoint(0, trials, second, checkpoint=None)
    callback.on_step_end(0, trials)
    assert stops == [1]  # neither the pending trial nor one that has not reported is waited for


def test_a_second_ctrl_c_ends_the_run_at_once(stops):
    callback, trial = CheckpointOnInterrupt(), _trial("a")
    callback.interrupt()
    callback.on_step_end(0, [trial])
    assert not stops
    callback.interrupt()
    assert stops == [1]


def test_the_handler_and_tunes_variable_are_put_back(monkeypatch):
    monkeypatch.delenv(interrupt.TUNE_SIGINT_VARIABLE, raising=False)
    before = signal.getsignal(signal.SIGINT)
    with checkpoint_on_interrupt() as callbacks:
        (callback,) = callbacks
        assert signal.getsignal(signal.SIGINT) == callback.interrupt
        assert os.environ[interrupt.TUNE_SIGINT_VARIABLE] == "1"
    assert signal.getsignal(signal.SIGINT) == before
    assert interrupt.TUNE_SIGINT_VARIABLE not in os.environ
