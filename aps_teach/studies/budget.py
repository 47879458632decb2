"""The budget study that chose the defaults: what pretraining buys, per method and level.

    report = run_study(StudyGrid(), out_dir="scratch/study")     # or: aps-teach gridworld study --out DIR

For every method x level x pretraining budget x feature dimension d x seed, the full pipeline
(`experiments.run_gridworld`'s steps), recording
- zero-shot success with the task identified from each of `identify_steps` budgets (visr, aps; apt and
  dqn have no task to identify, so one zero-shot score);
- success against fine-tuning steps (`experiments.adapt_and_score`'s adaptation curve), the last point
  being the fine-tuned success; fine-tuning starts from the task identified with `identify_steps[-1]`;
- coverage of the pretraining, and phi's health: its spread over the level's cells and its dead units;
and for every visr/aps x maze x budget x d x seed, zero-shot transfer to `transfer_tasks` random box tasks
(`transfer.run_transfer`). dqn has no pretraining: its runs appear once per d, at pretraining budget 0.
Two arms at one budget and d vary the discount factor and the fine-tuning start epsilon. Every method gets
the same settings; only the swept fields vary. The two sweeps are resumable (`sweeps.run_sweep`):
OUT/study_levels.csv and OUT/study_transfer.csv, then OUT/summary.csv (`write_study_summary`); the
figures are drawn from these files (`study_plots.write_study_figures`, which `aps-teach gridworld study`
calls).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import (
    DEFAULT_EVAL_EPISODES,
    DEFAULT_FINETUNE_STEPS,
    DEFAULT_PRETRAIN_STEPS,
    Budget,
    adapt_and_score,
    check_run,
)
from aps_teach.grid.sweep import PHASES as FIGURE4_PHASES
from aps_teach.grid.train import evaluate, identify_task, new_learner, pretrain
from aps_teach.grid.transfer import (
    DEFAULT_TRANSFER_EPISODES,
    TRANSFER_COLUMNS,
    dead_units,
    feature_spread,
    run_transfer,
)
from aps_teach.infra.checks import check_int, check_num_seeds
from aps_teach.infra.executors import local_executor
from aps_teach.infra.files import read_json, write_csv_atomic, write_text_atomic
from aps_teach.infra.locks import owning
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.sweeps import (
    RunSpec,
    SweepReport,
    check_results,
    config_hash,
    default_sweep_config,
    read_rows,
    run_sweep,
)
from aps_teach.learner.config import METHODS, check_no_adaptation, pretrains


@dataclass(frozen=True)
class StudyGrid:
    """What the study sweeps and with how many seeds."""

    methods: tuple[str, ...] = ("visr", "apt", "aps", "dqn")
    levels: tuple[str, ...] = ("easy", "hard")
    mazes: tuple[str, ...] = ("open10", "fourroom")
    """Transfer (visr and aps only)."""
    pretrain_steps: tuple[int, ...] = (16_000, 64_000, 256_000)
    feature_dims: tuple[int, ...] = (5, 16)
    identify_steps: tuple[int, ...] = (1_600, 16_000, 160_000)
    """Zero-shot success is measured with each; fine-tuning starts from the last."""
    gammas: tuple[float, ...] = (0.95,)
    """Discount factors tried besides the default (`train.agent.gamma`), on the key levels, at
    `arm_pretrain_steps` and `arm_feature_dim` only."""
    finetune_epsilons: tuple[float, ...] = (0.05,)
    """Fine-tuning start epsilons tried besides the default (`train.finetune_epsilon_start`), likewise."""
    arm_pretrain_steps: int = DEFAULT_PRETRAIN_STEPS
    """The pretraining budget of the arms (and of the adaptation figure)."""
    arm_feature_dim: int = 16
    """d of the arms (and of the adaptation figure)."""
    seeds: int = 3
    finetune_steps: int = DEFAULT_FINETUNE_STEPS
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    transfer_tasks: int = 10
    transfer_episodes: int = DEFAULT_TRANSFER_EPISODES
    train: TrainConfig = field(default_factory=lambda: TrainConfig(progress=False))

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", check_num_seeds(self.seeds, "seeds"))
        if (not self.methods or not self.levels or not self.pretrain_steps or not self.feature_dims
                or not self.identify_steps):
            raise ValueError("a study needs methods, levels, pretraining budgets, feature dimensions, "
                             "identification budgets and at least one seed")

    def level_specs(self) -> list[RunSpec]:
        specs = []
        for method in self.methods:
            budgets = self.pretrain_steps if pretrains(method) else (0,)
            arms = [(steps, d, self.train.agent.gamma) for steps in budgets for d in self.feature_dims]
            arm = (self.arm_pretrain_steps if pretrains(method) else 0, self.arm_feature_dim)
            arms += [(*arm, g) for g in self.gammas]
            specs += [RunSpec(method, level, seed, _overrides(*arm)) for level in self.levels for arm in arms
                      for seed in range(self.seeds)]
            if pretrains(method):  # dqn starts fine-tuning untrained, from epsilon_start
                specs += [RunSpec(method, level, seed, (*_overrides(*arm, self.train.agent.gamma),
                                                        ("finetune_epsilon_start", eps)))
                          for level in self.levels for eps in self.finetune_epsilons
                          for seed in range(self.seeds)]
        return specs

    def check_plan(self) -> None:
        """What `gridworld run` checks (`experiments.check_run`: levels, methods, every phase's env steps,
        memory, device), for each distinct arm of both sweeps at the grid's largest budgets, before anything
        is written or started."""
        budget = Budget(finetune_steps=self.finetune_steps, identify_steps=max(self.identify_steps),
                        eval_episodes=max(self.eval_episodes, self.transfer_episodes))
        specs = (*self.level_specs(), *self.transfer_specs())
        arms = {(spec.method, spec.env, spec.overrides) for spec in specs}
        for method, env, overrides in sorted(arms, key=str):
            steps, config = _split(RunSpec(method, env, 0, overrides), self.train)
            check_no_adaptation(config.agent, "the budget study")
            check_run(env, replace(budget, pretrain_steps=max(steps, 1)), config, method=method)

    def transfer_specs(self) -> list[RunSpec]:
        return [RunSpec(method, maze, seed, _overrides(steps, d, self.train.agent.gamma))
                for method in self.methods if method in ("visr", "aps") for maze in self.mazes
                for steps in self.pretrain_steps for d in self.feature_dims for seed in range(self.seeds)]


def _overrides(pretrain_steps: int, feature_dim: int, gamma: float) -> tuple[tuple[str, object], ...]:
    return (("pretrain_steps", pretrain_steps), ("agent.feature_dim", feature_dim), ("agent.gamma", gamma))


def _split(spec: RunSpec, train: TrainConfig) -> tuple[int, TrainConfig]:
    overrides = dict(spec.overrides)
    steps = overrides.pop("pretrain_steps")
    return steps, with_overrides(train, overrides.items())


def level_rows(spec: RunSpec, grid: StudyGrid) -> list[dict]:
    """One study run on a key level as rows: a zero_shot row per identification budget, then the
    adaptation curve (phase adapting, then finetuned), each with the run's coverage and phi diagnostics."""
    pretrain_steps, config = _split(spec, grid.train)
    start = time.perf_counter()
    if not pretrains(spec.method):
        learner, log = new_learner("dqn", spec.env, spec.seed, config), None
    else:
        learner, log = pretrain(spec.method, spec.env, pretrain_steps, spec.seed, config)
    shared = {"method": spec.method, "level": spec.env, "seed": spec.seed, "pretrain_steps": pretrain_steps,
              "feature_dim": config.agent.feature_dim, "gamma": config.agent.gamma,
              "finetune_epsilon_start": config.finetune_epsilon_start, "phi_spread": math.nan,
              "dead_units": math.nan}
    if learner.phi is not None:
        layout = gridworld.resolve_level(spec.env)
        shared.update(phi_spread=feature_spread(learner, layout), dead_units=dead_units(learner, spec.env))
    rows = []
    if learner.config.task_conditioned:
        for steps in grid.identify_steps[:-1]:
            w = identify_task(learner, spec.env, steps, spec.seed, config)
            zero = evaluate(learner, spec.env, w, grid.eval_episodes, spec.seed, config)
            rows.append({"phase": "zero_shot", "identify_steps": steps, "finetune_steps": 0,
                         "success_rate": zero.success_rate, "return": zero.mean_return})
    budget = Budget(finetune_steps=grid.finetune_steps, identify_steps=grid.identify_steps[-1],
                    eval_episodes=grid.eval_episodes)  # pretraining (the spec's, 0 for dqn) is done above
    result = adapt_and_score(learner, spec.method, spec.env, budget, config, seed=spec.seed, pretrain_log=log,
                             start=start)
    last = len(result.adaptation) - 1
    for i, point in enumerate(result.adaptation):
        rows.append({"phase": "zero_shot" if i == 0 else "finetuned" if i == last else "adapting",
                     "identify_steps": grid.identify_steps[-1] if learner.config.task_conditioned else 0,
                     **point})
    coverage = {"state_coverage": result.state_coverage, "target_reached": result.target_reached,
                "wall_seconds": round(result.wall_seconds, 3), "config_hash": config_hash(grid.finetune_steps,
                                                                                          config)}
    return [{**shared, **row, **coverage} for row in rows]


def maze_rows(spec: RunSpec, grid: StudyGrid) -> list[dict]:
    """One study run on a maze: `run_transfer` of one seed, a row per task."""
    pretrain_steps, config = _split(spec, grid.train)
    report = run_transfer(spec.method, spec.env, seeds=[spec.seed], num_tasks=grid.transfer_tasks,
                          pretrain_steps=pretrain_steps, identify_steps=grid.identify_steps[-1],
                          eval_episodes=grid.transfer_episodes, config=config)
    swept = {"feature_dim": config.agent.feature_dim, "gamma": config.agent.gamma}
    return [{**row, **swept} for row in report.rows]


LEVEL_COLUMNS = {"run_key": "str", "method": METHODS, "level": tuple(gridworld.ENV_IDS), "seed": "count",
                 "pretrain_steps": "count", "feature_dim": "count", "gamma": "float", "phase": FIGURE4_PHASES,
                 "identify_steps": "count", "finetune_steps": "count", "success_rate": "rate"}
"""The columns of study_levels.csv its readers need (`sweeps.read_rows`)."""
STUDY_TRANSFER_COLUMNS = {"run_key": "str", **TRANSFER_COLUMNS, "feature_dim": "int", "gamma": "float",
                          "pretrain_steps": "int"}
"""The columns of study_transfer.csv its readers need."""


@dataclass
class StudyReport:
    levels: SweepReport
    transfer: SweepReport
    outputs: list[Path]
    """OUT/summary.csv (`write_study_summary`; the command line adds the figures,
    `study_plots.write_study_figures`)."""


def run_study(grid: StudyGrid, out_dir: str | Path, *, workers: int | None = None,
              progress: bool = True) -> StudyReport:
    """Both sweeps of `grid` into OUT (resumable), then OUT/summary.csv from everything in OUT; OUT is owned
    for the study (`locks.owning`: a second writer is refused)."""
    out = Path(out_dir)
    grid.check_plan()
    sweeps = [(grid.level_specs(), partial(level_rows, grid=grid), out / "study_levels.csv"),
              (grid.transfer_specs(), partial(maze_rows, grid=grid), out / "study_transfer.csv")]
    for _, run, results in sweeps:  # both refused or both run: study_grid.json describes both files
        check_results(results, default_sweep_config(run))
    check_int("workers", workers, default="one per core")
    with owning(out):
        write_text_atomic(out / "study_grid.json", json.dumps(asdict(grid), indent=2, default=str))
        executor = local_executor(workers)
        try:
            levels, transfer = (run_sweep(specs, run, results, executor=executor, progress=progress)
                                for specs, run, results in sweeps)
        finally:
            executor.shutdown(cancel_futures=True)
        return StudyReport(levels, transfer, write_study_summary(out))


def study_rows(out_dir: str | Path) -> tuple[list[dict], list[dict], dict]:
    """OUT/study_levels.csv's rows (arms included), OUT/study_transfer.csv's rows and the grid
    (OUT/study_grid.json, `StudyGrid` as a dict)."""
    out = Path(out_dir)
    grid = read_json(out / "study_grid.json", "the budget study's grid",
                     "give a directory `aps-teach gridworld study` wrote, or restore the file")
    return (read_rows(out / "study_levels.csv", LEVEL_COLUMNS),
            read_rows(out / "study_transfer.csv", STUDY_TRANSFER_COLUMNS), grid)


def write_study_summary(out_dir: str | Path) -> list[Path]:
    """OUT/summary.csv (`summary_table` of OUT's study CSVs, arms included), as a one-element list; empty
    while OUT holds no key-level row. The figures are `study_plots.write_study_figures`'."""
    levels, transfer, grid = study_rows(out_dir)
    if not levels:
        return []
    path = Path(out_dir) / "summary.csv"
    write_csv_atomic(path, summary_table(levels, transfer, grid["train"]["finetune_epsilon_start"]))
    return [path]


def is_main_grid(row: dict, train: dict) -> bool:
    """Whether a study row has the default gamma and fine-tuning epsilon (`train`: the grid's TrainConfig as
    a dict), i.e. is not one of the arms; rows written before the epsilon arm existed have it empty."""
    epsilon = float(row.get("finetune_epsilon_start") or train["finetune_epsilon_start"])
    return float(row["gamma"]) == train["agent"]["gamma"] and epsilon == train["finetune_epsilon_start"]


def summary_table(levels: Sequence[dict], transfer: Sequence[dict], default_epsilon: float = 0.05
                  ) -> list[dict]:
    """Per method x level (or maze) x d x pretraining budget x gamma x fine-tuning start epsilon: mean
    zero-shot success (the last identification budget), fine-tuned success, and transfer score, with 95%
    bootstrap intervals over seeds, and n the rows. A transfer score is the mean over tasks x seeds (n
    rows), its interval resampling whole seeds with their tasks (`stats.summarise`'s cluster, "seed").
    Rows without an epsilon had `default_epsilon`."""
    from aps_teach.infra.stats import summarise

    levels = [{**row, "finetune_epsilon_start": row.get("finetune_epsilon_start") or default_epsilon}
              for row in levels]
    transfer = [{**row, "finetune_epsilon_start": default_epsilon} for row in transfer]
    last_id = max((int(row["identify_steps"]) for row in levels), default=0)
    groups = {
        "zero-shot success": ([row for row in levels if row["phase"] == "zero_shot"
                               and int(row["identify_steps"]) in (0, last_id)], "level", "success_rate",
                              None),
        "fine-tuned success": ([row for row in levels if row["phase"] == "finetuned"], "level",
                               "success_rate", None),
        "transfer score": (list(transfer), "maze", "normalised_score", "seed"),
    }
    out = []
    for measure, (rows, place, value, cluster) in groups.items():
        by = ("method", place, "feature_dim", "pretrain_steps", "gamma", "finetune_epsilon_start")
        for key, (mean, low, high, n) in summarise(rows, by=by, value=value, cluster=cluster).items():
            out.append({"measure": measure, "method": key[0], "level": key[1], "feature_dim": int(key[2]),
                        "pretrain_steps": int(key[3]), "gamma": float(key[4]),
                        "finetune_epsilon_start": float(key[5]), "mean": mean, "low": low, "high": high,
                        "n": n})
    return out
