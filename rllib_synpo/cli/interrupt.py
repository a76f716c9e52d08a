"""Ctrl-C during ``rllib train file`` loses no training: each running trial saves a checkpoint
at the end of the iteration it is in, then the Tune run ends the way Tune ends it on Ctrl-C (the
experiment's state saved, the trials left to ``--resume``). Without this, Tune stops at once and a
resume goes on from each trial's last periodic checkpoint, or from the start where there is none
yet. A second Ctrl-C ends the run at once."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

from ray.tune import Callback
from ray.tune.experiment import Trial
from ray.tune.result import SHOULD_CHECKPOINT

# Set, Tune leaves SIGINT to us. It always ends a run on SIGUSR1 the way it ends one on Ctrl-C.
TUNE_SIGINT_VARIABLE = "TUNE_DISABLE_SIGINT_HANDLER"
TUNE_STOP_SIGNAL = signal.SIGUSR1 if hasattr(signal, "SIGUSR1") else None
SAVING_MESSAGE = (
    "Ctrl-C: each running trial saves a checkpoint at the end of its current iteration, then "
    "training stops (Ctrl-C again to stop now)."
)


class CheckpointOnInterrupt(Callback):
    """After ``interrupt()``, asks Tune for a checkpoint with each trial's next result
    (``should_checkpoint``) and ends the run once every running trial that has reported has saved
    one. Trials that have not reported yet have trained nothing to lose."""

    def __init__(self) -> None:
        self.interrupts = 0
        self.saved: set[str] = set()

    def interrupt(self, signum: int = signal.SIGINT, frame: object = None) -> None:
        """The SIGINT handler: the first Ctrl-C asks for the checkpoints, the next stops now."""
        self.interrupts += 1
        if self.interrupts == 1:
            print(SAVING_MESSAGE, file=sys.stderr, flush=True)
        else:
            stop_tune()

    def on_trial_result(self, iteration: int, trials: list, trial: Trial, result: dict, **info) -> None:
        if self.interrupts and trial.trial_id not in self.saved:
            result[SHOULD_CHECKPOINT] = True

    def on_checkpoint(self, iteration: int, trials: list, trial: Trial, checkpoint, **info) -> None:
        if self.interrupts:
            self.saved.add(trial.trial_id)

    def on_step_end(self, iteration: int, trials: list, **info) -> None:
        if self.interrupts and all(trial.trial_id in self.saved for trial in _reported_running(trials)):
            stop_tune()


def _reported_running(trials: list) -> list:
    return [trial for trial in trials if trial.status == Trial.RUNNING and trial.last_result]


def stop_tune() -> None:
    os.kill(os.getpid(), TUNE_STOP_SIGNAL)


@contextlib.contextmanager
def checkpoint_on_interrupt() -> Iterator[list[Callback]]:
    """The Tune callbacks that save on Ctrl-C, with the SIGINT handler that drives them in place
    (Tune's own standing down). Off the main thread, or without SIGUSR1, Python cannot take the
    signals: Tune then handles Ctrl-C itself and no callback is given."""
    if TUNE_STOP_SIGNAL is None or threading.current_thread() is not threading.main_thread():
        yield []
        return
    callback = CheckpointOnInterrupt()
    previous_handler = signal.signal(signal.SIGINT, callback.interrupt)
    previous_variable = os.environ.get(TUNE_SIGINT_VARIABLE)
    os.environ[TUNE_SIGINT_VARIABLE] = "1"
    try:
        yield [callback]
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        if previous_variable is None:
            os.environ.pop(TUNE_SIGINT_VARIABLE, None)
        else:
            os.environ[TUNE_SIGINT_VARIABLE] = previous_variable
