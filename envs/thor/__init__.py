"""SynPo's AI2-THOR kitchens: 19 kitchens x 21 pick-and-place tasks over ai2thor 5.0.

Importing this package imports neither ai2thor nor torch; a THOR player starts on the first
``reset()`` and featurizer weights load on the first frame.
"""

from synpo_envs.thor.constants import (
    ACTION_NAMES,
    PAPER_KITCHENS,
    TASK_NAMES,
    TASK_OBJECTS,
    TASK_RECEPTACLES,
    THOR_KITCHENS,
)
from synpo_envs.thor.env import ThorKitchen
from synpo_envs.thor.errors import (
    FeaturizerWeightsError,
    TaskUnavailableError,
    TaskUnavailableWarning,
    ThorBuildNotFoundError,
    ThorError,
    ThorPlayerCrashedError,
    ThorStartError,
)
from synpo_envs.thor.expert import NoPlanError, ThorExpert
from synpo_envs.thor.featurizers import FEATURIZERS, CachedFeaturizer, make_featurizer
from synpo_envs.thor.launcher import ThorLaunchOptions
from synpo_envs.thor.tasks import KitchenTasks, task_table

__all__ = [
    "ACTION_NAMES",
    "FEATURIZERS",
    "PAPER_KITCHENS",
    "TASK_NAMES",
    "TASK_OBJECTS",
    "TASK_RECEPTACLES",
    "THOR_KITCHENS",
    "CachedFeaturizer",
    "FeaturizerWeightsError",
    "KitchenTasks",
    "NoPlanError",
    "TaskUnavailableError",
    "TaskUnavailableWarning",
    "ThorBuildNotFoundError",
    "ThorError",
    "ThorExpert",
    "ThorKitchen",
    "ThorLaunchOptions",
    "ThorPlayerCrashedError",
    "ThorStartError",
    "make_featurizer",
    "task_table",
]
