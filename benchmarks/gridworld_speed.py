"""Gridworld speed and memory figures, against baselines measured in the same run.

    python benchmarks/gridworld_speed.py [--seconds 2] [--repeats 3] [--num-envs 1024]

Runs on one core (the process is pinned to a single CPU where the OS allows). Each figure is
the best of ``--repeats`` timed runs of ``--seconds`` each, all with expert actions and
observations rendered. Baseline: the single env also drawing a 256 x 256 image every step, as
the original release did.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
from synpo_envs.gridworld import BatchedGridWorld, GridWorld

TARGET_SINGLE_STEPS_PER_S = 20_000
TARGET_BATCHED_STEPS_PER_S = 500_000
TARGET_EXPERT_US_PER_STEP = 1.0
TARGET_OBS_BYTES = 3 * 1024
ORIGINAL_RELEASE_STEPS_PER_S = (710, 811)  # measured on this kind of CPU, DESIGN.md section 5


def best_rate(run: Callable[[], int], seconds: float, repeats: int) -> float:
    """Best items/s over ``repeats`` runs; ``run`` does a chunk of work and returns its count."""
    best = 0.0
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            count += run()
        best = max(best, count / elapsed)
    return best


def single_env_runner(render: bool) -> Callable[[], int]:
    env = GridWorld(render_mode="rgb_array" if render else None)
    env.reset(seed=0)
    state = {"action": env.expert_action()}

    def run(chunk: int = 1000) -> int:
        for _ in range(chunk):
            _, _, terminated, truncated, info = env.step(state["action"])
            if render:
                env.render()
            if terminated or truncated:
                _, info = env.reset()
            state["action"] = info["expert_action"]
        return chunk

    return run


def batched_runner(num_envs: int) -> Callable[[], int]:
    env = BatchedGridWorld(num_envs)
    _, info = env.reset(seed=0)
    state = {"actions": info["expert_action"]}

    def run(chunk: int = 20) -> int:
        for _ in range(chunk):
            _, _, _, _, info = env.step(state["actions"])
            state["actions"] = info["expert_action"]
        return chunk * num_envs

    return run


def expert_runner(num_envs: int) -> tuple[Callable[[], int], Callable[[], int]]:
    batched = BatchedGridWorld(num_envs)
    batched.reset(seed=0)
    single = GridWorld()
    single.reset(seed=0)

    def run_batched(chunk: int = 100) -> int:
        for _ in range(chunk):
            batched.expert_actions()
        return chunk * num_envs

    def run_single(chunk: int = 1000) -> int:
        for _ in range(chunk):
            single.expert_action()
        return chunk

    return run_batched, run_single


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        core = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"pinned to core {core}"
    return "not pinned (no sched_setaffinity on this OS)"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each timed run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (best is kept)")
    parser.add_argument("--num-envs", type=int, default=1024, help="batch size of the batched env")
    args = parser.parse_args(argv)
    print(f"gridworld speed, {pin_to_one_core()}, numpy {np.__version__}")

    def measure(run):
        return best_rate(run, args.seconds, args.repeats)

    baseline = measure(single_env_runner(render=True))
    single = measure(single_env_runner(render=False))
    batched = measure(batched_runner(args.num_envs))
    expert_batched, expert_single = (measure(run) for run in expert_runner(args.num_envs))
    expert_us = 1e6 / expert_batched
    obs = GridWorld().reset(seed=0)[0]["obs"]
    buffers = BatchedGridWorld(2).reset(seed=0)[0]

    low, high = ORIGINAL_RELEASE_STEPS_PER_S
    rows = [
        ("baseline: single env + 256x256 image per step", f"{baseline:12,.0f} steps/s", "", ""),
        (
            "single env, expert actions, observations",
            f"{single:12,.0f} steps/s",
            f"{single / baseline:6.1f}x baseline, {single / high:5.1f}-{single / low:.1f}x original release",
            f">= {TARGET_SINGLE_STEPS_PER_S:,}: {verdict(single >= TARGET_SINGLE_STEPS_PER_S)}",
        ),
        (
            f"batched N={args.num_envs}, expert actions, observations",
            f"{batched:12,.0f} env-steps/s",
            f"{batched / single:6.1f}x single env, {batched / baseline:7.1f}x baseline",
            f">= {TARGET_BATCHED_STEPS_PER_S:,}: {verdict(batched >= TARGET_BATCHED_STEPS_PER_S)}",
        ),
        (
            f"expert action, batched N={args.num_envs}",
            f"{expert_us:12.3f} us/env-step",
            f"{expert_batched / expert_single:6.1f}x faster than single-env expert_action() "
            f"({1e6 / expert_single:.2f} us)",
            f"<= {TARGET_EXPERT_US_PER_STEP} us: {verdict(expert_us <= TARGET_EXPERT_US_PER_STEP)}",
        ),
        (
            "stacked observation (4 frames)",
            f"{obs.nbytes:12,} bytes {obs.dtype}",
            "",
            f"<= {TARGET_OBS_BYTES} B uint8: "
            f"{verdict(obs.nbytes <= TARGET_OBS_BYTES and obs.dtype == np.uint8)}",
        ),
        (
            "float64 arrays among observations",
            f"{sum(v.dtype == np.float64 for v in buffers.values()):12d}",
            "",
            "",
        ),
    ]
    width = max(len(row[0]) for row in rows)
    for name, value, ratio, target in rows:
        print(f"{name:<{width}}  {value}  {ratio}  {target}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
