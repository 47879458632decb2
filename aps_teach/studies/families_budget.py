"""The task-family study's budget axis: the same arms pretrained at several budgets on one level, each budget
a task-family study of its own (`task_families.run_family_study`) in OUT/pretrain_<N>/, compared on the seeds
every budget has.

    axis = run_budget_axis("runs/axis", "deep", (256_000, 1_000_000), 5, FamilyBudget())

    OUT/pretrain_<N>/     the study at N pretraining env steps (resumable; earlier commands' budgets too)
    OUT/budget_axis.csv   per budget, arm and phase: the IQM over seeds x the family's tasks, and the target's
    OUT/coverage.csv      per budget, level and arm: the pretraining's coverage and visitation entropy
    OUT/seed_verdicts.csv the registered metric read on each budget (`verdicts.seed_metric_verdicts`)

Studies run elsewhere at other budgets of the same level and per-task budgets join the axis (`also`: e.g.
results/task_families, whose pretraining is the 64k point).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aps_teach.grid.config import TrainConfig
from aps_teach.infra.stats import iqm_with_ci
from aps_teach.infra.sweeps import SweepReport, read_rows
from aps_teach.studies.task_families import (
    COLUMNS,
    RESULTS,
    FamilyBudget,
    check_family_plan,
    coverage_table,
    read_family_studies,
    run_family_study,
    study_budget,
    task_scores,
)
from aps_teach.studies.verdicts import write_seed_metric_verdicts, write_table

BUDGET_ARMS = ("visr", "apt", "aps", "aps, kNN feature", "aps, explore-conditioned")
"""The arms of the budget axis: those that pretrain (dqn does not; the random walk has no score)."""
BUDGET_PHASES = ("zero_shot", "finetuned")
"""The evaluations the budget axis compares: zero-shot (default identification) and fine-tuned (the
default protocol)."""
PER_TASK = ("identify_steps", "finetune_steps", "eval_episodes", "tasks")
"""The per-task budgets of a `FamilyBudget` and the tasks scored, equal along a budget axis (a record holds
`tasks` only when it is not "all")."""


def check_budget_axis(level: str, pretrain_steps: Sequence[int], also: Sequence[str | Path],
                      budget: FamilyBudget) -> None:
    """A budget axis's plan, before anything runs: distinct budgets, each a valid `FamilyBudget`; and each
    study of `also` readable (`study_budget`), named once, holding rows on `level`, at a pretraining budget
    neither run here nor another's, and at the same per-task budgets as `budget` (identification,
    fine-tuning, evaluation), so that the axis compares pretraining alone."""
    if not pretrain_steps or len(set(pretrain_steps)) < len(pretrain_steps):
        raise ValueError(f"--pretrain-steps must list distinct budgets, got {list(pretrain_steps)}")
    for steps in pretrain_steps:
        replace(budget, pretrain_steps=steps)  # its checks
    seen: dict[int, str] = {int(steps): "this command" for steps in pretrain_steps}
    named = [Path(directory).resolve() for directory in also]
    repeated = sorted({str(path) for path in named if named.count(path) > 1})
    if repeated:
        raise ValueError(f"--also names {repeated[0]} twice: each study once")
    for directory in also:
        recorded = study_budget(directory)
        steps = int(recorded["pretrain_steps"])
        if steps in seen:
            raise ValueError(f"--also {directory} is at {steps:,} pretraining steps, as {seen[steps]} is: "
                             "one study per budget on the axis")
        seen[steps] = str(directory)
        per_task = {name: getattr(budget, name) for name in PER_TASK}
        theirs = {name: recorded.get(name, "all" if name == "tasks" else None) for name in PER_TASK}
        clashing = {name: theirs[name] for name, value in per_task.items() if theirs[name] != value}
        if clashing:
            raise ValueError(f"--also {directory} ran at other per-task budgets ({clashing}) than this axis "
                             f"({per_task}): the axis compares pretraining budgets alone")
        levels = {row["level"] for row in read_rows(Path(directory) / RESULTS, COLUMNS)}
        if level not in levels:
            raise ValueError(f"--also {directory} has no rows on level {level} (its levels: "
                             f"{', '.join(sorted(levels)) or 'none'}): give a study of the axis's level")


def budget_studies(out_dir: str | Path) -> list[Path]:
    """The task-family studies of a budget axis in out_dir: every out_dir/pretrain_<N>/ holding one, by N
    (those of earlier commands too, so that the axis grows budget by budget)."""
    sweep = RESULTS.replace(".csv", ".sweep.json")
    found = [path.parent for path in Path(out_dir).glob(f"pretrain_*/{sweep}")
             if path.parent.name.removeprefix("pretrain_").isdigit()]
    return sorted(found, key=lambda path: int(path.name.removeprefix("pretrain_")))


def budget_axis(studies: dict[int, Sequence[dict]], level: str = "deep") -> list[dict]:
    """Per pretraining budget (`studies`: env steps -> that study's rows), arm of `BUDGET_ARMS` and phase of
    `BUDGET_PHASES`: the IQM normalised score over seeds x the family's tasks on `level` with its 95%
    stratified-bootstrap interval, and the same over seeds for the level's own target task alone (the single
    task of Figure 4), with the seeds each pools. Every budget pools the seeds that every study has on the
    level (a 10-seed study beside 5-seed ones gives seeds 0-4), so the budgets compare on the same seeds.
    Arms or phases a study lacks are left out; a study without rows on `level`, or studies sharing no seed
    there, are a ValueError naming them (the axis would be empty)."""
    seeds = [{row["seed"] for row in rows if row["level"] == level} for rows in studies.values()]
    for steps, rows, found in zip(studies, studies.values(), seeds, strict=True):
        if not found:
            levels = ", ".join(dict.fromkeys(row["level"] for row in rows)) or "none"
            raise ValueError(f"budget_axis: the study at {steps:,} pretraining steps has no rows on level "
                             f"{level!r} (its levels: {levels}); give the level the studies ran on")
    shared = set.intersection(*seeds) if seeds else set()
    if seeds and not shared:
        raise ValueError(f"budget_axis: the studies share no seed on level {level!r} (their seeds: "
                         + "; ".join(f"{steps:,}: {', '.join(map(str, sorted(found, key=int)))}"
                                     for steps, found in zip(studies, seeds, strict=True))
                         + "); the budgets are compared on the seeds every study has")
    out = []
    for steps, rows in sorted(studies.items()):
        rows = [row for row in rows if row["seed"] in shared]
        for arm in BUDGET_ARMS:
            for phase in BUDGET_PHASES:
                scores = task_scores(rows, arm, level, phase)
                if not scores:
                    continue
                for tasks, name in ((list(scores), "family"), (["target"], "target")):
                    per_task = [scores[task] for task in tasks if task in scores]
                    if not per_task:
                        continue
                    iqm, low, high = iqm_with_ci(per_task)
                    out.append({"pretrain_steps": steps, "arm": arm, "phase": phase, "tasks": name,
                                "iqm": iqm, "low": low, "high": high, "seeds": len(per_task[0])})
    return out


def write_budget_axis(path: str | Path, studies: dict[int, Sequence[dict]],
                      level: str = "deep") -> Path | None:
    """`budget_axis` of `studies` as a CSV at path (None while no arm of `BUDGET_ARMS` has a score)."""
    return write_table(Path(path), budget_axis(studies, level))


def write_coverage(path: str | Path, studies: dict[int, Sequence[dict]]) -> Path | None:
    """`coverage_table` of `studies` as a CSV at path (None while no run has pretrained)."""
    return write_table(Path(path), coverage_table(studies))


@dataclass
class BudgetAxis:
    """What `run_budget_axis` did and wrote."""

    reports: list[SweepReport]
    """Each budget's sweep, in the order run."""
    studies: dict[int, list[dict]]
    """Pretraining env steps -> the rows of each study on the axis (`axis_studies`)."""
    tables: dict[str, Path | None]
    """The axis's tables (`write_axis_tables`), by what they hold."""


def run_budget_axis(out_dir: str | Path, level: str, pretrain_steps: Sequence[int], num_seeds: int,
                    budget: FamilyBudget, *, arms: Sequence[str] = BUDGET_ARMS,
                    also: Sequence[str | Path] = (), workers: int | None = None, seeds_per_group: int = 10
                    ) -> BudgetAxis:
    """Each budget of `pretrain_steps` a task-family study of `arms` on `level` into out_dir/pretrain_<N>/
    (`budget`, its per-task budgets, at N pretraining steps; resumable), then the axis's tables from every
    study of out_dir and of `also`. The whole plan is checked once, before the first study starts: the axis
    (`check_budget_axis`) and each budget's study (`task_families.check_family_plan`)."""
    check_budget_axis(level, pretrain_steps, also, budget)
    train = TrainConfig(progress=False)
    for steps in pretrain_steps:
        check_family_plan([level], num_seeds, arms, replace(budget, pretrain_steps=steps), train)
    reports = [run_family_study([level], num_seeds, Path(out_dir) / f"pretrain_{steps}",
                                replace(budget, pretrain_steps=steps), arms=arms, train=train,
                                workers=workers, seeds_per_group=seeds_per_group, checked=True)
               for steps in pretrain_steps]
    studies = axis_studies(out_dir, also)
    return BudgetAxis(reports, studies, write_axis_tables(out_dir, level, studies))


def axis_studies(out_dir: str | Path, also: Sequence[str | Path] = ()) -> dict[int, list[dict]]:
    """Pretraining env steps -> the rows of each study of the axis: those of `also` and every
    out_dir/pretrain_<N>/ (`budget_studies`)."""
    return read_family_studies([*also, *budget_studies(out_dir)])


def write_axis_tables(out_dir: str | Path, level: str, studies: dict[int, Sequence[dict]]
                      ) -> dict[str, Path | None]:
    """OUT/coverage.csv (`coverage_table`), OUT/seed_verdicts.csv (the registered metric on `level` per
    budget) and OUT/budget_axis.csv (`budget_axis`) of `studies`; each None while it has no row."""
    out = Path(out_dir)
    on_level = {steps: [row for row in rows if row["level"] == level] for steps, rows in studies.items()}
    return {"coverage": write_coverage(out / "coverage.csv", studies),
            "seed verdicts": write_seed_metric_verdicts(out / "seed_verdicts.csv", on_level),
            "table": write_budget_axis(out / "budget_axis.csv", studies, level)}
