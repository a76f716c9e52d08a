"""States per second through RLlib's `SynPo` (the env runner's expert episodes, the trajectory
replay, the learner's updates, the metrics) for a tuned example, against the bare update loop
on the same module, replay, batches, precision, optimizer and loss, measured in the same run,
for each torch thread count (and, with ``--updates-per-iteration``, for each number of learner
updates per collection instead of the experiment's own).

    python benchmarks/rllib_throughput.py [--experiment tuned_examples/synpo_gridworld.yaml] \
        [--seconds 60] [--threads 1 2] [--updates-per-iteration 8 16]

Each measurement alternates the two loops in ``--rounds`` stretches, in the order bare, RLlib,
RLlib, bare, ... (a shared machine's speed drifts; both then see the same drift, and a steady
drift favours neither). The bare loop is what an update costs without Ray: draw
``states_per_update`` states from the replay, build the learner's columns (`learner_batch`) as
torch tensors, forward_train, loss, backward, optimizer step; no collection, no RLlib learner,
no metrics. Its replay is the RLlib measurement's, filled to ``replay_capacity`` the same way,
so both pay the same sampling cost. The last line printed, ``ratio X.XX``, is the smallest
RLlib/bare ratio of the table (the share of the bare loop's rate that RLlib keeps while it also
collects).

In a Ray Tune trial the algorithm's process has ``num_cpus_for_main_process`` torch threads (Ray
sets OMP_NUM_THREADS to the CPUs it assigns); here the thread count is set directly. Periodic
evaluation is switched off; timing starts once the replay holds its warm-up trajectories and is
then filled to its capacity with copies of them (the sampling cost of a long run). Bad input
ends with one ``error: ...`` line on stderr and exit status 2, before Ray starts.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from rllib_synpo.cli.errors import USAGE_ERROR, UsageError
from rllib_synpo.utils.denormals import flush_denormals_where_wanted

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXPERIMENT = ROOT / "tuned_examples" / "synpo_gridworld.yaml"
DEVICE = "cpu"  # both loops train on the CPU (the learner of a local RLlib without GPUs)


class _Parser(argparse.ArgumentParser):
    """Argument problems raise `UsageError` (reported by `main` in one line) instead of
    printing the usage and exiting."""

    def error(self, message: str):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--experiment", default=str(DEFAULT_EXPERIMENT), help="an experiment file with one SynPo experiment"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="timed training per measurement")
    parser.add_argument(
        "--rounds",
        type=int,
        default=6,
        help="alternating stretches of the two loops a measurement is cut into (even: each loop "
        "runs first as often as second)",
    )
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure"
    )
    parser.add_argument(
        "--updates-per-iteration",
        type=int,
        nargs="+",
        metavar="N",
        help="learner updates per collection to measure (default: the experiment's)",
    )
    return parser


def checked_synpo_config(path: str):
    """The `SynPoConfig` of the file's single SynPo experiment, evaluation off; `UsageError`
    when the file is not one valid SynPo experiment."""
    from rllib_synpo.algorithms.synpo.synpo import SynPo
    from rllib_synpo.cli.experiments import experiment_config, load_experiments

    experiments = load_experiments(path)
    if len(experiments) != 1:
        raise UsageError(f"{path}: expected one experiment, found {sorted(experiments)}")
    (spec,) = experiments.values()
    if spec["run"] != "SynPo":
        raise UsageError(f"{path}: expected run: SynPo, got {spec['run']!r}")
    config = SynPo.get_default_config().update_from_dict(
        {**experiment_config(spec), "evaluation_interval": None}
    )
    try:  # a copy: validate() completes env_config, and building the algorithm validates again
        config.copy(copy_frozen=False).validate()
    except (ValueError, TypeError) as err:
        raise UsageError(f"{path}: {str(err).strip().splitlines()[0]}") from None
    return config


def synpo_config(path: str):
    """`checked_synpo_config` for scripts: bad input ends the program with its message."""
    try:
        return checked_synpo_config(path)
    except UsageError as err:
        raise SystemExit(f"error: {err}") from None


class CollectTimer:
    """Wraps ``algo._collect`` (the env runners' collection in `SynPo.training_step`) and adds
    up the seconds spent in it."""

    def __init__(self, algo) -> None:
        self.seconds = 0.0
        self._collect: Callable[[], list] = algo._collect
        algo._collect = self

    def __call__(self) -> list:
        start = time.perf_counter()
        try:
            return self._collect()
        finally:
            self.seconds += time.perf_counter() - start


def ready_algorithm(config):
    """The built `SynPo` with a `CollectTimer` on its collection (``algo.collect_timer``), its
    replay full and its first update done (optimizer state, lazy allocations): ready to time."""
    algo = config.build_algo()
    algo.collect_timer = CollectTimer(algo)
    while len(algo.replay) < config.warmup_trajectories:
        algo.train()
    # A long run samples from a full replay; fill it with copies of the warm-up's trajectories
    # so the timing includes what drawing from `replay_capacity` trajectories costs.
    warmup = algo.replay.trajectories()
    while len(algo.replay) < config.replay_capacity:
        algo.replay.add(warmup[: config.replay_capacity - len(algo.replay)])
    algo.train()  # the first update is not timed
    return algo


def measure_rllib(algo, seconds: float) -> dict[str, float]:
    """What ``algo.train()`` (a `ready_algorithm`) does in about ``seconds``: states trained and
    collected, seconds spent collecting, and the seconds taken."""
    config = algo.config
    algo.collect_timer.seconds, iterations, steps_before = 0.0, 0, algo.replay.steps_added
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        algo.train()
        iterations += 1
    return {
        "trained": iterations * config.updates_per_iteration * config.states_per_update,
        "collected": algo.replay.steps_added - steps_before,
        "collecting": algo.collect_timer.seconds,
        "seconds": time.perf_counter() - start,
    }


def initial_lr(lr: float | list) -> float:
    """The learning rate at the start: ``lr`` itself, or a schedule's ``[[0, value], ...]`` first value."""
    return float(lr[0][1]) if isinstance(lr, (list, tuple)) else float(lr)


class BareLoop:
    """The learner's update without Ray: a batch of ``states_per_update`` states from the
    replay, turned into the learner's tensors, then forward_train, the SynPo loss, backward and
    (fused) Adam at the config's precision, learning rate (a schedule's first) and weight
    decay, with the config's gradient clipping if any. Nothing is logged."""

    def __init__(self, module, replay, layout, config, successors: bool) -> None:
        from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import loss_weights
        from rllib_synpo.utils.optimizers import fused_adam_options
        from rllib_synpo.utils.precision import resolve_precision

        self.module = module.train()
        self.replay, self.layout, self.successors = replay, layout, successors
        self.states_per_update = config.states_per_update
        params = list(module.parameters())
        self.optimizer = torch.optim.Adam(
            params, lr=initial_lr(config.lr), weight_decay=config.weight_decay, **fused_adam_options(params)
        )
        self.precision = resolve_precision(config.precision, DEVICE)
        self.weights = loss_weights(config)
        self.grad_clip, self.grad_clip_by = config.grad_clip, config.grad_clip_by

    @classmethod
    def from_algorithm(cls, algo) -> BareLoop:
        """A loop on ``algo``'s replay (read only; its sampling generator moves on) and a new
        module built from the algorithm's config and spaces as its learner's, with the
        learner's current weights."""
        from rllib_synpo.checkpoint import MODULE_ID

        spec = algo.config.get_multi_rl_module_spec(spaces=algo.spaces, inference_only=False)
        module = spec.build()[MODULE_ID]
        module.set_state(algo.learner_group.get_weights(module_ids=[MODULE_ID])[MODULE_ID])
        return cls(module, algo.replay, algo.layout, algo.config, algo._with_successors)

    def batch(self) -> dict[str, Any]:
        """The columns `SynPo.training_step` sends its learner, as the learner's tensors."""
        from ray.rllib.utils.torch_utils import convert_to_torch_tensor

        from rllib_synpo.algorithms.synpo.synpo import learner_batch
        from rllib_synpo.checkpoint import MODULE_ID

        sample = self.replay.sample_states(self.states_per_update, successors=self.successors)
        # What `TorchLearner._convert_batch_type` does with the numpy batch.
        batch = learner_batch(sample, self.layout)
        return convert_to_torch_tensor(batch.policy_batches, device=DEVICE)[MODULE_ID]

    def update(self) -> None:
        """One update on a fresh batch (autocast spans the backward and the step as in
        `SynPoTorchLearner`)."""
        from ray.rllib.utils.torch_utils import clip_gradients

        from rllib_synpo.algorithms.synpo.torch.synpo_torch_learner import synpo_loss_terms
        from rllib_synpo.losses import TOTAL_LOSS
        from rllib_synpo.utils.precision import training_autocast

        batch = self.batch()
        with training_autocast(self.precision, DEVICE):
            fwd_out = self.module.forward_train(batch)
            loss = synpo_loss_terms(self.module, batch, fwd_out, self.weights)[TOTAL_LOSS]
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.grad_clip:  # as RLlib's learner: None or 0 clips nothing
                gradients = {i: p.grad for i, p in enumerate(self.module.parameters()) if p.grad is not None}
                clip_gradients(gradients, grad_clip=self.grad_clip, grad_clip_by=self.grad_clip_by)
            self.optimizer.step()


def measure_bare(loop: BareLoop, seconds: float) -> dict[str, float]:
    """States ``loop`` trains in about ``seconds``, and the seconds taken."""
    updates, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        loop.update()
        updates += 1
    return {"trained": updates * loop.states_per_update, "seconds": time.perf_counter() - start}


def measure_side_by_side(algo, seconds: float, rounds: int) -> tuple[dict[str, float], float]:
    """RLlib's rates (trained/s, collected/s, collecting share) and the bare loop's trained/s,
    each timed for ``seconds`` in total, in ``rounds`` alternating stretches, so that a
    machine whose speed drifts (a shared VM) slows both alike."""
    loop = BareLoop.from_algorithm(algo)
    loop.update()  # the bare loop's first update (optimizer state) is not timed either
    rllib, bare = Counter(), Counter()
    stretch = seconds / rounds
    for round_ in range(rounds):  # bare, rllib, rllib, bare, ...: a steady drift favours neither
        if round_ % 2 == 0:
            bare.update(measure_bare(loop, stretch))
        rllib.update(measure_rllib(algo, stretch))
        if round_ % 2 == 1:
            bare.update(measure_bare(loop, stretch))
    rates = {
        "trained": rllib["trained"] / rllib["seconds"],
        "collected": rllib["collected"] / rllib["seconds"],
        "collect_share": rllib["collecting"] / rllib["seconds"],
    }
    return rates, bare["trained"] / bare["seconds"]


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


@contextlib.contextmanager
def _without_warnings() -> Iterator[None]:
    """Warnings ignored and log records of warnings and below dropped (RLlib's note that SynPo
    runs on the new API stack, logged when a config is first validated; gymnasium's checks of
    another algorithm's env), so that bad input ends in one line."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


@contextlib.contextmanager
def _restored_threads() -> Iterator[None]:
    """torch's thread count as it was before, afterwards (`main` sets it per measurement)."""
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _checked_args(argv: list[str] | None) -> tuple[argparse.Namespace, Any, list[int]]:
    """The arguments, the experiment's config and the updates per iteration to measure;
    `UsageError` for bad input."""
    args = _parser().parse_args(argv)
    if not args.seconds > 0:
        raise UsageError(f"--seconds must be > 0, got {args.seconds:g}")
    if args.rounds < 1:
        raise UsageError(f"--rounds must be >= 1, got {args.rounds}")
    if min(args.threads) < 1:
        raise UsageError(f"--threads must be >= 1, got {min(args.threads)}")
    updates = args.updates_per_iteration
    if updates and min(updates) < 1:
        raise UsageError(f"--updates-per-iteration must be >= 1, got {min(updates)}")
    with _without_warnings():
        config = checked_synpo_config(args.experiment)
    if config.states_per_update is None:
        raise UsageError(
            f"{args.experiment}: set states_per_update (the bare loop trains on independent states)"
        )
    return args, config, updates or [config.updates_per_iteration]


def main(argv: list[str] | None = None) -> int:
    flush_denormals_where_wanted()  # both loops, set before torch starts its threads (as in a trial)
    try:
        args, config, updates = _checked_args(argv)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return USAGE_ERROR
    from rllib_synpo.utils.precision import resolve_precision

    ratios = []
    with local_ray(max(args.threads)), _restored_threads():
        print(
            f"{Path(args.experiment).name}: {args.seconds:g} s per measurement, the replay full "
            f"({config.replay_capacity} trajectories), "
            f"precision {resolve_precision(config.precision, DEVICE)}"
        )
        print("threads  updates  rllib trained/s  collected/s  collecting  bare trained/s  rllib/bare")
        for threads in args.threads:
            torch.set_num_threads(threads)
            for count in updates:
                algo = ready_algorithm(config.copy(copy_frozen=False).training(updates_per_iteration=count))
                try:
                    rllib, bare = measure_side_by_side(algo, args.seconds, args.rounds)
                finally:
                    algo.stop()
                ratios.append(rllib["trained"] / bare)
                print(
                    f"{threads:7d}  {count:7d}  {rllib['trained']:15,.0f}  {rllib['collected']:11,.0f}"
                    f"  {rllib['collect_share']:10.0%}  {bare:14,.0f}  {ratios[-1]:10.2f}",
                    flush=True,
                )
    print(f"ratio {min(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
