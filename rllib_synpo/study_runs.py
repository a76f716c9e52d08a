"""Runs of a reproduction study: one `RunSpec` per (configuration, seed), each trained with
`rllib_synpo.budgeted.train_for_budget` and written under the study's output folder as
``<name>.csv`` / ``.png`` (curve), ``.pt`` (weights) and ``<name>.json`` (the result, written
last). A run whose result JSON exists is skipped, so an interrupted study resumes where it
stopped; a result made with other settings is an error rather than silently reused. Runs may
train side by side, each in its own process."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch
from synpo_envs.splits import Split

from rllib_synpo.budgeted import Budget, percent, train_for_budget
from rllib_synpo.direct import DirectConfig, DirectImitation

RESULT_VERSION = 1
FINAL_KEYS = (
    "seen_avg_success_rate", "unseen_avg_success_rate", "seen_avg_return", "unseen_avg_return",
    "seen_first_pick_accuracy", "unseen_first_pick_accuracy",
)


class StudyError(ValueError):
    """A study that cannot run as asked (e.g. an existing result made with other settings)."""


@dataclass(frozen=True)
class RunSpec:
    """One training run: ``name`` is its file stem (runs with the same name and settings are
    the same run, shared between studies), ``group`` the row or curve it is averaged into."""

    name: str
    group: str
    seed: int
    config: DirectConfig
    split: Split
    budget: Budget

    def settings(self) -> dict:
        """Everything that decides the run's outcome (JSON-normalized), hardware aside."""
        settings = {
            "seed": self.seed, "config": asdict(self.config), "budget": asdict(self.budget),
            "split": self.split.to_dict(),
        }
        return json.loads(json.dumps(settings))

    def result_path(self, folder: Path) -> Path:
        return folder / f"{self.name}.json"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_model(device: str) -> str:
    """What ran a run's network: the GPU's name for a CUDA device, else the CPU's model."""
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return cpu_model()


def load_result(spec: RunSpec, folder: Path) -> dict | None:
    """The stored result of ``spec``, None when it has not finished yet."""
    path = spec.result_path(folder)
    if not path.is_file():
        return None
    result = json.loads(path.read_text())
    if with_new_defaults(result.get("settings"), spec.settings()) != spec.settings():
        raise StudyError(
            f"{path} holds a run made with other settings (e.g. minutes per run, episodes, batch); "
            "use another --out folder or delete that file"
        )
    return result


def with_new_defaults(stored: dict | None, current: dict) -> dict | None:
    """``stored`` settings with the `DirectConfig` fields added since they were written (absent
    from them) filled in at their default, where the current settings keep that default: a run
    made before a new option existed was made with its default, so it is still the same run."""
    if not stored or "config" not in stored:
        return stored
    defaults = json.loads(json.dumps(asdict(DirectConfig())))
    config = dict(stored["config"])
    for name, value in current["config"].items():
        if name not in config and name in defaults and value == defaults[name]:
            config[name] = value
    return {**stored, "config": config}


def say_line(line: str) -> None:
    """Writes ``line`` and its newline to stdout in one write. Runs side by side share stdout, and
    where it is unbuffered (PYTHONUNBUFFERED, as our Docker image sets) print() writes the text and
    the newline separately, so two runs' lines interleaved; one short write to a pipe is atomic."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Progress:
    """Progress lines: which run, training minute, current AvgSR and the estimated time left."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished_walls: list[float] = []
        self.index, self.spec, self.run_start, self.last_row, self.rounds_after = 0, None, 0.0, None, 0

    def start(self, index: int, spec: RunSpec, rounds_after: int) -> None:
        """``rounds_after``: how many more rounds of runs (runs side by side make one round)
        will follow the one this run is in."""
        self.index, self.spec, self.run_start, self.last_row = index, spec, time.perf_counter(), None
        self.rounds_after = rounds_after
        say_line(f"[run {index}/{self.total}] {spec.name}: training {spec.budget.minutes:g} min")

    def skip(self, index: int, spec: RunSpec) -> None:
        say_line(f"[run {index}/{self.total}] {spec.name}: result exists, skipped")

    def on_eval(self, row: dict) -> None:
        self.last_row = row
        self._line(row["train_minutes"] * 60, f"eval {row['eval_seconds']:.0f} s, {row['episodes_per_pair']}/pair")

    def on_heartbeat(self, train_seconds: float) -> None:
        self._line(train_seconds, "training")

    def finish(self) -> None:
        self.finished_walls.append(time.perf_counter() - self.run_start)

    def _line(self, train_seconds: float, what: str) -> None:
        row = self.last_row
        if row is None:
            scores = "no evaluation yet"
        else:
            seen, unseen = (percent(row.get(f"{k}_avg_success_rate")) for k in ("seen", "unseen"))
            scores = f"seen {seen:.1f}% unseen {unseen:.1f}%"
        say_line(
            f"[run {self.index}/{self.total}] {self.spec.name}: minute {train_seconds / 60:.1f}/"
            f"{self.spec.budget.minutes:g}, {scores} ({what}), "
            f"about {format_duration(self.seconds_left(train_seconds))} left"
        )

    def seconds_left(self, train_seconds: float) -> float:
        """This run's remaining wall time (evaluation overhead scaled from what it has cost so
        far, the final evaluation from the last periodic one) plus the rounds still to go (each
        round like the finished runs, else like this one)."""
        budget = self.spec.budget
        wall = time.perf_counter() - self.run_start
        total_train = budget.minutes * 60
        this_run = total_train if train_seconds <= 0 else wall * total_train / train_seconds
        row = self.last_row
        if row is not None and row["episodes_per_pair"] == budget.eval_episodes:
            this_run += row["eval_seconds"] * budget.final_episodes / budget.eval_episodes
        later = sum(self.finished_walls) / len(self.finished_walls) if self.finished_walls else this_run
        return max(this_run - wall, 0.0) + self.rounds_after * later


def format_duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{seconds / 60:.1f} min"


def cpu_cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_study(specs: Sequence[RunSpec], folder: Path, *, jobs: int = 1, threads: int = 0) -> list[dict]:
    """Trains every run of ``specs`` without a stored result, ``jobs`` at a time (in order; each
    side-by-side run in its own process) with ``threads`` torch threads each (0: the cores
    shared out among the runs side by side), and returns all results in the order of ``specs``."""
    folder.mkdir(parents=True, exist_ok=True)
    stored = [load_result(spec, folder) for spec in specs]  # a conflicting result fails before any training
    progress = Progress(len(specs))
    pending = []
    for index, (spec, result) in enumerate(zip(specs, stored, strict=True), start=1):
        if result is None:
            pending.append((index, spec))
        else:
            progress.skip(index, spec)
    jobs = max(1, min(jobs, len(pending)))
    threads = threads or max(1, cpu_cores() // jobs)
    if jobs == 1:
        torch.set_num_threads(threads)
        for position, (index, spec) in enumerate(pending):
            progress.start(index, spec, rounds_after=len(pending) - 1 - position)
            train_run(spec, folder, progress, jobs=1)
            progress.finish()
    else:
        rounds = math.ceil(len(pending) / jobs)
        # "spawn": a fresh interpreter per worker, so no torch thread pool is inherited by a fork.
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {
                pool.submit(_train_side_by_side, spec, folder, index, len(specs), rounds - 1 - position // jobs, jobs, threads): spec
                for position, (index, spec) in enumerate(pending)
            }
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((future for future in done if future.exception() is not None), None)
            if failed is not None:
                for future in futures:
                    future.cancel()
                say_line(f"run {futures[failed].name} failed; the runs in progress finish first (their results are kept)")
        if failed is not None:
            raise failed.exception()
    return [load_result(spec, folder) for spec in specs]


def _train_side_by_side(spec: RunSpec, folder: Path, index: int, total: int, rounds_after: int, jobs: int, threads: int) -> None:
    torch.set_num_threads(threads)
    progress = Progress(total)
    progress.start(index, spec, rounds_after)
    train_run(spec, folder, progress, jobs=jobs)


def train_run(spec: RunSpec, folder: Path, progress: Progress | None = None, *, jobs: int = 1) -> dict:
    """Trains one run and stores its result JSON (written last: it marks the run finished);
    ``jobs``: how many runs trained side by side with it (recorded: they share the machine)."""
    start = time.perf_counter()
    trainer = DirectImitation(spec.config, list(spec.split.seen), seed=spec.seed)
    rows = train_for_budget(
        trainer, spec.budget, spec.split, spec.split.all_pairs, folder / spec.name,
        report=progress.on_eval if progress else lambda row: None,
        heartbeat=progress.on_heartbeat if progress else None,
    )
    final = rows[-1]
    result = {
        "version": RESULT_VERSION,
        "name": spec.name,
        "group": spec.group,
        "seed": spec.seed,
        "settings": spec.settings(),
        "final": {key: final.get(key) for key in FINAL_KEYS},
        "episodes_per_pair": final["episodes_per_pair"],
        "train_minutes": final["train_minutes"],
        "updates": final["updates"],
        "states": final["states"],
        "eval_seconds": sum(row["eval_seconds"] for row in rows),
        "wall_seconds": time.perf_counter() - start,
        "torch_threads": torch.get_num_threads(),
        "runs_side_by_side": jobs,
        "precision": trainer.precision,  # "auto" resolved on this hardware
        "cpu": cpu_model(),
        "device": device_model(spec.config.device),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    path = spec.result_path(folder)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(result, indent=1))
    partial.replace(path)
    return result
