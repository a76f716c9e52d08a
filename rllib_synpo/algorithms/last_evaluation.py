"""`CarriesLastEvaluation`: every training result of `SynPo` and `SynPoPPO` repeats their latest
greedy evaluation under ``last_evaluation/`` (evaluations run every ``evaluation_interval``
iterations; the console's progress rows show the latest between them)."""

from __future__ import annotations

from ray.rllib.utils.metrics import EVALUATION_RESULTS

LAST_EVALUATION = "last_evaluation"
# The keys of `rllib_synpo.evaluation.flat_summary` (RLlib adds its own to evaluation results).
SUMMARY_PREFIXES = ("seen_", "unseen_")


class CarriesLastEvaluation:
    """Mixin for an RLlib `Algorithm` whose ``evaluate`` returns a flat summary."""

    last_evaluation: dict | None = None

    def step(self) -> dict:
        result = super().step()
        if result.get(EVALUATION_RESULTS):
            summary = result[EVALUATION_RESULTS].items()
            self.last_evaluation = {key: value for key, value in summary if key.startswith(SUMMARY_PREFIXES)}
        if self.last_evaluation:
            result[LAST_EVALUATION] = dict(self.last_evaluation)
        return result
