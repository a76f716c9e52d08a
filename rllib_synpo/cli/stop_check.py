"""A stop criterion that names no result of the trial ends ``rllib train file`` with an
``error:`` line. Tune only warns (once, listing hundreds of keys) and keeps training, so a typo
in ``stop`` or ``--stop`` (``training_iterations``) would train until interrupted."""

from __future__ import annotations

import difflib
import logging

from ray.tune import Callback
from ray.tune.experiment import Trial
from ray.tune.utils import flatten_dict

from rllib_synpo.cli import interrupt

# Results that appear only once the trial has evaluated: a criterion on them waits for that.
EVALUATION_PREFIXES = ("evaluation/", "last_evaluation/")
COMMON_CRITERIA = ("training_iteration", "time_total_s")


class StopCriteriaCheck(Callback):
    """At each trial's results, before Tune checks its stop criteria: a criterion missing from
    them (one on evaluation results only once the trial has evaluated) sets ``problem`` and
    ends the run."""

    def __init__(self) -> None:
        self.problem: str | None = None

    def on_trial_result(self, iteration: int, trials: list, trial: Trial, result: dict, **info) -> None:
        if self.problem:
            return
        keys = flatten_dict(result, delimiter="/")
        for criterion in trial.stopping_criterion or {}:
            if criterion in keys or _not_evaluated_yet(criterion, keys):
                continue
            close = difflib.get_close_matches(criterion, keys, n=3) or list(COMMON_CRITERIA)
            self.problem = (
                f"stop criterion {criterion!r} is not among trial {trial}'s results: expected a "
                f"result name such as {', '.join(close)} (progress.csv's columns)"
            )
            interrupt.stop_tune()
            return


def _not_evaluated_yet(criterion: str, keys: dict) -> bool:
    return any(
        criterion.startswith(prefix) and not any(key.startswith(prefix) for key in keys)
        for prefix in EVALUATION_PREFIXES
    )


def without_tunes_missing_criterion_warning(record: logging.LogRecord) -> bool:
    """Drops Tune's warning for the same case (`StopCriteriaCheck` reports it in one line)."""
    return not record.getMessage().startswith("Stopping criterion")
