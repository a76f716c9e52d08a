"""List the tasks each kitchen can pose, from a real THOR build:
``python -m synpo_envs.thor --list-tasks [--local-executable-path PLAYER] [--kitchens all]``.

It loads every kitchen once and prints the Markdown table that docs/thor.md shows.
"""

from __future__ import annotations

import argparse
import sys

from synpo_envs.thor.constants import PAPER_KITCHENS, PLATFORMS, THOR_KITCHENS
from synpo_envs.thor.errors import ThorError
from synpo_envs.thor.launcher import ThorLaunchOptions
from synpo_envs.thor.session import ThorSession
from synpo_envs.thor.tasks import survey_kitchen, task_table

KITCHEN_SETS = {"paper": PAPER_KITCHENS, "all": THOR_KITCHENS}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m synpo_envs.thor", description=__doc__)
    parser.add_argument(
        "--list-tasks", action="store_true", required=True, help="print the tasks per kitchen"
    )
    parser.add_argument(
        "--kitchens",
        nargs="+",
        default=["paper"],
        help="'paper' (the 19 of the paper, default), 'all' (FloorPlan1-30) or scene names",
    )
    parser.add_argument("--local-executable-path", help="a THOR 5.0 player on disk")
    parser.add_argument("--x-display", help="X display for a Linux64 player, e.g. :0")
    parser.add_argument("--platform", choices=PLATFORMS, default="auto")
    parser.add_argument("--no-download", action="store_true", help="never let ai2thor download a build")
    return parser


def _kitchens(names: list[str]) -> tuple[str, ...]:
    if len(names) == 1 and names[0] in KITCHEN_SETS:
        return KITCHEN_SETS[names[0]]
    bad = [name for name in names if name not in THOR_KITCHENS]
    if bad:
        raise ValueError(f"kitchens {bad} are not THOR 5 kitchens (FloorPlan1..FloorPlan30)")
    return tuple(names)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        kitchens = _kitchens(args.kitchens)
        session = ThorSession(
            ThorLaunchOptions(
                local_executable_path=args.local_executable_path,
                x_display=args.x_display,
                platform=args.platform,
                allow_download=not args.no_download,
            )
        )
        try:
            surveys = [
                survey_kitchen(kitchen, session.reset(kitchen).metadata["objects"]) for kitchen in kitchens
            ]
            build = session.build.describe()
        finally:
            session.close()
    except (ThorError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"Tasks per kitchen ({build}):\n")
    print(task_table(surveys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
