"""States per second through RLlib's `SynPo` (the env runner's expert episodes, the trajectory
replay, the learner's updates) for a tuned example, against its Ray-free twin
(`rllib_synpo.budgeted.best_recipe` driven by `DirectImitation`) measured in the same run, for
each torch thread count (and, with ``--updates-per-iteration``, for each number of learner
updates per collection instead of the experiment's own).

    python benchmarks/rllib_throughput.py [--experiment tuned_examples/synpo_gridworld.yaml] \
        [--seconds 60] [--threads 1 2] [--updates-per-iteration 8 16]

In a Ray Tune trial the algorithm's process has ``num_cpus_for_main_process`` torch threads (Ray
sets OMP_NUM_THREADS to the CPUs it assigns); here the thread count is set directly. Periodic
evaluation is switched off; timing starts once the replay holds its warm-up trajectories and is
then filled to its capacity with copies of them (the sampling cost of a long run).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXPERIMENT = ROOT / "tuned_examples" / "synpo_gridworld.yaml"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default=str(DEFAULT_EXPERIMENT), help="an experiment file with one SynPo experiment")
    parser.add_argument("--seconds", type=float, default=60.0, help="timed training per measurement")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure")
    parser.add_argument(
        "--updates-per-iteration", type=int, nargs="+", metavar="N", help="learner updates per collection to measure (default: the experiment's)"
    )
    return parser


def synpo_config(path: str):
    """The `SynPoConfig` of the file's single SynPo experiment, evaluation off."""
    from rllib_synpo.algorithm import SynPo
    from rllib_synpo.cli import experiment_config, load_experiments

    experiments = load_experiments(path)
    if len(experiments) != 1:
        raise SystemExit(f"{path}: expected one experiment, found {sorted(experiments)}")
    (spec,) = experiments.values()
    if spec["run"] != "SynPo":
        raise SystemExit(f"{path}: expected run: SynPo, got {spec['run']!r}")
    return SynPo.get_default_config().update_from_dict({**experiment_config(spec), "evaluation_interval": None})


def measure_rllib(config, seconds: float) -> dict[str, float]:
    """Trained and collected states per second, and the share of time spent collecting."""
    algo = config.build_algo()
    collecting = 0.0
    collect = algo._collect

    def timed_collect():
        nonlocal collecting
        start = time.perf_counter()
        try:
            return collect()
        finally:
            collecting += time.perf_counter() - start

    algo._collect = timed_collect
    while len(algo.replay) < config.warmup_trajectories:
        algo.train()
    # A long run samples from a full replay; fill it with copies of the warm-up's trajectories
    # so the timing includes what drawing from `replay_capacity` trajectories costs.
    warmup = algo.replay.trajectories()
    while len(algo.replay) < config.replay_capacity:
        algo.replay.add(warmup[: config.replay_capacity - len(algo.replay)])
    algo.train()  # the first update (optimizer state, lazy allocations) is not timed
    collecting, iterations, steps_before = 0.0, 0, algo.replay.steps_added
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        algo.train()
        iterations += 1
    elapsed = time.perf_counter() - start
    collected = algo.replay.steps_added - steps_before
    algo.stop()
    trained = iterations * config.updates_per_iteration * config.states_per_update
    return {"trained": trained / elapsed, "collected": collected / elapsed, "collect_share": collecting / elapsed}


def measure_direct(seconds: float, precision: str = "float32") -> float:
    """Trained states per second of the tuned example's Ray-free twin (one state collected per
    state trained) at the example's ``precision``."""
    from synpo_envs.splits import random_split

    from rllib_synpo.budgeted import best_recipe
    from rllib_synpo.direct import DirectImitation

    trainer = DirectImitation(best_recipe(precision=precision), list(random_split(seed=0).seen), seed=0)
    trainer.step()  # fills the warm-up replay
    start, trained = time.perf_counter(), trainer.states_trained
    while time.perf_counter() - start < seconds:
        trainer.step()
    return (trainer.states_trained - trained) / (time.perf_counter() - start)


@contextlib.contextmanager
def local_ray(num_cpus: int) -> Iterator[None]:
    """A local Ray with ``num_cpus`` for the benchmark, shut down after it; a Ray already running
    in the process is used as it is and left running."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    config = synpo_config(args.experiment)
    if config.states_per_update is None:
        raise SystemExit(f"{args.experiment}: set states_per_update (the Ray-free twin trains on independent states)")
    updates = args.updates_per_iteration or [config.updates_per_iteration]
    if min(updates) < 1:
        raise SystemExit(f"--updates-per-iteration must be >= 1, got {min(updates)}")
    with local_ray(max(args.threads)):
        print(f"{Path(args.experiment).name}: {args.seconds:.0f} s per measurement, the replay full, precision {config.precision}")
        print("threads  updates  rllib trained/s  collected/s  collecting  ray-free trained/s  rllib/ray-free")
        for threads in args.threads:
            torch.set_num_threads(threads)
            direct = measure_direct(args.seconds, config.precision)
            for count in updates:
                rllib = measure_rllib(config.copy(copy_frozen=False).training(updates_per_iteration=count), args.seconds)
                print(
                    f"{threads:7d}  {count:7d}  {rllib['trained']:15,.0f}  {rllib['collected']:11,.0f}  {rllib['collect_share']:10.0%}"
                    f"  {direct:18,.0f}  {rllib['trained'] / direct:14.2f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
