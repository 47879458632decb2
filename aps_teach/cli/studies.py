"""`aps-teach gridworld {study,parts,families,families-budget,held-out,zero-shot,zero-shot-loss}`: the
studies behind the results tables (`aps_teach.studies`), each command's options a dataclass that tyro turns
into flags (field docstrings are the help), each handler the study called as from Python, its figure drawn
(`aps_teach.studies.plots`) and its outcome returned for `cli.gridworld` to print. A study writes a results
directory it owns while it runs; the same command continues it, and Ctrl-C says so (`common.stopped`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tyro.conf import OmitArgPrefixes

from aps_teach.cli.common import SeedGroupFlags, SeedGroups, stopped, sweep_outcome
from aps_teach.grid.config import Level, TrainConfig
from aps_teach.grid.experiments import (
    DEFAULT_EVAL_EPISODES,
    DEFAULT_IDENTIFY_STEPS,
    DEFAULT_PRETRAIN_STEPS,
    Budget,
)
from aps_teach.infra.checks import check_num_seeds, check_seeds
from aps_teach.infra.locks import owning
from aps_teach.infra.run_dir import check_out
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.config import AgentConfig
from aps_teach.studies.aps_parts import RESULTS as PARTS_RESULTS
from aps_teach.studies.aps_parts import run_parts_study
from aps_teach.studies.budget import StudyGrid, run_study
from aps_teach.studies.families_budget import BUDGET_ARMS, run_budget_axis
from aps_teach.studies.held_out import PREREGISTRATION, read_protocol, run_held_out
from aps_teach.studies.plots import (
    write_families_figure,
    write_family_budgets_figure,
    write_fix_figure,
    write_held_out_figure,
    write_parts_figure,
    write_study_figures,
    write_zero_shot_figure,
    write_zero_shot_loss_figure,
)
from aps_teach.studies.task_families import EXPLORATORY_ARMS, FamilyBudget, run_families
from aps_teach.studies.task_families import RESULTS as FAMILY_RESULTS
from aps_teach.studies.verdicts import interval_text
from aps_teach.studies.zero_shot import (
    ARMS_DIAGNOSED,
    EVAL_EPISODES,
    IDENTIFY_STEPS,
    check_diagnosis_plan,
    run_zero_shot,
)
from aps_teach.studies.zero_shot import RESULTS as DIAGNOSIS_RESULTS
from aps_teach.studies.zero_shot_fix import FIX_COLUMNS, write_fix_tables
from aps_teach.studies.zero_shot_loss import RESULTS as LOSS_RESULTS
from aps_teach.studies.zero_shot_loss import run_zero_shot_loss

BudgetArm = Literal["visr", "apt", "aps", "aps, kNN feature", "aps, explore-conditioned",
                    "aps, kNN feature, explore weight 0.5", "random"]
FamilyArm = Literal["visr", "apt", "aps", "aps, kNN feature", "aps, explore-conditioned",
                    "aps, kNN feature, explore weight 0.5", "dqn", "dqn, equal budget", "random"]


@dataclass
class Study:
    """The budget study behind the defaults: every method x level x pretraining budget x d x seed through the
    whole pipeline (zero-shot success per identification budget, success along fine-tuning), and zero-shot
    transfer on the mazes, into OUT/study_levels.csv and OUT/study_transfer.csv (resumable), then
    OUT/study_*.png (see aps_teach.studies.budget)."""

    out: Path
    """Results directory (give a fresh one; the committed study is results/study)."""
    grid: StudyGrid = field(default_factory=StudyGrid)
    workers: int | None = None
    """Parallel runs (default: one per core)."""

    def __post_init__(self) -> None:
        check_out(self.out)


def _study(cmd: Study) -> dict:
    with owning(cmd.out):  # the study's sweeps, summary and figures: one owner
        with stopped("study", cmd.out):
            report = run_study(cmd.grid, cmd.out, workers=cmd.workers)
        outputs = [*report.outputs, *write_study_figures(cmd.out)]
    failures = {**report.levels.failures, **report.transfer.failures}
    for key, trace in failures.items():
        print(f"run {key} failed: {trace.rstrip()}", file=sys.stderr)
    return {"completed": len(report.levels.completed) + len(report.transfer.completed),
            "skipped": len(report.levels.skipped) + len(report.transfer.skipped), "failed": len(failures),
            "results": cmd.out, "outputs": ", ".join(str(path) for path in outputs)}


@dataclass
class Parts:
    """The APS-parts study: APS with one part changed per arm (its own encoder, the kNN on phi before its
    normalisation, the exploration weight, the kNN reward as a feature of its own) beside VISR, APT, DQN and
    a random walk, every run through the whole pipeline at the same budget, into OUT/aps_parts.csv
    (resumable) and OUT/aps_parts.png (see aps_teach.studies.aps_parts)."""

    out: Path
    """Results directory (give a fresh one; the committed study is results/aps_parts)."""
    levels: tuple[Level, ...] = ("deep", "easy", "hard")
    seeds: int = 5
    """Number of seeds: 0 .. seeds-1."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""
    budget: OmitArgPrefixes[Budget] = field(default_factory=Budget)
    """Steps of each phase and evaluation episodes of every run (flags --pretrain-steps, ...; the committed
    study's: the defaults)."""

    def __post_init__(self) -> None:
        check_out(self.out)
        check_num_seeds(self.seeds, "--seeds")  # the plan: run_parts_study's, once


def _parts(cmd: Parts) -> dict:
    with stopped("study", cmd.out):
        report = run_parts_study(cmd.levels, cmd.seeds, cmd.out, cmd.budget, workers=cmd.workers)
    return {**sweep_outcome(report), "results": cmd.out / PARTS_RESULTS,
            "figure": write_parts_figure(cmd.out)}


@dataclass
class Families:
    """The task-family study: each arm (visr, apt, aps, aps with the kNN reward as a feature of its own, that
    variant conditioned on the exploration weight, dqn from scratch, a random walk for coverage) pretrained
    once per level and seed, then scored on every task of the level's family (gridworld.task_family)
    zero-shot, under two identifications, and after fine-tuning under each protocol, normalised by the
    task's exact references, into OUT/task_families.csv (resumable), its tables (OUT/classes.csv,
    verdicts.csv, improvement.csv; seed_verdicts.csv, the held-out test's registered reading) and
    OUT/task_families.png (see aps_teach.studies.task_families)."""

    out: Path
    """Results directory (give a fresh one; the committed study is results/task_families)."""
    levels: tuple[Level, ...] = ("easy", "hard", "deep")
    seeds: int = 10
    """Number of seeds: 0 .. seeds-1."""
    arms: tuple[FamilyArm, ...] = EXPLORATORY_ARMS
    """The arms to run (quote the variant's name: --arms visr apt aps 'aps, kNN feature')."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""
    groups: SeedGroupFlags = field(default_factory=SeedGroups)
    budget: OmitArgPrefixes[FamilyBudget] = field(default_factory=FamilyBudget)
    """Steps of each phase, evaluation episodes and fine-tuning protocols (flags --pretrain-steps, ...)."""

    def __post_init__(self) -> None:
        check_out(self.out)
        check_num_seeds(self.seeds, "--seeds")  # the plan: run_family_study's, once


def _families(cmd: Families) -> dict:
    with stopped("study", cmd.out):
        report, tables = run_families(cmd.levels, cmd.seeds, cmd.out, cmd.budget, arms=cmd.arms,
                                      workers=cmd.workers, seeds_per_group=cmd.groups.seeds_per_group)
    return {**sweep_outcome(report), "results": cmd.out / FAMILY_RESULTS,
            "tables": [path.name for path in tables], "figure": write_families_figure(cmd.out)}


@dataclass
class FamiliesBudget:
    """The task-family study's budget axis: VISR, APT, APS and its two variants (the kNN reward as a feature
    of its own; that, with psi conditioned on the exploration weight), pretrained at each budget of
    --pretrain-steps on one level, each budget a task-family study into OUT/pretrain_<N>/ (resumable; the
    default fine-tuning protocol only), then OUT/budget_axis.csv, OUT/seed_verdicts.csv (the held-out
    test's registered reading of each budget) and OUT/budget_axis.png from every OUT/pretrain_<N>/ (earlier
    commands' budgets too) and the studies named by --also (e.g. results/task_families, whose pretraining is
    the 64k point)."""

    out: Path
    """Results directory (give a fresh one; the committed axis is results/task_families_budget)."""
    pretrain_steps: tuple[int, ...] = (256_000, 1_000_000)
    """The pretraining budgets to run, in env steps."""
    level: Level = "deep"
    seeds: int = 5
    """Number of seeds: 0 .. seeds-1."""
    arms: tuple[BudgetArm, ...] = BUDGET_ARMS
    """The arms to run (default: every arm that pretrains; the random walk's coverage may join them)."""
    also: tuple[Path, ...] = ()
    """Task-family studies (directories) already run on the level at other budgets, drawn beside these."""
    identify_steps: int = FamilyBudget.identify_steps
    """Env steps of the pretrained skills under random w, per task (visr, aps)."""
    finetune_steps: int = FamilyBudget.finetune_steps
    """Env steps of fine-tuning on each task's reward."""
    eval_episodes: int = FamilyBudget.eval_episodes
    """Greedy episodes per evaluation."""
    tasks: Literal["all", "one per class"] = "all"
    """The tasks of the family each run scores: all, or the first of each class (as --tasks of families)."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""
    groups: SeedGroupFlags = field(default_factory=SeedGroups)

    def budget(self, steps: int) -> FamilyBudget:
        """The task-family budget of the axis's point at `steps` pretraining env steps."""
        return FamilyBudget(pretrain_steps=steps, identify_steps=self.identify_steps,
                            finetune_steps=self.finetune_steps, eval_episodes=self.eval_episodes,
                            protocols=("finetuned",), tasks=self.tasks)

    def __post_init__(self) -> None:
        check_out(self.out)
        check_num_seeds(self.seeds, "--seeds")  # the plan: run_budget_axis's, once, before the first budget


def _families_budget(cmd: FamiliesBudget) -> dict:
    with stopped("budget axis", cmd.out):
        axis = run_budget_axis(cmd.out, cmd.level, cmd.pretrain_steps, cmd.seeds, cmd.budget(1),
                               arms=cmd.arms, also=cmd.also, workers=cmd.workers,
                               seeds_per_group=cmd.groups.seeds_per_group)
    return {**sweep_outcome(axis.reports), "results": cmd.out, **axis.tables,
            "figure": write_family_budgets_figure(cmd.out / "budget_axis.png", axis.studies, cmd.level)}


@dataclass
class HeldOut:
    """The pre-registered test on held-out levels (docs/preregistration/held_out.md): each part its protocol
    block names (a level and a pretraining budget; seeds, arms, budgets and fine-tuning protocols as
    registered) as a task-family study into OUT/<part>/ (resumable), then each part's registered verdicts,
    summaries and comparisons (OUT/<part>/verdicts.csv, summary.csv, pairs.csv), the hypotheses
    (OUT/hypotheses.csv) and OUT/held_out.png (see aps_teach.studies.held_out). Refused when the
    pre-registration is missing, or is not the text a part's results were started under."""

    out: Path
    """Results directory (the committed study is results/held_out)."""
    parts: tuple[str, ...] = ()
    """The parts to run, by name (default: every part, in the registered order)."""
    preregistration: Path = PREREGISTRATION
    """The pre-registration whose protocol block is run."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""
    groups: SeedGroupFlags = field(default_factory=lambda: SeedGroups(5))

    def __post_init__(self) -> None:
        check_out(self.out)  # the plan: run_held_out's, once, before the first part starts


def _held_out(cmd: HeldOut) -> dict:
    protocol = read_protocol(cmd.preregistration)
    with stopped("held-out study", cmd.out):
        reports = run_held_out(protocol, cmd.out, cmd.parts, workers=cmd.workers,
                               seeds_per_group=cmd.groups.seeds_per_group)
    return {**sweep_outcome(reports), "results": cmd.out, "hypotheses": cmd.out / "hypotheses.csv",
            "figure": write_held_out_figure(cmd.out / "held_out.png", cmd.out, protocol)}


DiagnosedArm = Literal["visr", "aps", "aps, kNN feature", "aps, explore-conditioned"]


@dataclass
class ZeroShot:
    """Zero-shot over a level's task family, diagnosed link by link: each arm pretrained per seed, then for
    every task of the family its zero-shot score with and without GPI and under the best-case w, the R^2 of
    the task's reward on phi, an exact planner on the best-fit and on the identified reward, and psi's error
    against the exact successor features of its own policy, into OUT/zero_shot.csv (resumable) and the link
    that caps zero-shot per arm and task class, OUT/capping_links.csv, drawn in OUT/zero_shot.png (see
    aps_teach.studies.zero_shot)."""

    out: Path
    """Results directory (the committed diagnosis is results/zero_shot)."""
    level: Literal["easy", "hard", "deep", "detour", "fork"] = "deep"
    seeds: tuple[int, ...] = (0, 1, 2)
    """The seeds to run."""
    pretrain_steps: int = 256_000
    identify_steps: int = IDENTIFY_STEPS
    """Env steps of the pretrained skills under random w, per task (the task-family study's)."""
    eval_episodes: int = EVAL_EPISODES
    """Greedy episodes per evaluation (the task-family study's)."""
    arms: tuple[DiagnosedArm, ...] = ARMS_DIAGNOSED
    feature_dim: int | None = None
    """d of phi, psi and w for every arm (default: the library's, 16)."""
    identify_ridge: float | None = None
    """Identify each task's w by ridge regression of this strength lambda for every arm
    (`AgentConfig.identify_ridge`; default: least squares)."""
    adapt_psi: bool = False
    """Adapt psi offline to each task's identified w on the pretraining replay before scoring it, a copy per
    task (`AgentConfig.adapt_psi`)."""
    adapt_updates: int | None = None
    """With --adapt-psi: its TD updates per task (default: the library's, 400)."""
    adapt_n_step: int | None = None
    """With --adapt-psi: the length of its TD windows (default: the library's, 1)."""
    against: Path | None = None
    """A task-family study of the same level and seeds to judge a fix against (the amendment's:
    results/held_out/detour-256k): each arm's zero-shot family score here against its score there
    (zero_shot_fix.fix_verdicts) into OUT/fix_verdicts.csv, per task class into OUT/fix_classes.csv, drawn in
    OUT/fix.png."""
    reference: Path | None = None
    """With --against: a diagnosis of the level without the fix (e.g. results/zero_shot/detour), whose R^2 and
    planner scores per class stand beside the fix's in OUT/fix_classes.csv."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""

    def overrides(self) -> tuple[tuple[str, object], ...]:
        """What every arm runs with besides its own settings: the fix under test, --feature-dim and the
        psi-side options (--identify-ridge, --adapt-psi and its settings), those given."""
        given = {"feature_dim": self.feature_dim, "identify_ridge": self.identify_ridge,
                 "adapt_psi": self.adapt_psi or None, "adapt_updates": self.adapt_updates,
                 "adapt_n_step": self.adapt_n_step}
        return tuple((f"agent.{name}", value) for name, value in given.items() if value is not None)

    def __post_init__(self) -> None:
        check_out(self.out)
        for name in ("adapt_updates", "adapt_n_step"):
            if getattr(self, name) is not None and not self.adapt_psi:
                raise ValueError(f"--{name.replace('_', '-')} sets psi's offline adaptation: it goes with "
                                 "--adapt-psi")
        AgentConfig(**{name.split(".", 1)[1]: value for name, value in self.overrides()})
        self.seeds = tuple(check_diagnosis_plan(  # the whole plan, before any worker starts
            self.level, self.seeds, self.pretrain_steps, self.arms, self.overrides(),
            TrainConfig(progress=False), identify_steps=self.identify_steps, eval_episodes=self.eval_episodes,
            names={"seeds": "--seeds", "arms": "--arms", "pretrain_steps": "--pretrain-steps"}))
        if self.reference is not None and self.against is None:
            raise ValueError("--reference goes with --against (the study a fix is judged against)")
        for option, directory, results in (("--against", self.against, FAMILY_RESULTS),
                                           ("--reference", self.reference, DIAGNOSIS_RESULTS)):
            if directory is not None and not (directory / results).is_file():
                raise ValueError(f"{option} {directory} holds no {results}; give a results directory that "
                                 "does")


def _zero_shot(cmd: ZeroShot) -> dict:
    with stopped("diagnosis", cmd.out):
        report = run_zero_shot(cmd.level, cmd.seeds, cmd.out, cmd.pretrain_steps, arms=cmd.arms,
                               overrides=cmd.overrides(), workers=cmd.workers,
                               identify_steps=cmd.identify_steps, eval_episodes=cmd.eval_episodes)
    done = {**sweep_outcome(report), "results": cmd.out / DIAGNOSIS_RESULTS,
            "capping links": cmd.out / "capping_links.csv", "figure": write_zero_shot_figure(cmd.out)}
    if cmd.against is None:
        return done
    verdicts, by_class = write_fix_tables(cmd.out, cmd.against, cmd.reference)
    for row in read_rows(verdicts, FIX_COLUMNS):
        done[f"fix, {row['arm']}"] = f"{interval_text(row)}, {row['reading']}"
    return {**done, "fix verdicts": verdicts, "fix by class": by_class,
            "fix figure": write_fix_figure(cmd.out)}


@dataclass
class ZeroShotLoss:
    """What costs APS zero-shot success on the easy level (docs/preregistration/zero_shot_loss.md): each
    explanation the course gives one factor, varied alone from APS with the kNN reward as a feature of its
    own: the kNN return in psi's zero-shot values, the distance normaliser, APS's own data against VISR's;
    beside the paper's APS and VISR. Each arm x seed pretrained, its task identified and scored zero-shot,
    into OUT/zero_shot_loss.csv (resumable), then the registered comparisons (OUT/effects.csv), the figure
    (OUT/zero_shot_loss.png) and the decision (printed; see aps_teach.studies.zero_shot_loss)."""

    out: Path
    """Results directory (the committed experiment is results/zero_shot_loss)."""
    seeds: tuple[int, ...] = tuple(range(20, 30))
    """The seeds to run (the registered ones: 20-29)."""
    pretrain_steps: int = DEFAULT_PRETRAIN_STEPS
    """Reward-free env steps per run (the registered budget: the default)."""
    identify_steps: int = DEFAULT_IDENTIFY_STEPS
    """Env steps of task identification per run (the registered budget: the default)."""
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    """Zero-shot evaluation episodes per run and values setting (the registered budget: the default)."""
    workers: int | None = None
    """Parallel runs (default: one per core)."""

    def budget(self) -> Budget:
        """The budget every run gets (fine-tuning: none is made)."""
        return Budget(pretrain_steps=self.pretrain_steps, identify_steps=self.identify_steps,
                      eval_episodes=self.eval_episodes)

    def __post_init__(self) -> None:
        check_out(self.out)
        self.seeds = tuple(check_seeds(self.seeds, "--seeds"))  # the plan: run_zero_shot_loss_study's, once


def _zero_shot_loss(cmd: ZeroShotLoss) -> dict:
    with stopped("experiment", cmd.out):
        report, decision = run_zero_shot_loss(cmd.seeds, cmd.out, cmd.budget(), workers=cmd.workers)
    return {**sweep_outcome(report), "results": cmd.out / LOSS_RESULTS, "effects": cmd.out / "effects.csv",
            "figure": write_zero_shot_loss_figure(cmd.out), "decision": "; ".join(decision)}


COMMANDS = {"study": (Study, _study), "parts": (Parts, _parts), "families": (Families, _families),
            "families-budget": (FamiliesBudget, _families_budget), "held-out": (HeldOut, _held_out),
            "zero-shot": (ZeroShot, _zero_shot), "zero-shot-loss": (ZeroShotLoss, _zero_shot_loss)}
"""The study commands: name -> (options, handler returning the outcome to print)."""
