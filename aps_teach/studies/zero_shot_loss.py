"""What costs APS zero-shot success on the easy level: one experiment, each explanation one factor of it.

    report = run_zero_shot_loss_study(seeds=range(20, 30), out_dir="runs/zero_shot_loss")

The course offered three explanations (docs/preregistration/zero_shot_loss.md has the protocol and the
decision rule, fixed before the runs): psi's values hold the kNN term's return, which is near 0 at the
crowded target (notebook 04c); the running distance normaliser weighs that term up (04d); APS's own data
(05c: APS trained on VISR's data did better zero-shot than APS acting itself). Each is one factor here,
varied alone from one base arm, "aps, kNN feature", on the easy level at the default budget:

* values: the kNN reward as a successor feature of its own (`AgentConfig.knn_feature`) lets one pretrained
  psi act zero-shot with the kNN return in its values, Q = psi^T (w, 1), the values the paper's APS acts on
  (its psi^T w holds that return), or without it, Q = psi^T (w, 0) (`train.evaluate(explore=)`);
* normaliser: the same learner pretrained without the running distance normaliser;
* data: the same learner trained on VISR's data, never acting while it pretrains (`cross_training`).

Beside them, on the same seeds: the paper's APS with and without the normaliser, and VISR. Every run
pretrains, identifies the task by least squares on its own rollouts and is scored zero-shot (GPI, the
library's evaluation), once per setting of its values; there is no fine-tuning.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.train import evaluate, identify_task, pretrain
from aps_teach.infra.checks import check_seeds
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.stats import mean_with_ci
from aps_teach.infra.sweeps import RunSpec, SweepReport, read_rows, run_sweep
from aps_teach.studies.arms import arm_name
from aps_teach.studies.cross_training import ARROW, parse_pair, pretrain_on_data_of

LEVEL = "easy"
KNN_FEATURE = (("agent.knn_feature", True),)
NO_NORMALISER = (("agent.knn_normalise", False),)
ARMS: dict[str, tuple[str, tuple[tuple[str, object], ...]]] = {
    "aps": ("aps", ()),
    "aps, no normaliser": ("aps", NO_NORMALISER),
    "aps, kNN feature": ("aps", KNN_FEATURE),
    "aps, kNN feature, no normaliser": ("aps", KNN_FEATURE + NO_NORMALISER),
    f"visr{ARROW}aps, kNN feature": (f"visr{ARROW}aps", KNN_FEATURE),
    "visr": ("visr", ()),
}
"""Arm name -> (method, overrides of the default `TrainConfig`); 'visr->aps' is APS's learner trained on the
data VISR collects (`cross_training.pretrain_on_data_of`)."""
WITH_KNN, WITHOUT_KNN = "task + kNN return", "task"
"""A run's zero-shot values: psi^T (w, 1), the kNN reward's return included (the paper's APS, whose psi^T w
holds it, acts on these), or psi^T (w, 0), the task's alone (only a kNN-feature learner has both)."""
BASE = "aps, kNN feature"
NO_NORMALISER_ARM, VISR_DATA_ARM = "aps, kNN feature, no normaliser", f"visr{ARROW}aps, kNN feature"
EFFECTS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "values: without the kNN return": ((BASE, WITHOUT_KNN), (BASE, WITH_KNN)),
    "normaliser: without it": ((NO_NORMALISER_ARM, WITH_KNN), (BASE, WITH_KNN)),
    "data: VISR's": ((VISR_DATA_ARM, WITH_KNN), (BASE, WITH_KNN)),
    "normaliser: without it, values without the kNN return": ((NO_NORMALISER_ARM, WITHOUT_KNN),
                                                              (BASE, WITHOUT_KNN)),
    "data: VISR's, values without the kNN return": ((VISR_DATA_ARM, WITHOUT_KNN), (BASE, WITHOUT_KNN)),
    "stand-in: the paper's APS against the base with the kNN return": (("aps", WITH_KNN), (BASE, WITH_KNN)),
    "the paper's APS without the normaliser": (("aps, no normaliser", WITH_KNN), ("aps", WITH_KNN)),
    "VISR against the paper's APS": (("visr", WITHOUT_KNN), ("aps", WITH_KNN)),
}
"""Effect name -> ((arm, values), (arm, values)): the first's zero-shot success minus the second's, paired by
seed (the registered comparisons)."""
ONE_SEED = "needs at least two seeds"
"""An effect's verdict from one seed: a single paired difference has no spread to resample."""
FACTORS = {"values": "values: without the kNN return", "normaliser": "normaliser: without it",
           "data": "data: VISR's"}
"""The three explanations, each the effect that varies it alone from the base arm with the kNN return."""
THROUGH_VALUES = {"normaliser": "normaliser: without it, values without the kNN return",
                  "data": "data: VISR's, values without the kNN return"}
"""The same factor's effect where the values leave the kNN return out: gone, the factor acts through it."""
RESULTS = "zero_shot_loss.csv"
COLUMNS = {"run_key": "str", "method": tuple(dict.fromkeys(method for method, _ in ARMS.values())),
           "level": (LEVEL,), "seed": "count", "overrides": "str", "values": (WITH_KNN, WITHOUT_KNN),
           "success_rate": "rate", "state_coverage": "rate", "visitation_entropy": "rate"}
"""The columns of zero_shot_loss.csv its readers need, and their kinds (`sweeps.read_rows`): values, method
and level among the experiment's own."""


def loss_specs(seeds: Iterable[int]) -> list[RunSpec]:
    """Every arm x seed, in `ARMS` order."""
    seeds = check_seeds(seeds)
    return [RunSpec(method, LEVEL, seed, overrides) for method, overrides in ARMS.values() for seed in seeds]


def run_loss_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """One run: pretrain (on VISR's data for 'visr->aps'), identify the task on the learner's own rollouts,
    score it zero-shot once per values setting (both for a kNN-feature learner, else the one it has)."""
    check_run(spec.env, budget)
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    if ARROW in spec.method:
        _, learner, log = pretrain_on_data_of(*parse_pair(spec.method), spec.env, budget.pretrain_steps,
                                              spec.seed, config)
    else:
        learner, log = pretrain(spec.method, spec.env, budget.pretrain_steps, spec.seed, config)
    w = identify_task(learner, spec.env, budget.identify_steps, spec.seed, config)
    both = learner.config.sf_dim > learner.config.feature_dim
    settings = ((WITHOUT_KNN, False), (WITH_KNN, True)) if both else (
        ((WITH_KNN, False),) if learner.config.method == "aps" else ((WITHOUT_KNN, False),))
    rows = []
    for values, explore in settings:
        score = evaluate(learner, spec.env, w, budget.eval_episodes, spec.seed, config, explore=explore)
        rows.append({"method": spec.method, "level": spec.env, "seed": spec.seed,
                     "overrides": json.dumps(spec.overrides) if spec.overrides else "", "values": values,
                     "success_rate": score.success_rate, "return": score.mean_return,
                     "state_coverage": log.coverage["state_coverage"],
                     "visitation_entropy": log.coverage["visitation_entropy"],
                     "pretrain_steps": budget.pretrain_steps, "identify_steps": budget.identify_steps,
                     "eval_episodes": budget.eval_episodes})
    return rows


def check_loss_plan(budget: Budget, train: TrainConfig) -> None:
    """What each arm's run can be refused for (`experiments.check_run` of its pretraining, identification
    and evaluation, with the arm's settings: steps, memory, device, k), before any worker starts. The arm on
    VISR's data is checked as both of its learners."""
    for method, overrides in ARMS.values():
        config = with_overrides(train, overrides)
        for learner in parse_pair(method) if ARROW in method else (method,):
            check_run(LEVEL, replace(budget, finetune_steps=1), config, method=learner)


def run_zero_shot_loss_study(seeds: Iterable[int], out_dir: str | Path, budget: Budget = Budget(), *,
                             workers: int | None = None, progress: bool = True) -> SweepReport:
    """Every arm x seed into out_dir/zero_shot_loss.csv (resumable: finished runs are skipped; a file of
    another budget or configuration is refused), on `workers` local processes (default: one per core); the
    plan checked first (`check_loss_plan`)."""
    check_loss_plan(budget, TrainConfig(progress=False))
    return run_sweep(loss_specs(seeds), partial(run_loss_rows, budget=budget), Path(out_dir) / RESULTS,
                     config={"budget": budget, "train": TrainConfig(progress=False), "level": LEVEL},
                     workers=workers, progress=progress)


def successes(rows: Sequence[dict]) -> dict[tuple[str, str], dict[int, float]]:
    """(arm, values) -> {seed: zero-shot success}."""
    found: dict[tuple[str, str], dict[int, float]] = {}
    for row in rows:
        arm = arm_name(row["method"], row["overrides"], ARMS)
        found.setdefault((arm, row["values"]), {})[int(row["seed"])] = float(row["success_rate"])
    return found


@dataclass(frozen=True)
class Effect:
    """One registered comparison: the mean over seeds of (first - second), its 95% bootstrap interval over
    seeds, and the seeds it pairs."""

    name: str
    mean: float
    low: float
    high: float
    seeds: int

    @property
    def verdict(self) -> str:
        """'raises it' / 'lowers it' when the interval lies wholly above / below 0, else 'no effect shown';
        `ONE_SEED` with one seed (its interval is the mean itself: nothing to read)."""
        if self.seeds < 2:
            return ONE_SEED
        return "raises it" if self.low > 0 else "lowers it" if self.high < 0 else "no effect shown"


def effects(rows: Sequence[dict]) -> list[Effect]:
    """Every `EFFECTS` comparison present in `rows`, paired by the seeds both sides have (with one seed, no
    interval: low and high NaN)."""
    found, out = successes(rows), []
    for name, (first, second) in EFFECTS.items():
        if first not in found or second not in found:
            continue
        seeds = sorted(set(found[first]) & set(found[second]))
        if seeds:
            differences = [found[first][seed] - found[second][seed] for seed in seeds]
            mean, low, high = mean_with_ci(differences) if len(seeds) > 1 else \
                (differences[0], math.nan, math.nan)  # one seed: no interval
            out.append(Effect(name, mean, low, high, len(seeds)))
    return out


def through_values(factor: Effect, without_knn: Effect) -> bool:
    """Whether a factor that moves zero-shot success acts through the kNN return in psi's values: its effect
    where the values leave that return out has an interval containing 0 and at most half its mean."""
    return without_knn.low <= 0 <= without_knn.high and abs(without_knn.mean) <= abs(factor.mean) / 2


def explanation(rows: Sequence[dict]) -> list[str]:
    """The registered decision, one line per factor (`FACTORS`), then the course's explanation."""
    found = {effect.name: effect for effect in effects(rows)}
    lines, moving = [], []
    for factor, name in FACTORS.items():
        if name not in found:
            lines.append(f"{factor}: not measured")
            continue
        effect = found[name]
        if effect.verdict == ONE_SEED:
            lines.append(f"{factor}: {ONE_SEED} ({effect.mean:+.2f}, {effect.seeds} seed, no interval)")
            continue
        line = (f"{factor}: {effect.verdict} ({effect.mean:+.2f} [{effect.low:+.2f}, {effect.high:+.2f}], "
                f"{effect.seeds} seeds)")
        if effect.verdict != "no effect shown":
            moving.append(factor)
            if factor in THROUGH_VALUES and THROUGH_VALUES[factor] in found:
                inner = found[THROUGH_VALUES[factor]]
                route = "through" if through_values(effect, inner) else "not only through"
                line += (f"; {route} the kNN return in psi's values ({inner.mean:+.2f} [{inner.low:+.2f}, "
                         f"{inner.high:+.2f}] without it)")
        lines.append(line)
    through = [factor for factor in moving if factor != "values" and factor in THROUGH_VALUES
               and THROUGH_VALUES[factor] in found and through_values(found[FACTORS[factor]],
                                                                       found[THROUGH_VALUES[factor]])]
    if "values" in moving and set(moving) == {"values", *through}:
        acting = " and the ".join(through) + (" acts" if len(through) == 1 else " act")
        lines.append("explanation: psi's values hold the kNN term's return; "
                     + (f"the {acting} through it" if through else "nothing else moves it"))
    elif moving:
        lines.append(f"explanation: the factors that move it, each as found: {', '.join(moving)}")
    elif any(found[name].verdict == ONE_SEED for name in FACTORS.values() if name in found):
        lines.append(f"explanation: undecided, the comparisons {ONE_SEED}")
    else:
        lines.append("explanation: no factor moves it at this budget")
    return lines


def effects_table(rows: Sequence[dict]) -> str:
    """A markdown table of the registered comparisons: mean paired difference, 95% interval, verdict."""
    lines = ["| comparison | mean difference | 95% interval | seeds | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {e.name} | {e.mean:+.2f} | " + ("none" if e.seeds < 2 else f"[{e.low:+.2f}, {e.high:+.2f}]")
              + f" | {e.seeds} | {e.verdict} |" for e in effects(rows)]
    return "\n".join(lines)


def arms_table(rows: Sequence[dict]) -> str:
    """A markdown table of each arm's zero-shot success per values setting (mean over seeds [95% CI]) and
    its pretraining's visitation entropy (mean)."""
    found = successes(rows)
    lines = ["| arm | values | zero-shot success | visitation entropy |", "|---|---|---|---|"]
    for arm in ARMS:
        entropy = [float(row["visitation_entropy"]) for row in rows
                   if arm_name(row["method"], row["overrides"], ARMS) == arm]
        for values in (WITH_KNN, WITHOUT_KNN):
            if (arm, values) in found:
                mean, low, high = mean_with_ci(list(found[arm, values].values()))
                lines.append(f"| {arm} | {values} | {mean:.2f} [{low:.2f}, {high:.2f}] | "
                             f"{np.mean(entropy):.3f} |")
    return "\n".join(lines)


def run_zero_shot_loss(seeds: Iterable[int], out_dir: str | Path, budget: Budget = Budget(), *,
                       workers: int | None = None) -> tuple[SweepReport, list[str]]:
    """The experiment as the zero-shot-loss command runs it: `run_zero_shot_loss_study`, then the registered
    comparisons, OUT/effects.csv (`effects`, each with its verdict); its report, and the registered decision
    (`explanation`)."""
    report = run_zero_shot_loss_study(seeds, out_dir, budget, workers=workers)
    rows = read_rows(Path(out_dir) / RESULTS, COLUMNS)
    write_csv_atomic(Path(out_dir) / "effects.csv", [asdict(effect) | {"verdict": effect.verdict}
                                                     for effect in effects(rows)])
    return report, explanation(rows)
