"""Quiets the messages of RLlib and gymnasium that a SynPo user cannot act on, where SynPo's
code runs (its configs, RLModule and env runners), not at import.

- RLlib's notice that an algorithm runs on the new API stack (SynPo only runs there);
- RLlib's own `RLModule.__init__` building a deprecated `RLModuleConfig` (a DeprecationWarning
  for every RLModule, whoever wrote it);
- gymnasium's "Overriding environment rllib-multi-agent-env-v0" each time an RLlib env runner
  registers its env again.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

NEW_API_STACK_NOTICE = ("ray.rllib.algorithms.algorithm_config", "on the new API stack")
RLMODULE_CONFIG_DEPRECATION = ("ray._common.deprecation", "RLModule(config=[RLModuleConfig")
GYM_ENV_OVERRIDE = "Overriding environment rllib-multi-agent-env-v0"


class DropMessages(logging.Filter):
    """Drops a logger's records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def drop_messages(logger_name: str, text: str) -> None:
    """Adds a `DropMessages` filter for ``text`` to the logger (once)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, DropMessages) and f.text == text for f in logger.filters):
        logger.addFilter(DropMessages(text))


def quiet_rllib_notices() -> None:
    """Drops RLlib's new-API-stack notice and its `RLModuleConfig` deprecation warning."""
    for logger_name, text in (NEW_API_STACK_NOTICE, RLMODULE_CONFIG_DEPRECATION):
        drop_messages(logger_name, text)


@contextlib.contextmanager
def without_gym_env_override_warning() -> Iterator[None]:
    """Within: no gymnasium warning that RLlib's env runner registers its env id again."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=f".*{GYM_ENV_OVERRIDE}")
        yield
