"""The Figure 4 sweep (Section 4.3 of the paper): every method x level x seed through the whole pipeline
(`experiments.run_gridworld`), in parallel over local processes or a Ray cluster, in seed groups, into
figure4.csv, one row per evaluation of a run (`result_rows`); the rows other studies run their arms with
(`run_gridworld_rows`), and the table of a sweep (`figure4_table`). `aps_teach.studies.plots.write_figure4`
draws it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Executor
from functools import partial
from pathlib import Path

import gridworld
from aps_teach.grid.blame import BLAME_COLUMNS, blame_summary
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import (
    Budget,
    GridworldResult,
    check_run,
    prepare_run,
    run_gridworld,
    run_pipeline_seeds,
    whole_rounds,
)
from aps_teach.infra.checks import check_int, check_num_seeds
from aps_teach.infra.executors import check_not_reimported
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.stats import rate_text
from aps_teach.infra.sweeps import (
    RunSpec,
    SweepReport,
    check_seed_group,
    config_hash,
    default_sweep_dir,
    grid,
    run_sweep,
)
from aps_teach.learner.config import METHODS


def result_rows(spec: RunSpec, budget: Budget, config: TrainConfig,
                result: GridworldResult) -> list[dict]:
    """A run as sweep rows, one per evaluation along `result.adaptation`: phase zero_shot (0 fine-tuning
    steps), adapting (on the way), finetuned (the whole fine-tuning budget)."""
    shared = {
        "method": spec.method, "level": spec.env, "seed": spec.seed,
        "overrides": json.dumps(spec.overrides) if spec.overrides else "",
        "state_coverage": result.state_coverage, "visitation_entropy": round(result.visitation_entropy, 4),
        "states_visited": result.states_visited, "keys_picked": result.keys_picked,
        "target_reached": result.target_reached,
        **(result.blame.row() if result.blame is not None else dict.fromkeys(BLAME_COLUMNS, "")),
        "wall_seconds": round(result.wall_seconds, 3), "config_hash": config_hash(budget, config),
    }
    last = len(result.adaptation) - 1
    return [{**shared, "phase": "zero_shot" if i == 0 else "finetuned" if i == last else "adapting",
             "finetune_steps": point["finetune_steps"], "success_rate": point["success_rate"],
             "return": point["return"]} for i, point in enumerate(result.adaptation)]


def run_gridworld_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """One gridworld run (the full pipeline) as `result_rows`."""
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    result = run_gridworld(spec.method, spec.env, seed=spec.seed, budget=budget, config=config)
    return result_rows(spec, budget, config, result)


def run_gridworld_group_rows(specs: Sequence[RunSpec], budget: Budget) -> list[list[dict]]:
    """Runs that differ only in their seed (the full pipeline), as one seed group (`run_pipeline_seeds`):
    each run's `result_rows`, in the order of `specs`. A ValueError if they differ in anything else."""
    first = check_seed_group(specs)
    config = with_overrides(TrainConfig(progress=False), first.overrides)
    checked, config = prepare_run(first.method, first.env, first.seed, budget, config)
    results = run_pipeline_seeds(first.method, first.env, [spec.seed for spec in specs], checked, config)
    return [result_rows(spec, checked, config, result) for spec, result in zip(specs, results, strict=True)]


PHASES = ("zero_shot", "adapting", "finetuned")
"""A run's evaluations in figure4.csv: zero-shot, along fine-tuning, after it."""
FIGURE4_COLUMNS = {"run_key": "str", "method": METHODS, "level": tuple(gridworld.ENV_IDS), "seed": "count",
                   "phase": PHASES, "finetune_steps": "steps", "success_rate": "rate", "return": "score"}
"""The columns of figure4.csv its readers need, and their kinds (`sweeps.read_rows`): labels among the ones
a run writes, returns finite."""


def figure4_table(rows: list[dict], levels: list[str], methods: tuple[str, ...] = METHODS) -> str:
    """A markdown table of a Figure 4 sweep: per method and level, zero-shot and fine-tuned success as
    `stats.rate_text` (mean [95% CI], k/N seeds solving), pretraining's coverage and visitation entropy
    (dqn: fine-tuning's), and the zero-shot blame of each seed."""
    lines = ["| level | method | zero-shot | fine-tuned | coverage | visitation entropy | zero-shot blame |",
             "|---|---|---|---|---|---|---|"]
    for level in levels:
        for method in methods:
            runs = [row for row in rows if row["level"] == level and row["method"] == method]
            if not runs:
                continue
            rates = {phase: rate_text([float(row["success_rate"]) for row in runs if row["phase"] == phase])
                     for phase in ("zero_shot", "finetuned")}
            last = [row for row in runs if row["phase"] == "finetuned"]
            coverage = sum(float(row["state_coverage"]) for row in last) / len(last)
            entropy = sum(float(row["visitation_entropy"]) for row in last) / len(last)
            blame = blame_summary(runs)
            lines.append(f"| {level} | {method} | {rates['zero_shot']} | {rates['finetuned']} "
                         f"| {coverage:.2f} | {entropy:.3f} | {blame} |")
    return "\n".join(lines)


def figure4_config(budget: Budget) -> dict:
    """Everything a Figure 4 sweep's runs depend on besides their spec: the budget and the training config
    (`run_gridworld_rows`'s). Recorded beside figure4.csv; its hash names the default results directory."""
    return {"budget": budget, "train": TrainConfig(progress=False)}


def run_figure4_sweep(methods, levels, num_seeds: int, out_dir: str | Path | None, budget: Budget, *,
                      workers: int | None = None, executor: Executor | None = None,
                      progress: bool = True, seeds_per_group: int = 10) -> SweepReport:
    """Every method x level x seed 0..num_seeds-1, in parallel, into out_dir/figure4.csv (resumable; a file
    of another budget or config is refused); `study_plots.write_figure4` draws it (out_dir/figure4.png). The
    budget is rounded up to whole rounds (`whole_rounds`, said), and recorded so.
    `out_dir=None`: `default_sweep_dir("figure4", figure4_config(budget))`.

    Runs on `executor` (e.g. `aps_teach.infra.executors.make_executor("ray")`; left open) if given, else on
    `workers` local processes (default: one per core), in seed groups of up to `seeds_per_group` seeds
    (`run_gridworld_group_rows`; 1: each run alone), which give each run the rows it gives alone."""
    check_not_reimported()
    if not methods or not levels:
        raise ValueError(f"a sweep needs at least one method and one level, got methods {list(methods)}, "
                         f"levels {list(levels)}; methods: {', '.join(METHODS)}; levels: "
                         f"{', '.join(gridworld.LEVELS)}")
    unknown = sorted(set(methods) - set(METHODS)) + sorted(set(levels) - set(gridworld.LEVELS))
    if unknown:
        raise ValueError(f"unknown methods or levels {unknown}; methods: {', '.join(METHODS)}; "
                         f"levels: {', '.join(gridworld.LEVELS)}")
    num_seeds = check_num_seeds(num_seeds)
    if executor is not None and workers is not None:  # refused before any run is checked
        raise ValueError("give workers (local processes) or an executor, not both")
    check_int("workers", workers, default="one per core")
    budget = whole_rounds(budget, TrainConfig(progress=False), announce=True)
    config = figure4_config(budget)
    for method in methods:
        for level in levels:
            check_run(level, budget, config["train"], method=method)
    out_dir = default_sweep_dir("figure4", config) if out_dir is None else Path(out_dir)
    results = out_dir / "figure4.csv"
    return run_sweep(grid(methods, levels, range(num_seeds)), partial(run_gridworld_rows, budget=budget),
                     results, config=config, executor=executor, workers=workers, progress=progress,
                     group=partial(run_gridworld_group_rows, budget=budget), group_size=seeds_per_group)
