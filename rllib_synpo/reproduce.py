"""Reproduce the SynPo paper's gridworld studies with one command each:

    python -m rllib_synpo.reproduce table1 [--minutes-per-run M] [--seeds 0 1 2]
        [--methods synpo mlp mtl modulenet sf] [--final-episodes 100] [--out results/gridworld]
    python -m rllib_synpo.reproduce blind        # window 0: MLP, MTL, SynPo
    python -m rllib_synpo.reproduce ablation     # SynPo without env / task disentanglement
        [--variants full no_env_disentangle no_task_disentangle no_disentangle sf sf_no_td]
    python -m rllib_synpo.reproduce ratio        # SynPo vs fraction of seen pairs, 10 x 10
    python -m rllib_synpo.reproduce convergence  # AvgSR over training, mean ± std over seeds

Every run trains for ``--minutes-per-run`` minutes (training time; evaluation comes on top;
``--jobs`` runs side by side, each in its own process with ``--threads`` torch threads: by
default one thread per run and as many runs as CPU cores, the most states per second a CPU
gives: on 2 cores table1's 15 runs are 8 rounds of 60 training minutes)
with the project's best recipe (`rllib_synpo.budgeted.best_recipe`: relabelled seen tasks,
compact encoder with BatchNorm, 1024-d state feature, the paper's loss weights, unit-length embeddings into
the coefficient functions and Adam weight decay 1e-4, cosine learning rate over the budget)
through `rllib_synpo.direct.DirectImitation`, on the 144/256 split of
``random_split(--split-seed)``; the seeds are training seeds. Runs are stored under ``--out``
(``<run>.csv/.png/.pt/.json``) and a run whose result JSON exists is skipped, so an interrupted
study resumes; runs with the same name are shared between studies (table1's SynPo and SF runs are the
ablation's full models and the convergence study's curves). Each study writes its tables and
figures next to the folder: ``<out>_table1.md/.csv``, ``<out>_blind.md/.csv``,
``<out>_ablation.md/.csv/.png``, ``<out>_ratio.md/.csv/.png``, ``<out>_convergence.png/.csv``.
``--report-only`` writes them from the runs stored so far and trains nothing (a long study's
tables while it runs, or after it stopped part-way; the set-up names the runs left out).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import torch
from synpo_envs.gridworld.constants import (
    DEFAULT_FRAME_STACK,
    DEFAULT_MAX_STEPS,
    DEFAULT_WINDOW,
)
from synpo_envs.splits import Split, SplitError, random_split, ratio_split

from rllib_synpo.budgeted import Budget, best_recipe
from rllib_synpo.direct import DirectConfig, available_device
from rllib_synpo.networks import NETWORKS
from rllib_synpo.paper_numbers import BLIND, DISPLAY_NAMES, TABLE1
from rllib_synpo.precision import PRECISIONS
from rllib_synpo.study_report import (
    Section,
    TableRow,
    band,
    load_curves,
    plot_bands,
    plot_ratio,
    write_tables,
)
from rllib_synpo.study_runs import (
    RunSpec,
    StudyError,
    cpu_cores,
    cpu_model,
    format_duration,
    load_result,
    run_study,
)

TABLE1_METHODS = ("sf", "modulenet", "mlp", "mtl", "synpo")  # the paper's column order
BLIND_METHODS = ("mlp", "mtl", "synpo")
BLIND_WINDOW = 0
DEFAULT_SEEDS = (0, 1, 2)
# One night on a 2-core CPU: table1's 15 runs two at a time (one torch thread each) are 8
# rounds of 60 training minutes plus ~5 of evaluation (about 8.7 hours, measured per round).
DEFAULT_MINUTES = 60.0
INTERRUPTED = 130  # the shell's exit status for Ctrl-C
EVALS_PER_RUN = 10  # periodic evaluations per run unless --eval-minutes is given
RATIO_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


class Ablation(NamedTuple):
    """One variant of the ablation study: a network with some loss weights of the recipe changed."""

    run: str  # the run's name before "_seed<N>"; the unchanged networks share table1's runs
    label: str
    network: str
    weights: dict[str, float]


# The paper's ablation (SynPo without its disentanglement losses) is the default; the SF pair
# asks whether the TD term is what puts Table 1's SF ahead of SynPo (README), not in the paper.
ABLATIONS = {
    "full": Ablation("synpo", "SynPo (full)", "synpo", {}),
    "no_env_disentangle": Ablation("synpo_no_env_disentangle", "SynPo w/o env disentanglement (l2 = 0)", "synpo", {"l2": 0.0}),
    "no_task_disentangle": Ablation("synpo_no_task_disentangle", "SynPo w/o task disentanglement (l3 = 0)", "synpo", {"l3": 0.0}),
    "no_disentangle": Ablation("synpo_no_disentangle", "SynPo w/o both (l2 = l3 = 0)", "synpo", {"l2": 0.0, "l3": 0.0}),
    "sf": Ablation("sf", "SF (full)", "sf", {}),
    "sf_no_td": Ablation("sf_no_td", "SF w/o TD term (sf_td_weight = 0)", "sf", {"sf_td_weight": 0.0}),
}
PAPER_ABLATIONS = ("full", "no_env_disentangle", "no_task_disentangle", "no_disentangle")


class OneLineParser(argparse.ArgumentParser):
    """Bad input ends in one ``error: ...`` line and exit status 2."""

    def error(self, message: str):
        raise SystemExit(_fail(message))


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _common(p: argparse.ArgumentParser, methods: Sequence[str] | None) -> None:
    p.add_argument("--minutes-per-run", type=float, default=DEFAULT_MINUTES, help="training minutes per run (evaluation excluded)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS), help="training seeds")
    if methods is not None:
        p.add_argument("--methods", nargs="+", default=list(methods), help=f"of {', '.join(TABLE1_METHODS)}")
    p.add_argument("--final-episodes", type=int, default=100, help="episodes per pair, final evaluation")
    p.add_argument("--eval-episodes", type=int, default=2, help="episodes per pair, periodic evaluation")
    p.add_argument("--eval-minutes", type=float, default=None,
                   help=f"training minutes between evaluations (default: budget / {EVALS_PER_RUN})")
    p.add_argument("--out", default="results/gridworld", help="folder of the runs; tables and figures go beside it")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the seen/unseen split")
    p.add_argument("--jobs", type=int, default=None,
                   help="runs trained side by side, each in its own process (default: one per torch thread's worth of "
                        "CPU cores, i.e. cores / --threads, on a CPU; one on a GPU)")
    p.add_argument("--threads", type=int, default=0, help="torch threads per run (0: the CPU cores shared out among the --jobs)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="torch device (default: the GPU where there is one)")
    p.add_argument("--report-only", action="store_true",
                   help="write the tables and figures from the runs stored so far; train nothing")
    d = best_recipe()
    p.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="training forward pass (rllib_synpo.precision); the default, auto, is bfloat16 where the device "
                        "computes it natively (about half an update's time on such CPUs), else float32")
    small = p.add_argument_group("scale (smaller values for smoke tests only)")
    small.add_argument("--num-collectors", type=int, default=d.num_collectors)
    small.add_argument("--batch-size", type=int, default=d.batch_size)
    small.add_argument("--replay-capacity", type=int, default=d.replay_capacity)
    small.add_argument("--warmup-states", type=int, default=d.warmup_states)
    small.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, help="episode step limit (the paper's 300)")


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="python -m rllib_synpo.reproduce", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    studies = p.add_subparsers(dest="study", required=True, metavar="study")
    _common(studies.add_parser("table1", help="every method on the 144/256 split (paper Table 1)"), TABLE1_METHODS)
    _common(studies.add_parser("blind", help="the blind agent (window 0)"), BLIND_METHODS)
    ablation = studies.add_parser("ablation", help="SynPo without its disentanglement losses (SF without its TD term)")
    _common(ablation, None)
    ablation.add_argument("--variants", nargs="+", default=list(PAPER_ABLATIONS),
                          help=f"of {', '.join(ABLATIONS)} (default: the paper's, {' '.join(PAPER_ABLATIONS)})")
    ratio = studies.add_parser("ratio", help="SynPo success vs fraction of seen pairs (10 x 10)")
    _common(ratio, None)
    ratio.add_argument("--fractions", type=float, nargs="+", default=list(RATIO_FRACTIONS))
    _common(studies.add_parser("convergence", help="AvgSR over training, mean ± std over seeds"), ("synpo",))
    return p


def validate(args: argparse.Namespace) -> None:
    """Raises `StudyError` with a one-line reason for bad input."""
    if not args.minutes_per_run > 0:
        raise StudyError(f"--minutes-per-run must be > 0, got {args.minutes_per_run:g}")
    if args.eval_minutes is not None and not args.eval_minutes > 0:
        raise StudyError(f"--eval-minutes must be > 0, got {args.eval_minutes:g}")
    if any(seed < 0 for seed in args.seeds) or len(set(args.seeds)) != len(args.seeds):
        raise StudyError(f"--seeds must be distinct non-negative integers, got {args.seeds}")
    for method in getattr(args, "methods", ()):
        if method not in NETWORKS:
            raise StudyError(f"unknown method {method!r}; expected some of {', '.join(TABLE1_METHODS)}")
    if len(set(getattr(args, "methods", ()))) != len(getattr(args, "methods", ())):
        raise StudyError(f"--methods lists a method twice: {args.methods}")
    for name in ("final_episodes", "eval_episodes", "num_collectors", "batch_size", "replay_capacity", "max_steps"):
        if getattr(args, name) < 1:
            raise StudyError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.replay_capacity <= args.num_collectors:
        raise StudyError(f"--replay-capacity ({args.replay_capacity}) must exceed --num-collectors ({args.num_collectors})")
    if args.warmup_states < 0 or args.threads < 0:
        raise StudyError(f"--warmup-states and --threads must be >= 0, got {args.warmup_states} and {args.threads}")
    if args.jobs is not None and args.jobs < 1:
        raise StudyError(f"--jobs must be >= 1, got {args.jobs}")
    try:
        available_device(args.device)
    except ValueError as error:
        raise StudyError(f"--device: {error}") from None
    for variant in getattr(args, "variants", ()):
        if variant not in ABLATIONS:
            raise StudyError(f"unknown ablation variant {variant!r}; expected some of {', '.join(ABLATIONS)}")
    if len(set(getattr(args, "variants", ()))) != len(getattr(args, "variants", ())):
        raise StudyError(f"--variants lists a variant twice: {args.variants}")
    for fraction in getattr(args, "fractions", ()):
        if not 0 < fraction < 1:
            raise StudyError(f"--fractions must be in (0, 1), got {fraction:g}")


# --- the studies' runs --------------------------------------------------------------------


def default_jobs(args: argparse.Namespace) -> int:
    """--jobs, else one run per ``--threads`` (1 if 0) of the CPU cores; one run on a GPU."""
    if args.jobs is not None:
        return args.jobs
    if torch.device(args.device).type != "cpu":
        return 1
    return max(1, cpu_cores() // (args.threads or 1))


def _budget(args: argparse.Namespace) -> Budget:
    minutes = args.minutes_per_run
    return Budget(
        minutes=minutes, eval_minutes=args.eval_minutes or minutes / EVALS_PER_RUN, eval_episodes=args.eval_episodes,
        final_episodes=args.final_episodes, lr_schedule="cosine",
    )


def _spec(
    args: argparse.Namespace, name: str, group: str, seed: int, split: Split, *,
    network: str = "synpo", window: int = DEFAULT_WINDOW, **weights: float,
) -> RunSpec:
    """Run ``name``_seed``seed`` of the best recipe (``weights``: loss-weight overrides)."""
    config = best_recipe(
        network=network, num_collectors=args.num_collectors, batch_size=args.batch_size,
        replay_capacity=args.replay_capacity, warmup_states=args.warmup_states, device=args.device, precision=args.precision,
        env_kwargs={"frame_stack": DEFAULT_FRAME_STACK, "window": window, "agent_channel": False, "max_steps": args.max_steps},
        **weights,
    )
    return RunSpec(name=f"{name}_seed{seed}", group=group, seed=seed, config=config, split=split, budget=_budget(args))


def method_runs(args: argparse.Namespace) -> list[RunSpec]:
    """table1 and convergence: each method at window 1, seeds outermost (all methods of a seed
    finish before the next seed starts, so an interrupted study has complete rows early)."""
    split = random_split(seed=args.split_seed)
    return [_spec(args, m, m, seed, split, network=m) for seed in args.seeds for m in args.methods]


def blind_runs(args: argparse.Namespace) -> list[RunSpec]:
    split = random_split(seed=args.split_seed)
    return [_spec(args, f"blind_{m}", m, seed, split, network=m, window=BLIND_WINDOW) for seed in args.seeds for m in args.methods]


def ablation_runs(args: argparse.Namespace) -> list[RunSpec]:
    split = random_split(seed=args.split_seed)
    variants = [ABLATIONS[name] for name in args.variants]
    return [_spec(args, v.run, v.label, seed, split, network=v.network, **v.weights) for seed in args.seeds for v in variants]


def ratio_runs(args: argparse.Namespace) -> list[RunSpec]:
    specs = []
    for seed in args.seeds:
        for fraction in args.fractions:
            split = ratio_split(fraction, seed=args.split_seed)
            specs.append(_spec(args, f"ratio{round(100 * fraction):02d}_synpo", f"{fraction:g}", seed, split))
    return specs


# --- the studies' outputs -----------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    args: argparse.Namespace
    folder: Path
    command: str
    started: float
    missing: tuple[str, ...] = ()  # runs of the study not stored yet (--report-only)

    def stem(self, study: str) -> Path:
        return self.folder.with_name(f"{self.folder.name}_{study}")

    def setup(self, results: Sequence[dict], extra: Sequence[str] = ()) -> list[str]:
        args = self.args
        threads = sorted({r["torch_threads"] for r in results})
        side_by_side = sorted({str(r.get("runs_side_by_side", "not recorded")) for r in results})
        # Results from before "precision" was recorded ran their config's, float32 if it had none.
        precisions = sorted({r.get("precision") or r["settings"]["config"].get("precision", DirectConfig.precision) for r in results})
        cpus = sorted({r["cpu"] for r in results}) or [cpu_model()]
        gpus = sorted({r["device"] for r in results if r.get("device", r["cpu"]) != r["cpu"]})
        wall = sum(r["wall_seconds"] for r in results)
        d = best_recipe()
        return [
            f"- command: `{self.command}`",
            f"- seeds: {' '.join(map(str, args.seeds))} (training seeds); split seed {args.split_seed}",
            f"- recipe: best_recipe (relabelled seen tasks, {d.encoder} encoder {d.encoder_kwargs}, feature_dim {d.feature_dim}, loss weights "
            f"l1 {d.l1:g} l2 {d.l2:g} l3 {d.l3:g}, coefficient options {d.network_kwargs} for SynPo and MTL, Adam lr {d.lr:g} "
            f"with weight decay {d.weight_decay:g} and a cosine schedule over the budget), "
            f"{args.num_collectors} collectors, batches of {args.batch_size}, max {args.max_steps} steps, "
            f"forward pass in {', '.join(precisions) or args.precision}",
            f"- minutes per run: {args.minutes_per_run:g} (training; evaluation excluded); final evaluation "
            f"{args.final_episodes} episodes per pair (greedy)",
            f"- hardware: {', '.join(cpus)}{''.join(f', GPU {gpu}' for gpu in gpus)}; torch threads per run "
            f"{', '.join(map(str, threads)) or torch.get_num_threads()}; runs side by side {', '.join(side_by_side) or 1}",
            f"- wall time: {format_duration(wall)} summed over {len(results)} runs (this invocation "
            f"{format_duration(time.perf_counter() - self.started)}; skipped runs reuse stored results)",
            "- mean ± std over seeds (population std); the paper's numbers: NeurIPS 2018 supplement, 3 seeds, 100 episodes per pair",
            *extra,
            *([f"- --report-only: {len(self.missing)} run(s) not stored yet, left out: {', '.join(self.missing)}"] if self.missing else []),
        ]


def _by_group(specs: Sequence[RunSpec], results: Sequence[dict]) -> dict[str, tuple[dict, ...]]:
    groups: dict[str, list[dict]] = {}
    for spec, result in zip(specs, results, strict=True):
        groups.setdefault(spec.group, []).append(result)
    return {group: tuple(found) for group, found in groups.items()}


def _method_section(title: str, methods: Sequence[str], groups: dict, paper: dict) -> Section:
    return Section(title, tuple(TableRow(DISPLAY_NAMES[m], groups.get(m, ()), paper.get(m)) for m in methods))


def report_table1(ctx: Context, specs: Sequence[RunSpec], results: Sequence[dict]) -> list[Path]:
    methods = [m for m in TABLE1_METHODS if m in ctx.args.methods]
    sections = [_method_section("Setting 1: 144 seen / 256 unseen pairs, window 1", methods, _by_group(specs, results), TABLE1)]
    blind_specs = blind_runs(argparse.Namespace(**{**vars(ctx.args), "methods": list(BLIND_METHODS)}))
    blind_found = [(s, r) for s in blind_specs if (r := _stored(s, ctx.folder)) is not None]
    blind_groups = _by_group([s for s, _ in blind_found], [r for _, r in blind_found])
    sections.append(_method_section("Blind agent: window 0 (runs of `reproduce blind`, if any)", BLIND_METHODS, blind_groups, BLIND))
    all_results = [*results, *(r for _, r in blind_found)]
    title = "Gridworld Table 1: SynPo and baselines, reproduced"
    return list(write_tables(title, sections, ctx.setup(all_results), ctx.stem("table1")))


def _stored(spec: RunSpec, folder: Path) -> dict | None:
    try:
        return load_result(spec, folder)
    except StudyError:
        return None  # a blind run with other settings does not belong in this table


def report_blind(ctx: Context, specs: Sequence[RunSpec], results: Sequence[dict]) -> list[Path]:
    methods = [m for m in BLIND_METHODS if m in ctx.args.methods] + [m for m in ctx.args.methods if m not in BLIND_METHODS]
    sections = [_method_section("Blind agent: window 0, 144 seen / 256 unseen pairs", methods, _by_group(specs, results), BLIND)]
    return list(write_tables("Gridworld blind agent, reproduced", sections, ctx.setup(results), ctx.stem("blind")))


def report_ablation(ctx: Context, specs: Sequence[RunSpec], results: Sequence[dict]) -> list[Path]:
    groups = _by_group(specs, results)
    labels = [ABLATIONS[name].label for name in ctx.args.variants]
    rows = tuple(TableRow(label, groups.get(label, ())) for label in labels)
    note = ["- the paper shows its ablation (SynPo's disentanglement losses) as curves only (supplement figure); no paper numbers to compare"]
    title = "Gridworld ablation: the auxiliary losses"
    paths = list(write_tables(title, [Section("Final AvgSR", rows)], ctx.setup(results, note), ctx.stem("ablation")))
    png = ctx.stem("ablation").with_suffix(".png")
    plot_bands({label: load_curves(groups[label], ctx.folder) for label in labels if label in groups}, png, title)
    return [*paths, png]


def report_ratio(ctx: Context, specs: Sequence[RunSpec], results: Sequence[dict]) -> list[Path]:
    groups = _by_group(specs, results)
    fractions = sorted({float(g) for g in groups})
    rows = [(f, TableRow(f"{100 * f:.0f}% seen", groups[f"{f:g}"])) for f in fractions]
    note = ["- ratio_split: 10 envs x 10 tasks, each env and task seen at least once; the paper shows this study as a figure only"]
    section = Section("SynPo on 10 x 10 pairs by fraction of seen pairs", tuple(r for _, r in rows))
    paths = list(write_tables("Gridworld seen-ratio study", [section], ctx.setup(results, note), ctx.stem("ratio")))
    png = ctx.stem("ratio").with_suffix(".png")
    plot_ratio(rows, png, "SynPo AvgSR vs fraction of seen pairs")
    return [*paths, png]


def report_convergence(ctx: Context, specs: Sequence[RunSpec], results: Sequence[dict]) -> list[Path]:
    groups = _by_group(specs, results)
    curves = {DISPLAY_NAMES[m]: load_curves(groups[m], ctx.folder) for m in ctx.args.methods if m in groups}
    png, csv_path = ctx.stem("convergence").with_suffix(".png"), ctx.stem("convergence").with_suffix(".csv")
    plot_bands(curves, png, "AvgSR over training (window 1, 144/256 split)")
    lines = ["method,train_minutes,seen_mean,seen_std,unseen_mean,unseen_std"]
    for label, found in curves.items():
        minutes, seen, seen_std = band(found, "seen_avg_success_rate")
        _, unseen, unseen_std = band(found, "unseen_avg_success_rate")
        columns = zip(minutes, seen, seen_std, unseen, unseen_std, strict=True)
        lines += [f"{label},{m:.3f},{a:.2f},{b:.2f},{c:.2f},{d:.2f}" for m, a, b, c, d in columns]
    csv_path.write_text("\n".join(lines) + "\n")
    return [png, csv_path]


Study = tuple[Callable[[argparse.Namespace], list[RunSpec]], Callable[[Context, Sequence[RunSpec], Sequence[dict]], list[Path]]]
STUDIES: dict[str, Study] = {
    "table1": (method_runs, report_table1),
    "blind": (blind_runs, report_blind),
    "ablation": (ablation_runs, report_ablation),
    "ratio": (ratio_runs, report_ratio),
    "convergence": (method_runs, report_convergence),
}


def stored_runs(ctx: Context, specs: Sequence[RunSpec]) -> tuple[Context, list[RunSpec], list[dict]]:
    """The study's runs stored under ``ctx.folder`` and their results, with the others named in
    the context; `StudyError` when none is stored."""
    found = [(spec, load_result(spec, ctx.folder)) for spec in specs]
    stored = [(spec, result) for spec, result in found if result is not None]
    if not stored:
        raise StudyError(f"--report-only: none of this study's {len(specs)} runs is stored under {ctx.folder} (with these settings)")
    missing = tuple(spec.name for spec, result in found if result is None)
    return replace(ctx, missing=missing), [spec for spec, _ in stored], [result for _, result in stored]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    try:
        validate(args)
        make_runs, report = STUDIES[args.study]
        specs = make_runs(args)
    except (StudyError, SplitError) as err:
        return _fail(str(err))
    ctx = Context(args, Path(args.out), shlex.join(["python", "-m", "rllib_synpo.reproduce", *argv]), time.perf_counter())
    try:
        if args.report_only:
            ctx, specs, results = stored_runs(ctx, specs)
        else:
            results = run_study(specs, ctx.folder, jobs=default_jobs(args), threads=args.threads)
    except StudyError as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        print(f"interrupted: the finished runs are stored under {ctx.folder}; the same command resumes", file=sys.stderr)
        return INTERRUPTED
    for path in report(ctx, specs, results):
        print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
