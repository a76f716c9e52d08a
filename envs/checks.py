"""Argument checks shared by the environments (and re-exported by `rllib_synpo.utils.checks`)."""

from __future__ import annotations

import numpy as np


def is_int(value: object) -> bool:
    """A Python or numpy integer that is not a bool: Python counts ``True`` as 1, never a size
    or an id anyone meant."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
