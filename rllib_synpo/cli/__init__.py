"""The ``rllib`` command (``rllib train file``, ``evaluate``, ``report``, ``synpo adapt``)."""

from rllib_synpo.cli.main import main

__all__ = ["main"]
