"""Look at the gridworld: ``python -m synpo_envs.gridworld --render [--png FILE] [--expert]``.

Also writes generated mazes: ``python -m synpo_envs.gridworld --write-mazes DIR --count 30``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from synpo_envs.gridworld.constants import ACTION_NAMES, DEFAULT_WINDOW, TASK_NAMES
from synpo_envs.gridworld.drawing import (
    TILE_PIXELS,
    full_map_rgb,
    observation_rgb,
    write_png,
)
from synpo_envs.gridworld.env import GridWorld
from synpo_envs.gridworld.mazes import (
    BUILTIN_SEED,
    MazeFormatError,
    generate_mazes,
    write_mazes,
)
from synpo_envs.splits import SplitError

GAP_PIXELS = TILE_PIXELS // 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m synpo_envs.gridworld", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--render", action="store_true", help="draw one episode start")
    action.add_argument("--write-mazes", metavar="DIR", help="write --count generated mazes to DIR")
    parser.add_argument("--env-id", type=int, default=0)
    parser.add_argument("--task-id", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--mazes", metavar="DIR", help="a folder of maze files (default: built-in)")
    parser.add_argument("--png", metavar="FILE", help="also write the full map and the agent's view as PNG")
    parser.add_argument("--expert", action="store_true", help="play the expert's episode to the end")
    parser.add_argument("--count", type=int, default=20, help="mazes to generate (--write-mazes)")
    parser.add_argument("--maze-seed", type=int, default=BUILTIN_SEED, help="generator seed (--write-mazes)")
    return parser


def _render(args: argparse.Namespace) -> None:
    env = GridWorld(mazes=args.mazes, window=args.window, render_mode="ansi")
    obs, info = env.reset(seed=args.seed, options={"pair": (args.env_id, args.task_id)})
    print(f"env {args.env_id}, task {args.task_id} ({TASK_NAMES[args.task_id]}), seed {args.seed}")
    print(env.render())
    if args.png:
        full = full_map_rgb(env.walls, env.agent_pos, env.treasure_pos)
        view = observation_rgb(obs["obs"], env.grid_spec.frame_channels)
        gap = np.zeros((full.shape[0], GAP_PIXELS, 3), dtype=np.uint8)
        write_png(args.png, np.concatenate([full, gap, view], axis=1))
        print(f"wrote {args.png} (left: full map, right: the agent's newest observed frame)")
    if args.expert:
        actions, total, done = [], 0.0, False
        while not done:
            action = env.expert_action()
            obs, reward, terminated, truncated, info = env.step(action)
            actions.append(ACTION_NAMES[action])
            total += reward
            done = terminated or truncated
        print(f"expert: {len(actions)} steps, return {total:.2f}, success {info['success']}")
        print(" ".join(actions))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.write_mazes:
            paths = write_mazes(generate_mazes(args.count, args.maze_seed), args.write_mazes)
            print(f"wrote {len(paths)} mazes to {args.write_mazes}")
        else:
            _render(args)
    except (MazeFormatError, SplitError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
