"""The errors and warnings of the THOR kitchens: each says what went wrong and what to do."""

from __future__ import annotations


class ThorError(RuntimeError):
    """Base class of the errors raised around the AI2-THOR player."""


class ThorBuildNotFoundError(ThorError):
    """No THOR player build could be found or downloaded."""


class ThorStartError(ThorError):
    """A THOR player build was found but the controller could not start it."""


class ThorPlayerCrashedError(ThorError):
    """The THOR player process died or stopped answering; the episode in progress is lost."""


class TaskUnavailableError(ValueError):
    """A (kitchen, task) pair was asked for whose object or receptacle the kitchen lacks."""


class FeaturizerWeightsError(RuntimeError):
    """A featurizer's pretrained weights are neither on disk nor downloadable."""


class TaskUnavailableWarning(UserWarning):
    """Some (kitchen, task) pairs were excluded because the kitchen lacks their objects."""
