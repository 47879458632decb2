"""One pretraining, many tasks: each method pretrained once per seed on a key level, then scored on every task
of the level's family (`gridworld.task_family`), zero-shot and after a short fine-tuning, each score
normalised by the task's exact references (0 the uniformly random policy, 1 the optimum).

    rows = run_family_rows(RunSpec("aps", "deep", 0), FamilyBudget(pretrain_steps=64_000))

Per run (an arm of `FAMILY_ARMS`, a level, a seed):
- pretraining, reward-free, once (not dqn; `train.pretrain` at the default protocol), with its coverage and
  visitation entropy; the random arm is a uniformly random walk under the same protocol (coverage only);
- for every task of the family (its env: `LevelSpec(level, task=task)`, the level's own boards):
  - identification (visr, aps): w from `budget.identify_steps` of the pretrained skills under random w on
    the task (`train.task_data`, the default), and, labelled `relabelled`, w from the pretraining replay
    relabelled by the task's reward (every stored move (s, a) paid what the task pays for it): the data
    a method explored, at no extra env step. Data holding no reward identify nothing: the agent then acts
    on a w drawn uniformly on the sphere from the task's seed, as it would have to, and the row says so
    (`identified` 0); dropping it would flatter the method;
  - zero-shot: `train.evaluate`, greedy, with GPI for visr and aps under each identified w; apt acts with its
    pretrained policy (its fixed task); dqn has none;
  - fine-tuning: a copy of the pretrained learner (dqn: a fresh one) fine-tuned for `budget.finetune_steps`
    on the task's reward with the default identification's w (`train.finetune`), then evaluated, under each
    protocol of `FINETUNE_PROTOCOLS` in `budget.protocols`: one protocol for every method, epsilon from
    0.3 (the default, phase `finetuned`) and from 1.0 (`finetuned_epsilon_1`), and, for apt and aps, a
    labelled option, fine-tuning that keeps exploring (`finetuned_exploring`: the pretraining's exploration
    reward stays in the reward at its pretraining weight, decaying to 0 over the budget); for visr and aps,
    the default protocol from the relabelled replay's w (`finetuned_relabelled`), which separates what
    fine-tuning learns from what the identification's data held.
Each row is one evaluation: the task's name, kind, room and keys needed, its references, the mean return
over `budget.eval_episodes` episodes and its normalised score (a Monte Carlo mean: it can leave [0, 1]), and
for a zero-shot row of a w-conditioned learner whether the data its w was fitted on held the task's reward
(`identified`; a fine-tuned row's w is that of the zero-shot phase its protocol names).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import torch

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.envs import LevelSpec
from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.train import (
    evaluate,
    finetune_seeds,
    new_learner,
    pretrain_seeds,
    random_walk,
    task_data,
)
from aps_teach.infra.checks import InputTypeError, check_int, check_num_seeds, check_seed, check_type
from aps_teach.infra.files import read_json
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.run_dir import say
from aps_teach.infra.seeds import task_seed
from aps_teach.infra.stats import improvement_with_ci, iqm_with_ci
from aps_teach.infra.sweeps import RunSpec, SweepReport, check_seed_group, config_hash, read_rows, run_sweep
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import check_no_adaptation, pretrains
from aps_teach.learner.tasks import TaskFit, fit_task
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.verdicts import CONTENDERS, PARENTS, write_seed_metric_verdicts, write_table

EXPLORATORY_ARMS = ("visr", "apt", "aps", "aps, kNN feature", "aps, explore-conditioned", "dqn", "random")
"""The arms of the exploratory study on easy, hard and deep (`results/task_families`), its default."""
FINETUNE_PROTOCOLS: dict[str, tuple[tuple[tuple[str, object], ...], bool, str]] = {
    "finetuned": ((), False, "zero_shot"),
    "finetuned_epsilon_1": ((("finetune_epsilon_start", 1.0),), False, "zero_shot"),
    "finetuned_exploring": ((), True, "zero_shot"),
    "finetuned_relabelled": ((), False, "zero_shot_relabelled"),
}
"""Evaluation phase after fine-tuning -> (overrides of the run's `TrainConfig`, whether the exploration
reward stays in the reward, the identification whose w a w-conditioned learner fine-tunes with, named by its
zero-shot phase): the default protocol (epsilon from `TrainConfig.finetune_epsilon_start`, 0.3), the same
from epsilon 1 (pretraining's start, as a learner from scratch explores), the default keeping the exploration
reward at the agent's `explore_weight`, decaying linearly to 0 (apt and aps only: `train.finetune`'s
`explore_weight`), and the default from the relabelled pretraining replay's w (visr and aps only)."""
DEFAULT_PROTOCOLS = ("finetuned", "finetuned_epsilon_1", "finetuned_exploring")
"""The protocols a `FamilyBudget` fine-tunes under by default (those of the exploratory study)."""
PHASES = ("zero_shot", "zero_shot_relabelled", *FINETUNE_PROTOCOLS)
"""A task's evaluations: zero-shot with the default identification, zero-shot with the relabelled
pretraining replay (visr, aps), and after fine-tuning under each protocol."""


@dataclass(frozen=True)
class FamilyBudget:
    """The budgets of a task-family run, the same for every arm."""

    pretrain_steps: int = 64_000
    """Reward-free env steps, once per run (rounded up to whole rounds of num_envs x 100)."""
    identify_steps: int = 16_000
    """Env steps of the pretrained skills under random w, per task (visr, aps)."""
    finetune_steps: int = 8_000
    """Env steps of fine-tuning on each task's reward."""
    eval_episodes: int = 32
    """Greedy episodes per evaluation."""
    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    """The fine-tuning protocols each task is fine-tuned under (`FINETUNE_PROTOCOLS`), each from a copy of
    the pretrained learner."""
    tasks: str = field(default="all", metadata={"omit_at_default": True})
    """The tasks of the family a run scores: all of them, or "one per class", the first task of each class
    (`gridworld.Task.task_class`) in the family's order (`class_representatives`)."""
    finetune_adds_pretraining: bool = field(default=False, metadata={"omit_at_default": True})
    """Fine-tune for pretrain_steps + finetune_steps env steps: a learner from scratch (dqn) given the whole
    budget of the arms that pretrain."""

    def __post_init__(self) -> None:
        for name in ("pretrain_steps", "identify_steps", "finetune_steps", "eval_episodes"):
            object.__setattr__(self, name, check_int(f"FamilyBudget.{name}", getattr(self, name), minimum=1))
        if isinstance(self.protocols, str):
            raise InputTypeError(f"FamilyBudget.protocols must be a list of protocol names, got "
                                 f"{self.protocols!r}")
        object.__setattr__(self, "protocols", tuple(self.protocols))
        unknown = [name for name in self.protocols if name not in FINETUNE_PROTOCOLS]
        if unknown or not self.protocols or len(set(self.protocols)) < len(self.protocols):
            raise ValueError("FamilyBudget.protocols must name one or more distinct protocols of "
                             f"{', '.join(FINETUNE_PROTOCOLS)}, got {list(self.protocols)}")
        if self.tasks not in TASK_SUBSETS:
            raise ValueError(f"FamilyBudget.tasks must be one of {', '.join(map(repr, TASK_SUBSETS))}, "
                             f"got {self.tasks!r}")
        if not isinstance(self.finetune_adds_pretraining, bool):
            raise ValueError("FamilyBudget.finetune_adds_pretraining must be True or False, "
                             f"got {self.finetune_adds_pretraining!r}")

    @property
    def scratch_steps(self) -> int:
        """The fine-tuning env steps of a run: finetune_steps, plus pretrain_steps when
        `finetune_adds_pretraining`."""
        return self.finetune_steps + (self.pretrain_steps if self.finetune_adds_pretraining else 0)


TASK_SUBSETS = ("all", "one per class")
"""The values of `FamilyBudget.tasks`."""


def protocol_applies(protocol: str, method: str) -> bool:
    """Whether a fine-tuning protocol of `FINETUNE_PROTOCOLS` fine-tunes an arm of `method`: keeping the
    exploration reward needs one (apt, aps), fine-tuning from the relabelled replay's w needs a w (visr, aps);
    the random walk fine-tunes nothing."""
    _, exploring, source = FINETUNE_PROTOCOLS[protocol]
    if method == "random" or (exploring and method not in ("apt", "aps")):
        return False
    return source == "zero_shot" or method in ("visr", "aps")


def check_family_plan(levels: Sequence[str], num_seeds: int, arms: Sequence[str], budget: FamilyBudget,
                      train: TrainConfig, first_seed: int = 0) -> None:
    """Everything a task-family study can be refused for, before any worker starts: the levels (one or more
    with a family), seeds (at most `MAX_SEEDS`), arms (distinct, known), that each fine-tuning protocol
    applies to a chosen arm (`protocol_applies`), the engine (compiled: the replay is relabelled by state
    index), and per arm and level what `gridworld run` checks (`experiments.check_run`: every phase's env
    steps, memory, device, k against the minibatch)."""
    if isinstance(levels, str) or not levels:
        raise ValueError(f"levels must list one or more of {', '.join(gridworld.TASK_FAMILIES)}, got "
                         f"{levels!r}")
    unknown = sorted(set(levels) - set(gridworld.TASK_FAMILIES))
    if unknown:
        raise ValueError(f"no task family for levels {unknown}; the levels with one: "
                         f"{', '.join(gridworld.TASK_FAMILIES)}")
    check_num_seeds(num_seeds)
    check_seed(first_seed, "first_seed")
    check_seed(first_seed + num_seeds - 1, "the last seed, first_seed + num_seeds - 1,")
    family_specs(levels, 1, arms)  # the arms' checks
    check_type("train", train, TrainConfig, "a TrainConfig (e.g. TrainConfig(progress=False))")
    if train.engine != "compiled":
        raise ValueError(f"the task-family study relabels its replay by state index: it needs the compiled "
                         f"engine, got engine {train.engine!r}")
    methods = [FAMILY_ARMS[arm][0] for arm in arms]
    idle = [protocol for protocol in budget.protocols
            if not any(protocol_applies(protocol, method) for method in methods)]
    reasons = [f"fine-tuning protocol {protocol!r} applies to none of the arms {', '.join(arms)}: "
               f"{PROTOCOL_NEEDS[protocol]}" for protocol in idle] if set(methods) != {"random"} else []
    if reasons and len(idle) == len(budget.protocols):  # a random walk alone fine-tunes nothing, rightly
        raise ValueError(reasons[0] + "; no arm would be fine-tuned")
    for arm in arms:
        method, overrides = FAMILY_ARMS[arm]
        arm_budget, config = split_overrides(overrides, budget, train)
        check_no_adaptation(config.agent, "the task-family study")
        steps = Budget(pretrain_steps=arm_budget.pretrain_steps, identify_steps=arm_budget.identify_steps,
                       finetune_steps=arm_budget.scratch_steps, eval_episodes=arm_budget.eval_episodes)
        for level in levels:
            if method == "random":
                check_run(level, steps, config, pretrain_only=True)
            else:
                check_run(level, steps, config, method=method)
    for reason in reasons:
        say(reason + "; skipped")


PROTOCOL_NEEDS = {
    "finetuned_exploring": "it keeps the exploration reward, which apt and aps have",
    "finetuned_relabelled": "it fine-tunes from a w fitted on the pretraining replay: visr and aps fit one",
}
"""Why a protocol applies to no arm, by protocol (`check_family_plan`)."""


def class_representatives(family: gridworld.TaskFamily) -> list[gridworld.Task]:
    """The first task of each class of `family` (`gridworld.Task.task_class`), in the family's order."""
    first: dict[str, gridworld.Task] = {}
    for task in family:
        first.setdefault(task.task_class, task)
    return list(first.values())


def scored_tasks(level: str, budget: FamilyBudget) -> list[gridworld.Task]:
    """The tasks of `level`'s family a run at `budget` scores (`FamilyBudget.tasks`)."""
    family = gridworld.task_family(level)
    return list(family) if budget.tasks == "all" else class_representatives(family)


def relabelled_data(learner: Learner, replay, level: str, task: gridworld.Task) -> tuple[torch.Tensor,
                                                                                          torch.Tensor]:
    """The pretraining replay as identification data for `task`: phi(s') of every stored move and the reward
    the task pays for it, `compile_level(level, task=task).reward[s, a]` (states stored as indices: the
    compiled engine)."""
    tables = gridworld.compile_level(level, task=task)
    size = replay.size
    states = replay.data["obs"][:size].reshape(-1)
    actions = replay.data["action"][:size].reshape(-1)
    following = replay.data["next_obs"][:size].reshape(-1)
    rewards = torch.as_tensor(tables.reward[states.numpy(), actions.numpy()], dtype=torch.float32)
    return learner.features(following), rewards


def evaluation_row(learner: Learner, env: LevelSpec, w: torch.Tensor | None, phase: str, about: dict,
                   budget: FamilyBudget, seed: int, config: TrainConfig, fit: TaskFit | None = None) -> dict:
    """One evaluation of `learner` on the task `env.task` under w: its mean return and normalised score,
    (`about`: the task's labels and references), and the identification's outcome when there was one."""
    result = evaluate(learner, env, w, budget.eval_episodes, seed, config)
    score = gridworld.normalised_score(result.mean_return, about["optimal_return"], about["random_return"])
    return {**about, "phase": phase, "return": result.mean_return, "normalised_score": score,
            "success_rate": result.success_rate, "identified": "" if fit is None else int(fit.identified),
            "r2": "" if fit is None else fit.r2}


def task_rows(method: str, pretrained: Sequence[Learner | None], replays: Sequence, task: gridworld.Task,
              seeds: Sequence[int], budget: FamilyBudget, config: TrainConfig,
              abouts: Sequence[dict]) -> list[list[dict]]:
    """Each run's evaluations on one task (module docstring), for runs of one arm that differ in their seed
    (one run: lists of one): zero-shot under each identification (visr, aps) or the pretrained policy
    (apt), and after fine-tuning a copy (dqn: a fresh learner), the runs' fine-tunings as one seed group
    (`train.finetune_seeds`)."""
    env = LevelSpec(task.level, task=task)
    rows = [[] for _ in seeds]
    ws: dict[str, list[torch.Tensor | None]] = {"zero_shot": [None] * len(seeds),
                                                 "zero_shot_relabelled": [None] * len(seeds)}
    conditioned = pretrained[0] is not None and pretrained[0].config.task_conditioned
    for i, (learner, replay, seed, about) in enumerate(zip(pretrained, replays, seeds, abouts, strict=True)):
        if conditioned:
            ridge = learner.config.identify_ridge
            fit = fit_task(*task_data(learner, env, budget.identify_steps, seed, config), seed=seed,
                           ridge=ridge)
            ws["zero_shot"][i] = fit.w
            rows[i].append(evaluation_row(learner, env, fit.w, "zero_shot", about, budget, seed, config, fit))
            relabelled = fit_task(*relabelled_data(learner, replay, task.level, task), seed=seed, ridge=ridge)
            ws["zero_shot_relabelled"][i] = relabelled.w
            rows[i].append(evaluation_row(learner, env, relabelled.w, "zero_shot_relabelled", about, budget,
                                          seed, config, relabelled))
        elif learner is not None:  # apt: its pretrained policy is its zero-shot policy
            rows[i].append(evaluation_row(learner, env, None, "zero_shot", about, budget, seed, config))
    for phase in budget.protocols:
        overrides, exploring, source = FINETUNE_PROTOCOLS[phase]
        if exploring and (pretrained[0] is None or not pretrained[0].config.uses_knn):
            continue  # no exploration reward to keep: visr, dqn
        if source != "zero_shot" and not conditioned:
            continue  # no identification to take w from: apt, dqn
        protocol = with_overrides(config, overrides)
        learners = [copy.deepcopy(learner) if learner is not None
                    else new_learner(method, env, seed, protocol)
                    for learner, seed in zip(pretrained, seeds, strict=True)]
        finetune_seeds(learners, env, ws[source], budget.scratch_steps, seeds, protocol,
                       explore_weight=config.agent.explore_weight if exploring else 0.0)
        for i, (learner, seed) in enumerate(zip(learners, seeds, strict=True)):
            rows[i].append(evaluation_row(learner, env, ws[source][i], phase, abouts[i], budget, seed,
                                          protocol))
    return rows


def split_overrides(overrides: Sequence[tuple[str, object]], budget: FamilyBudget,
                    train: TrainConfig) -> tuple[FamilyBudget, TrainConfig]:
    """An arm's overrides applied: those named "budget.<field>" to `budget`, the others to `train`."""
    ours = [(name.removeprefix("budget."), value) for name, value in overrides if name.startswith("budget.")]
    theirs = [(name, value) for name, value in overrides if not name.startswith("budget.")]
    return with_overrides(budget, ours), with_overrides(train, theirs)


def run_family_rows(spec: RunSpec, budget: FamilyBudget, train: TrainConfig | None = None) -> list[dict]:
    """One run of the task-family study as rows (module docstring); `spec.method` is an arm's method and
    `spec.overrides` its overrides of `train` (default: `TrainConfig()`, the library's defaults). Task t of
    the family is evaluated from seed `task_seed(seed, t)`."""
    return run_family_group_rows([spec], budget, train)[0]


def run_family_group_rows(specs: Sequence[RunSpec], budget: FamilyBudget,
                          train: TrainConfig | None = None) -> list[list[dict]]:
    """Runs of the study that differ only in their seed, as one seed group: pretraining and each task's
    fine-tunings update the seeds together (`train.pretrain_seeds`, `train.finetune_seeds`; one run alone
    is the reference path); each run's rows, which equal its own run's where the machine passes
    `benchmarks/seed_groups.py`, its wall_seconds the group's over its size."""
    start, first = time.perf_counter(), check_seed_group(specs)
    budget, config = split_overrides(first.overrides, budget, train or TrainConfig(progress=False))
    if config.engine != "compiled":
        raise ValueError(f"the task-family study relabels its replay by state index: it needs the compiled "
                         f"engine, got engine {config.engine!r}")
    level, method, seeds = first.env, first.method, [spec.seed for spec in specs]
    shared = [{"method": method, "level": level, "seed": seed,
               "overrides": json.dumps(first.overrides) if first.overrides else "",
               "config_hash": config_hash(budget, config)} for seed in seeds]
    if method == "random":
        rows = []
        for seed, about in zip(seeds, shared, strict=True):
            coverage = random_walk(level, budget.pretrain_steps, seed, config)
            rows.append([{**about, **COVERAGE_ONLY, "phase": "random_walk",
                          "state_coverage": coverage["state_coverage"],
                          "visitation_entropy": round(coverage["visitation_entropy"], 4)}])
        return _timed(rows, start)
    pretrained, replays = [None] * len(seeds), [None] * len(seeds)
    coverage = [{"state_coverage": "", "visitation_entropy": ""}] * len(seeds)
    if pretrains(method):
        kept: list[dict] = [{} for _ in seeds]
        hooks = [lambda end, keep=keep: keep.update(replay=end.replay) for keep in kept]
        trained = pretrain_seeds(method, level, budget.pretrain_steps, seeds, config, on_round=hooks)
        pretrained, replays = [learner for learner, _ in trained], [keep["replay"] for keep in kept]
        coverage = [{"state_coverage": log.coverage["state_coverage"],
                     "visitation_entropy": round(log.coverage["visitation_entropy"], 4)}
                    for _, log in trained]
    rows, scored = [[] for _ in seeds], scored_tasks(level, budget)
    for index, task in enumerate(gridworld.task_family(level)):
        if task not in scored:
            continue
        optimal, random = gridworld.task_references(level, task)
        abouts = [{**about, **cover, "task": task.name, "kind": task.kind, "room": task.room,
                   "keys_needed": task.keys_needed, "optimal_return": optimal, "random_return": random}
                  for about, cover in zip(shared, coverage, strict=True)]
        task_seeds = [task_seed(seed, index) for seed in seeds]
        each = task_rows(method, pretrained, replays, task, task_seeds, budget, config, abouts)
        for run_rows, new in zip(rows, each, strict=True):
            run_rows += new
    return _timed(rows, start)


def _timed(rows: list[list[dict]], start: float) -> list[list[dict]]:
    """Each run's rows with wall_seconds: the seconds since `start` over the number of runs."""
    wall = round((time.perf_counter() - start) / len(rows), 3)
    return [[{**row, "wall_seconds": wall} for row in run_rows] for run_rows in rows]


COVERAGE_ONLY = {"task": "", "kind": "", "room": "", "keys_needed": "", "normalised_score": ""}
"""A random walk's row has no task: its task columns are empty, so a study of that arm alone still has every
column its readers need."""
RESULTS = "task_families.csv"
COLUMNS = {"run_key": "str", "method": tuple(dict.fromkeys(method for method, _ in FAMILY_ARMS.values())),
           "level": tuple(gridworld.TASK_FAMILIES), "seed": "count", "overrides": "str",
           "phase": (*PHASES, "random_walk"), "task": "str", "kind": "str", "room": "str",
           "keys_needed": "float?",
           "normalised_score": "score?", "state_coverage": "rate?", "visitation_entropy": "rate?"}
"""The columns of task_families.csv its readers need, and their kinds (`sweeps.read_rows`): a method, level or
phase no reader knows is refused, not left out of every table."""
GROUPINGS = ("room", "keys_needed", "kind")
"""The task classes a family's scores are aggregated by."""
SOLVED = 0.5
"""A normalised score at least this counts as solved: a task's mean over seeds in the class tables
(`class_aggregates`), a (task, seed) pair's in the held-out study's summaries (`held_out.arm_summary`)."""


def family_specs(levels: Sequence[str], num_seeds: int, arms: Sequence[str] = EXPLORATORY_ARMS,
                 first_seed: int = 0) -> list[RunSpec]:
    """Every arm of `arms` (default: `EXPLORATORY_ARMS`) x level x seed first_seed..first_seed+num_seeds-1, in
    `FAMILY_ARMS` order."""
    unknown = [arm for arm in arms if arm not in FAMILY_ARMS]
    if unknown or not arms or len(set(arms)) < len(arms):
        raise ValueError(f"arms must name distinct arms of {', '.join(map(repr, FAMILY_ARMS))}; "
                         f"got {list(arms)}")
    return [RunSpec(method, level, seed, overrides) for arm, (method, overrides) in FAMILY_ARMS.items()
            if arm in arms for level in levels for seed in range(first_seed, first_seed + num_seeds)]


def run_family_study(levels: Sequence[str] = tuple(gridworld.LEVELS), num_seeds: int = 10,
                     out_dir: str | Path = "runs/task_families", budget: FamilyBudget = FamilyBudget(), *,
                     arms: Sequence[str] = EXPLORATORY_ARMS, train: TrainConfig | None = None,
                     workers: int | None = None, executor: Executor | None = None,
                     progress: bool = True, seeds_per_group: int = 10, first_seed: int = 0,
                     record: dict | None = None, checked: bool = False) -> SweepReport:
    """Every arm of `arms` x level x seed (first_seed, first_seed + 1, ...) into out_dir/task_families.csv
    (resumable: finished runs are skipped; a file of another budget or config is refused), on `workers` local
    processes (default: one per core) or `executor`, in seed groups of up to `seeds_per_group` seeds
    (`run_family_group_rows`; 1: each run alone). `train`: the settings every arm starts from (default: the
    library's); `record`: more entries of the configuration the results file is kept for (a resume with
    others is refused). The plan is checked first (`check_family_plan`), unless `checked`: a caller running
    several studies (a budget axis, the held-out parts) checks every study's plan before the first starts and
    hands it down checked."""
    train = train or TrainConfig(progress=False)
    if not checked:
        check_family_plan(levels, num_seeds, arms, budget, train, first_seed)
    specs = family_specs(levels, num_seeds, arms, first_seed)
    return run_sweep(specs, partial(run_family_rows, budget=budget, train=train),
                     Path(out_dir) / RESULTS, config={"budget": budget, "train": train, **(record or {})},
                     workers=workers,
                     executor=executor, progress=progress,
                     group=partial(run_family_group_rows, budget=budget, train=train),
                     group_size=seeds_per_group)


def task_scores(rows: Sequence[dict], arm: str, level: str, phase: str) -> dict[str, list[float]]:
    """task -> the normalised scores of its seeds, for one arm, level and phase."""
    scores: dict[str, list[float]] = {}
    for row in rows:
        if (row["level"], row["phase"]) == (level, phase) and arm_name(row["method"], row["overrides"],
                                                                         FAMILY_ARMS) == arm:
            scores.setdefault(row["task"], []).append(float(row["normalised_score"]))
    return scores


def class_aggregates(rows: Sequence[dict], level: str, by: str, phase: str) -> list[dict]:
    """Per arm and task class (the tasks sharing a value of `by`: room, keys needed or kind): the IQM of the
    normalised scores over seeds x tasks with its 95% stratified-bootstrap interval (`stats.iqm_with_ci`, each
    task's seeds resampled), how many of the class's tasks the arm solves (mean score >= `SOLVED`), and the
    runs pooled."""
    out = []
    for arm in FAMILY_ARMS:
        scores = task_scores(rows, arm, level, phase)
        classes: dict[str, list[str]] = {}
        for row in rows:
            if row["level"] == level and row["phase"] == phase and row["task"] in scores:
                classes.setdefault(str(row[by]), [])
                if row["task"] not in classes[str(row[by])]:
                    classes[str(row[by])].append(row["task"])
        for value, tasks in classes.items():
            per_task = [scores[task] for task in tasks]
            iqm, low, high = iqm_with_ci(per_task)
            solved = sum(np.mean(seed_scores) >= SOLVED for seed_scores in per_task)
            out.append({"arm": arm, by: value, "phase": phase, "iqm": iqm, "low": low, "high": high,
                        "solved": int(solved), "tasks": len(tasks), "runs": sum(len(s) for s in per_task)})
    return out


def improvement(rows: Sequence[dict], level: str, x: str, y: str, phase: str,
                tasks: Sequence[str] | None = None) -> tuple[float, float, float]:
    """P(arm x > arm y) on `level`'s tasks (all, or `tasks`) in `phase`, with its stratified-bootstrap
    interval (`stats.improvement_with_ci`: per task, x's seeds against y's)."""
    mine, theirs = task_scores(rows, x, level, phase), task_scores(rows, y, level, phase)
    shared = [task for task in (tasks if tasks is not None else mine) if task in mine and task in theirs]
    if not shared:
        raise ValueError(f"no task of {level} has {phase} scores for both {x!r} and {y!r}")
    return improvement_with_ci([mine[task] for task in shared], [theirs[task] for task in shared])


FLOOR = 0.05
"""A class is 'nothing to decide' when every contender's and parent's IQM interval lies within this of 0,
the uniformly random policy's score: all fail there alike; and a contender whose IQM is within it beats
nobody, whatever the intervals (scores of failing policies differ from 0 by Monte Carlo noise alone)."""


def class_verdicts(classes: Sequence[dict]) -> list[dict]:
    """Per contender (`CONTENDERS`) and task class of `class_aggregates`' rows (one level, grouping and
    phase): 'beats both' when its interval lies above both parents' (its low end above each parent's high
    end) and its IQM above the random policy's score (`FLOOR`), else 'beats visr', 'beats apt' or 'beats
    neither', and 'nothing to decide' when every contender and parent is at the random policy's score."""
    by = next(key for key in GROUPINGS if key in classes[0])
    stats = {(row["arm"], row[by]): row for row in classes}
    out = []
    for value in dict.fromkeys(row[by] for row in classes):
        judged = [stats[(arm, value)] for arm in (*CONTENDERS, *PARENTS) if (arm, value) in stats]
        at_floor = all(abs(row["low"]) <= FLOOR and abs(row["high"]) <= FLOOR for row in judged)
        for arm in CONTENDERS:
            if (arm, value) not in stats or not all((parent, value) in stats for parent in PARENTS):
                continue
            mine = stats[(arm, value)]
            beaten = [parent for parent in PARENTS
                      if mine["low"] > stats[(parent, value)]["high"] and mine["iqm"] > FLOOR]
            verdict = "nothing to decide" if at_floor else \
                {2: "beats both", 0: "beats neither"}.get(len(beaten), f"beats {''.join(beaten)}")
            out.append({"arm": arm, by: value, "phase": mine["phase"], "verdict": verdict,
                        "iqm": mine["iqm"], "low": mine["low"], "high": mine["high"],
                        **{f"{parent}_{end}": stats[(parent, value)][end] for parent in PARENTS
                           for end in ("iqm", "low", "high")}})
    return out


def family_tables(rows: Sequence[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """Every level's (class aggregates, verdicts, improvements) for each grouping of `GROUPINGS` and each
    phase of `PHASES` present: `class_aggregates`, `class_verdicts`, and P(contender > parent) over all the
    level's tasks (`improvement`)."""
    classes, verdicts, improvements = [], [], []
    levels = dict.fromkeys(row["level"] for row in rows if row["phase"] != "random_walk")
    for level in levels:
        phases = [phase for phase in PHASES if any(row["phase"] == phase and row["level"] == level
                                                   for row in rows)]
        for phase in phases:
            for by in GROUPINGS:
                found = class_aggregates(rows, level, by, phase)
                classes += [{"level": level, "grouping": by, "class": row.pop(by), **row}
                            for row in map(dict, found)]
                verdicts += [{"level": level, "grouping": by, "class": row.pop(by), **row}
                             for row in map(dict, class_verdicts(found))] if found else []
            for arm in CONTENDERS:
                for parent in PARENTS:
                    try:
                        p, low, high = improvement(rows, level, arm, parent, phase)
                    except ValueError:  # an arm without this phase (apt's relabelled zero-shot)
                        continue
                    improvements.append({"level": level, "phase": phase, "arm": arm, "than": parent,
                                         "probability": p, "low": low, "high": high})
    return classes, verdicts, improvements


def study_budget(out_dir: str | Path) -> dict:
    """The budget a task-family study in out_dir ran at, from its record (task_families.sweep.json): a
    ValueError of one line naming the file when it is missing, not JSON or holds no budget."""
    path = Path(out_dir) / RESULTS.replace(".csv", ".sweep.json")
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: give a directory written by the task-family study")
    record = read_json(path, "the record of a task-family study", "give a directory the study wrote, or "
                       "restore the file")
    try:
        budget = record["budget"]
        int(budget["pretrain_steps"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not the record of a task-family study (unreadable, or no budget's "
                         f"pretrain_steps: {type(error).__name__} {error}); give a directory the study "
                         "wrote, or restore the file") from None
    return budget


def study_pretrain_steps(out_dir: str | Path) -> int:
    """The pretraining budget a task-family study in out_dir ran at (`study_budget`)."""
    return int(study_budget(out_dir)["pretrain_steps"])


def read_family_studies(out_dirs: Sequence[str | Path]) -> dict[int, list[dict]]:
    """Pretraining env steps -> the rows of the task-family study in each of out_dirs (one study per
    budget: two at the same budget are refused)."""
    studies: dict[int, list[dict]] = {}
    for directory in out_dirs:
        steps = study_pretrain_steps(directory)
        if steps in studies:
            raise ValueError(f"two studies at {steps} pretraining steps among {list(map(str, out_dirs))}")
        studies[steps] = read_rows(Path(directory) / RESULTS, COLUMNS)
    return studies


def coverage_table(studies: dict[int, Sequence[dict]]) -> list[dict]:
    """Per pretraining budget (`studies`: env steps -> a study's rows), level and arm that pretrains or walks
    at random: the mean over its seeds of the pretraining's state coverage and visitation entropy."""
    out = []
    for steps, rows in sorted(studies.items()):
        runs: dict[tuple[str, str], dict[str, dict]] = {}
        for row in rows:
            if row["state_coverage"] != "":
                arm = arm_name(row["method"], row["overrides"], FAMILY_ARMS)
                runs.setdefault((row["level"], arm), {})[row["seed"]] = row
        for (level, arm), seeds in runs.items():
            out.append({"pretrain_steps": steps, "level": level, "arm": arm, "seeds": len(seeds),
                        **{key: float(np.mean([float(row[key]) for row in seeds.values()]))
                           for key in ("state_coverage", "visitation_entropy")}})
    return out


def write_family_tables(out_dir: str | Path) -> list[Path]:
    """OUT/coverage.csv (`coverage_table`), and OUT/classes.csv, OUT/verdicts.csv and OUT/improvement.csv,
    `family_tables` of OUT/task_families.csv; a table with no row is not written (a random walk alone has
    coverage only; verdicts and improvements need a contender and both parents)."""
    rows = read_rows(Path(out_dir) / RESULTS, COLUMNS)
    tables = {"coverage": coverage_table({study_pretrain_steps(out_dir): rows}) if rows else []}
    if any(row["phase"] != "random_walk" for row in rows):
        tables.update(zip(("classes", "verdicts", "improvement"), family_tables(rows), strict=True))
    written = [write_table(Path(out_dir) / f"{name}.csv", table) for name, table in tables.items()]
    return [path for path in written if path is not None]


def run_families(levels: Sequence[str], num_seeds: int, out_dir: str | Path,
                 budget: FamilyBudget = FamilyBudget(), *, arms: Sequence[str] = EXPLORATORY_ARMS,
                 workers: int | None = None, seeds_per_group: int = 10) -> tuple[SweepReport, list[Path]]:
    """The study as the families command runs it: `run_family_study`, then OUT/seed_verdicts.csv (the
    registered metric read on this study, `verdicts.write_seed_metric_verdicts`) and `write_family_tables`;
    its report, and the tables written (family tables first)."""
    report = run_family_study(levels, num_seeds, out_dir, budget, arms=arms, workers=workers,
                              seeds_per_group=seeds_per_group)
    seed_verdicts = write_seed_metric_verdicts(Path(out_dir) / "seed_verdicts.csv",
                                               read_family_studies([out_dir]))
    return report, [path for path in [*write_family_tables(out_dir), seed_verdicts] if path]
