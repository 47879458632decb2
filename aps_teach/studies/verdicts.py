"""The registered metric and its verdicts, read on task-family results (`task_families`' rows), and their
text: what the held-out study registered (`docs/preregistration/held_out.md`), and what every study that reads
its metric shares (`held_out`, `families_budget`, the task-family study's seed verdicts, `zero_shot_fix`,
notebooks 04e and 07, the figures).

- the primary metric: per seed, the mean normalised score over the family's tasks fine-tuned under the
  default protocol (`PRIMARY_PHASE`); an arm's score is its mean over seeds (`seed_scores`);
- each comparison: the difference of two arms' scores with its 95% interval from a bootstrap that resamples
  each arm's seeds (`stats.difference_with_ci`: a seed's tasks share its pretraining, so seeds are the
  units), read as `compare` says: above, below, equivalent (the 90% interval within +-`MARGIN`) or no
  difference found;
- a contender beats both parents (`PARENTS`) when its difference from VISR's and from APT's each lies wholly
  above 0 (`decide`), and that verdict is robust when it holds with any one class of tasks left out
  (`leave_one_class_out`, classes: `gridworld.Task.task_class`).

Every reading can also be taken from Welch's t intervals of the same seeds (`interval="welch"`, not
registered): `welch_readings` sets each registered reading of a part beside it, and a reading the two
intervals disagree on is marginal. The tables the studies write hold floats to 4 decimals (`rounded`,
`write_table`). This module imports no study but the arms' names (`arms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

import gridworld
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.stats import difference_with_ci
from aps_teach.studies.arms import FAMILY_ARMS, arm_name

PRIMARY_PHASE = "finetuned"
"""The phase of the primary metric: fine-tuned under the default protocol, w from the 16k identification."""
PARENTS = ("visr", "apt")
"""APS's parents: the arms APS and its variants are judged against."""
CONTENDERS = ("aps", "aps, kNN feature", "aps, explore-conditioned")
"""The paper's APS and this repository's variants: the arms the task-family tables judge against the
parents."""
PRIMARY_VARIANTS = ("aps, explore-conditioned", "aps, kNN feature")
"""The variants the primary hypotheses are about (H1, H2), in the order the pre-registration numbers them."""
CONFIDENCE = 0.95
"""The intervals every verdict reads."""
MARGIN = 0.05
"""Equivalence margin, in normalised score: two arms are equivalent when the 90% interval of their
difference lies within +-MARGIN (two one-sided tests at 5%)."""
FEW_SEEDS = "needs at least two seeds of each arm"
"""The reading of a comparison, and the verdict of a decision, an arm of one seed leaves open: a single seed's
score has no spread to resample, so no interval and no verdict can be read from it."""
INTERVALS = ("bootstrap", "welch")
"""How a comparison's intervals are computed: 'bootstrap', the registered seed bootstrap
(`stats.difference_with_ci`), or 'welch', Welch's t interval of the same seeds' scores (unequal variances;
`scipy.stats.ttest_ind(equal_var=False)`), the reasonable other interval a marginal reading turns over
under."""
COMPARED = {"H4": ("aps, explore-conditioned", "aps, kNN feature, explore weight 0.5"), "H5": ("aps", "visr")}
"""The registered comparisons of one arm with another (x, y), by hypothesis."""


def seed_scores(rows: Sequence[dict], arm: str, phase: str = PRIMARY_PHASE,
                tasks: Sequence[str] | None = None) -> dict[int, float]:
    """seed -> the mean normalised score over its tasks (all the arm has, or those of `tasks`) in `phase`."""
    by_seed: dict[int, list[float]] = {}
    for row in rows:
        if row["phase"] == phase and (tasks is None or row["task"] in tasks) and \
                arm_name(row["method"], row["overrides"], FAMILY_ARMS) == arm:
            by_seed.setdefault(int(row["seed"]), []).append(float(row["normalised_score"]))
    return {seed: float(np.mean(scores)) for seed, scores in sorted(by_seed.items())}


def welch_interval(x: Sequence[float], y: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """(mean(x) - mean(y), low, high): Welch's t interval of the difference of two groups' means (each value
    one seed's score); where both groups are constant the interval collapses to the difference."""
    difference = float(np.mean(x)) - float(np.mean(y))
    if np.ptp(x) == 0 and np.ptp(y) == 0:  # no spread: scipy would warn and return NaN ends
        return difference, difference, difference
    found = scipy_stats.ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
    low, high = (float(end) if np.isfinite(end) else difference for end in (found.low, found.high))
    return difference, low, high


def compare(x: Sequence[float], y: Sequence[float], interval: str = "bootstrap") -> dict:
    """Arm x against arm y from their seeds' scores: the difference of means, its 95% interval (seeds
    resampled, `stats.difference_with_ci`; Welch's t interval with `interval="welch"`) and its 90% interval,
    and the reading: 'above' (the 95% interval wholly above 0), 'below' (wholly below), 'equivalent' (the
    90% interval within +-`MARGIN`) or 'no difference found'; with fewer than two seeds on either side, no
    interval (NaN) and the reading `FEW_SEEDS`."""
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; valid: {', '.join(INTERVALS)}")
    if min(len(x), len(y)) < 2:
        difference = float(np.mean(x)) - float(np.mean(y))
        return {"difference": difference, **dict.fromkeys(("low", "high", "low90", "high90"), float("nan")),
                "reading": FEW_SEEDS}
    of = difference_with_ci if interval == "bootstrap" else welch_interval
    difference, low, high = of(x, y, CONFIDENCE)
    _, low90, high90 = of(x, y, 0.90)
    reading = ("above" if low > 0 else "below" if high < 0 else
               "equivalent" if -MARGIN < low90 and high90 < MARGIN else "no difference found")
    return {"difference": difference, "low": low, "high": high, "low90": low90, "high90": high90,
            "reading": reading}


def decide(rows: Sequence[dict], contender: str, tasks: Sequence[str] | None = None,
           phase: str = PRIMARY_PHASE, interval: str = "bootstrap") -> tuple[str, dict[str, dict]]:
    """The registered decision for `contender` on one part's rows: 'beats both parents' when its difference
    from each parent (`compare`, with `interval`) is 'above', else 'beats visr only', 'beats apt only' or
    'beats neither' (`FEW_SEEDS` while an arm has one seed); and each comparison."""
    mine = list(seed_scores(rows, contender, phase, tasks).values())
    comparisons = {parent: compare(mine, list(seed_scores(rows, parent, phase, tasks).values()), interval)
                   for parent in PARENTS}
    if any(comparison["reading"] == FEW_SEEDS for comparison in comparisons.values()):
        return FEW_SEEDS, comparisons
    beaten = [parent for parent in PARENTS if comparisons[parent]["reading"] == "above"]
    verdict = {2: "beats both parents", 0: "beats neither"}.get(len(beaten), f"beats {''.join(beaten)} only")
    return verdict, comparisons


def task_classes(level: str, tasks: Sequence[str]) -> dict[str, list[str]]:
    """class -> the tasks of `tasks` in it (`gridworld.Task.task_class`), in the family's order."""
    family, classes = gridworld.task_family(level), {}
    for task in family:
        if task.name in tasks:
            classes.setdefault(task.task_class, []).append(task.name)
    return classes


def class_sizes_text(rows: Sequence[dict], level: str, phase: str = PRIMARY_PHASE) -> str:
    """'22 tasks in 7 classes: target 1, start room 3, ...': the classes `leave_one_class_out` leaves out of
    `rows` (one level's, scored in `phase`), each with its number of tasks, so a verdict resting on a class
    can be read against its size."""
    tasks = sorted({row["task"] for row in rows if row["phase"] == phase})
    classes = task_classes(level, tasks)
    return (f"{len(tasks)} tasks in {len(classes)} classes: "
            + ", ".join(f"{name} {len(members)}" for name, members in classes.items()))


def leave_one_class_out(rows: Sequence[dict], level: str, contender: str, phase: str = PRIMARY_PHASE,
                        interval: str = "bootstrap") -> dict[str, str]:
    """class -> `decide`'s verdict for `contender` with that class's tasks left out of every seed's mean."""
    tasks = sorted({row["task"] for row in rows if row["phase"] == phase})
    classes = task_classes(level, tasks)
    return {name: decide(rows, contender, [task for task in tasks if task not in members], phase, interval)[0]
            for name, members in classes.items()}


def contender_verdict(rows: Sequence[dict], level: str, contender: str, interval: str = "bootstrap"
                      ) -> dict | None:
    """`contender`'s registered decision on rows of one level (or with `interval="welch"`, the same decision
    read from Welch's intervals), each parent comparison, and the classes whose removal overturns a win
    (`leave_one_class_out`; empty: robust, or no win to overturn); None while it or a parent has no rows."""
    if not all(seed_scores(rows, arm) for arm in (contender, *PARENTS)):
        return None
    verdict, comparisons = decide(rows, contender, interval=interval)
    dropped = leave_one_class_out(rows, level, contender, interval=interval) \
        if verdict == "beats both parents" else {}
    overturned = [name for name, other in dropped.items() if other != verdict]
    return {"contender": contender, "verdict": verdict,
            "robust": "" if not dropped else ("yes" if not overturned else "no"),
            "overturned_by": "; ".join(overturned),
            **{f"{parent}_{key}": value for parent, comparison in comparisons.items()
               for key, value in comparison.items()}}


def part_verdicts(rows: Sequence[dict], level: str) -> list[dict]:
    """`contender_verdict` of each variant of `PRIMARY_VARIANTS` that has rows, on one part."""
    return [found for contender in PRIMARY_VARIANTS if (found := contender_verdict(rows, level, contender))]


def seed_metric_verdicts(studies: dict[int, Sequence[dict]]) -> list[dict]:
    """The registered metric read on task-family studies it was not registered for (exploratory: their
    levels and seeds had been looked at): per pretraining budget (`studies`: env steps -> a study's rows),
    level and contender of the paper's APS and `PRIMARY_VARIANTS`, its `contender_verdict` on every seed the
    study has, with the number of seeds."""
    out = []
    for steps, rows in sorted(studies.items()):
        for level in dict.fromkeys(row["level"] for row in rows):
            mine = [row for row in rows if row["level"] == level]
            for contender in ("aps", *PRIMARY_VARIANTS):
                if found := contender_verdict(mine, level, contender):
                    seeds = len(seed_scores(mine, contender))
                    out.append({"pretrain_steps": steps, "level": level, "seeds": seeds, **found})
    return out


def write_seed_metric_verdicts(path: str | Path, studies: dict[int, Sequence[dict]]) -> Path | None:
    """`seed_metric_verdicts` of `studies` as a CSV at path (None, nothing written, while none has a
    contender and both parents)."""
    return write_table(Path(path), seed_metric_verdicts(studies))


def pairwise(rows: Sequence[dict], x: str, y: str, phase: str = PRIMARY_PHASE,
             tasks: Sequence[str] | None = None, interval: str = "bootstrap") -> dict:
    """`compare` of arm x against arm y in `phase` on `tasks` (default: every task both have)."""
    mine, theirs = seed_scores(rows, x, phase, tasks), seed_scores(rows, y, phase, tasks)
    if not mine or not theirs:
        raise ValueError(f"no {phase} scores for {x!r} or {y!r} in these rows")
    return {"x": x, "y": y, "phase": phase, **compare(list(mine.values()), list(theirs.values()), interval)}


def welch_readings(rows: Sequence[dict], level: str, part: str = "") -> list[dict]:
    """Every registered reading of one part's rows (each contender's verdict and its robustness, H1-H3;
    the comparisons of `COMPARED`, H4 and H5) as registered, from the seed bootstrap, and from Welch's t
    interval of the same seeds: one row each, with both readings (`verdict_text`, or `compare`'s reading
    with its 90% interval) and 'marginal' "yes" where the two differ (a verdict, or its robustness, that
    turns over under a reasonable other interval), else "no"."""
    out = []
    for contender in PRIMARY_VARIANTS:
        registered = contender_verdict(rows, level, contender)
        if registered is None:
            continue
        welch = contender_verdict(rows, level, contender, interval="welch")
        marginal = (registered["verdict"], registered["robust"]) != (welch["verdict"], welch["robust"])
        out.append({"part": part, "reading": f"{contender} against both parents",
                    "registered": verdict_text(registered), "welch": verdict_text(welch),
                    "marginal": "yes" if marginal else "no"})
    arms = {arm_name(row["method"], row["overrides"], FAMILY_ARMS) for row in rows}
    for hypothesis, (x, y) in COMPARED.items():
        if x not in arms or y not in arms:
            continue
        found = {interval: pairwise(rows, x, y, interval=interval) for interval in INTERVALS}
        said = {interval: f"{row['reading']} (90% {_interval90(row)})" for interval, row in found.items()}
        turned = "yes" if found["bootstrap"]["reading"] != found["welch"]["reading"] else "no"
        out.append({"part": part, "reading": f"{hypothesis}, {x} against {y}",
                    "registered": said["bootstrap"], "welch": said["welch"], "marginal": turned})
    return out


def _interval90(row: dict) -> str:
    return f"[{float(row['low90']):+.3f}, {float(row['high90']):+.3f}]"


def rounded(rows: Sequence[dict]) -> list[dict]:
    """`rows` with every float rounded to 4 decimals, as the studies write their tables."""
    return [{key: round(value, 4) if isinstance(value, float) else value for key, value in row.items()}
            for row in rows]


def write_table(path: Path, rows: Sequence[dict]) -> Path | None:
    """`rows`, `rounded`, as a CSV at path; None, writing nothing, when there are no rows."""
    if not rows:
        return None
    write_csv_atomic(path, rounded(rows))
    return path


def interval_text(row: dict, prefix: str = "", digits: int = 3) -> str:
    """A comparison as '+d [+low, +high]', signed, from `row`'s `<prefix>difference`, `<prefix>low` and
    `<prefix>high` (floats, or the strings a results CSV reads back): `compare`'s dict with no prefix, a
    `part_verdicts` row with prefix 'visr_' or 'apt_'. A comparison without an interval (`FEW_SEEDS`) is its
    difference alone."""
    difference, low, high = (float(row[prefix + key]) for key in ("difference", "low", "high"))
    if np.isnan(low) or np.isnan(high):
        return f"{difference:+.{digits}f} (no interval)"
    return f"{difference:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def verdict_text(row: dict) -> str:
    """A `part_verdicts` row's verdict, with whether a win survives leaving out any one class."""
    robust = {"yes": ", robust to leaving out any one class", "no": f", not robust (overturned without: "
              f"{row['overturned_by']})", "": ""}[row["robust"]]
    return row["verdict"] + robust


