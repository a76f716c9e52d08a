"""Microseconds per expert state collected by `ExpertEnvRunner` for a tuned example: its array
path (`sample_trajectories`: whole-array env steps, no RLlib episode objects) against RLlib's
own `sample` on the same runner (`collect_trajectories`: the path taken when user callbacks
want RLlib's episodes), measured alternately in the same run.

    python benchmarks/collection_speed.py [--experiment tuned_examples/synpo_gridworld.yaml] \
        [--collections 20]

Each collection is the experiment's ``episodes_per_env_runner`` episodes of its env (one
trajectory per pair slot and episode); one collection of each path runs untimed first.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.rllib_throughput import DEFAULT_EXPERIMENT, local_ray, synpo_config
from rllib_synpo.env.trajectory import collect_trajectories

MICROSECONDS = 1e6


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--experiment", default=str(DEFAULT_EXPERIMENT), help="an experiment file with one SynPo experiment"
    )
    parser.add_argument("--collections", type=int, default=20, help="timed collections per path")
    return parser


def _time_paths(
    algo, episodes: int, collections: int, experiment: str
) -> tuple[dict[str, float], dict[str, int], int]:
    """Seconds and states collected per path over ``collections`` alternated collections, and
    the env's pair slots."""
    runner, layout = algo.env_runner, algo.layout
    if not runner._can_play_arrays():
        raise SystemExit(f"{experiment}: its env runner cannot take the array path (see ExpertEnvRunner)")
    paths: dict[str, Callable[[], list]] = {
        "array path": lambda: runner.sample_trajectories(episodes, layout),
        "RLlib sample": lambda: collect_trajectories(runner, episodes, layout),
    }
    seconds, states = dict.fromkeys(paths, 0.0), dict.fromkeys(paths, 0)
    for collect in paths.values():
        collect()  # untimed: first calls allocate
    for _ in range(collections):  # alternate, so a slow phase of the machine hits both
        for name, collect in paths.items():
            start = time.perf_counter()
            trajectories = collect()
            seconds[name] += time.perf_counter() - start
            states[name] += sum(len(t) for t in trajectories)
    return seconds, states, len(runner.env.envs[0].unwrapped.agents)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.collections < 1:
        raise SystemExit(f"--collections must be >= 1, got {args.collections}")
    config = synpo_config(args.experiment).env_runners(num_env_runners=0)
    with local_ray(num_cpus=1):
        algo = config.build_algo()
        try:
            seconds, states, slots = _time_paths(
                algo, config.episodes_per_env_runner, args.collections, args.experiment
            )
        finally:
            algo.stop()
    print(
        f"{Path(args.experiment).name}: {args.collections} collections per path of "
        f"{config.episodes_per_env_runner} episode(s), {slots} pair slots"
    )
    print("path          states   us/state")
    micros = {name: seconds[name] / states[name] * MICROSECONDS for name in seconds}
    for name in seconds:
        print(f"{name:12s}  {states[name]:6d}  {micros[name]:9.1f}")
    print(f"RLlib sample / array path: {micros['RLlib sample'] / micros['array path']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
