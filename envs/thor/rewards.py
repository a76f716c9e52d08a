"""The reward terms of the THOR kitchens (defaults in `constants.DEFAULT_REWARDS`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from synpo_envs.thor.constants import DEFAULT_REWARDS


@dataclass(frozen=True)
class ThorRewards:
    step: float
    invalid: float
    correct: float
    complete: float
    wrong: float

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, float] | None) -> ThorRewards:
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(DEFAULT_REWARDS))
        if unknown:
            raise ValueError(f"unknown reward key(s) {unknown}; expected some of {sorted(DEFAULT_REWARDS)}")
        values = {**DEFAULT_REWARDS, **overrides}
        for key, value in values.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"reward {key!r} must be a finite number, got {value!r}")
        return cls(**{key: float(value) for key, value in values.items()})
