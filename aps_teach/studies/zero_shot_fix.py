"""The zero-shot fix of the held-out study's amendment (`docs/preregistration/held_out_fix.md`), judged as
registered: a zero-shot diagnosis run under the fix (`aps_teach.studies.zero_shot`, its overrides after each
arm's) against the registered study's zero-shot phase (a task-family study's rows, `task_families`) on the
same level, seeds and tasks, each arm's family score compared as the registered metric compares
(`verdicts.compare`: x the fix, y the registered); per task class, the secondary numbers beside it.

    OUT/fix_verdicts.csv   per arm: the fix, seeds, both scores, the difference [95%], its reading
    OUT/fix_classes.csv    per arm and class: both zero-shot scores, R^2 and the exact planner's, with and
                           without the fix, and the link that caps zero-shot (`zero_shot.capping_links`)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.sweeps import read_rows
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.task_families import COLUMNS, RESULTS
from aps_teach.studies.verdicts import compare, rounded, seed_scores
from aps_teach.studies.zero_shot import capping_links, read_diagnosis, rows_by_arm

FIX_COLUMNS = {"arm": "str", "fix": "str", "seeds": "int", "fixed": "float", "registered": "float",
               "difference": "float", "low": "float", "high": "float", "reading": "str"}
"""The columns of fix_verdicts.csv its readers need (`sweeps.read_rows`)."""
FIX_CLASS_COLUMNS = {"arm": "str", "task_class": "str", "zero_shot_registered": "float",
                     "zero_shot_fixed": "float"}
"""The columns of fix_classes.csv its readers need."""


def _fix_rows(diagnosis_rows: Sequence[dict], study_rows: Sequence[dict]) -> tuple[dict, dict]:
    """{arm: (its fix, its diagnosis rows)} (`zero_shot.rows_by_arm`) and {arm: the study's zero-shot rows of
    the same seeds}, checked to be one level and to hold every seed the diagnosis ran."""
    fixed = rows_by_arm(diagnosis_rows)
    levels = {row["level"] for rows in (diagnosis_rows, study_rows) for row in rows}
    if len(levels) != 1:
        raise ValueError(f"a fix is judged on one level, the study's and the diagnosis's; got "
                         f"{sorted(levels)}")
    registered = {}
    for arm, (_, rows) in fixed.items():
        seeds = {int(row["seed"]) for row in rows}
        registered[arm] = [row for row in study_rows if row["phase"] == "zero_shot"
                           and int(row["seed"]) in seeds
                           and arm_name(row["method"], row["overrides"], FAMILY_ARMS) == arm]
        missing = seeds - {int(row["seed"]) for row in registered[arm]}
        if missing:
            raise ValueError(f"the study has no zero-shot rows of {arm} for seeds {sorted(missing)}: a fix "
                             "is judged against the same seeds")
        unscored = sorted({row["task"] for row in rows} - {row["task"] for row in registered[arm]})
        if unscored:
            named = ", ".join(unscored[:3]) + (", ..." if len(unscored) > 3 else "")
            raise ValueError(f"the study has no zero-shot rows of {arm} on {len(unscored)} of the tasks the "
                             f"diagnosis scored ({named}; a study of one task per class?): a fix is judged "
                             "on the same tasks")
    return fixed, registered


def fix_verdicts(diagnosis_rows: Sequence[dict], study_rows: Sequence[dict]) -> list[dict]:
    """The zero-shot fix judged as its amendment registers it (docs/preregistration/held_out_fix.md): per arm
    of a diagnosis run under the fix (`zero_shot.run_diagnosis` with its overrides), its zero-shot family
    score (per seed the mean of `zero_shot` over the level's tasks) against the same arm's zero-shot phase in
    the registered study on the same level and seeds, `compare`d: x the fix, y the registered."""
    fixed, registered = _fix_rows(diagnosis_rows, study_rows)
    out = []
    for arm in [arm for arm in FAMILY_ARMS if arm in fixed]:
        fix, rows = fixed[arm]
        by_seed: dict[int, list[float]] = {}
        for row in rows:
            by_seed.setdefault(int(row["seed"]), []).append(float(row["zero_shot"]))
        mine = [float(np.mean(scores)) for _, scores in sorted(by_seed.items())]
        theirs = list(seed_scores(registered[arm], arm, "zero_shot").values())
        out.append({"arm": arm, "fix": fix, "seeds": len(mine), "fixed": float(np.mean(mine)),
                    "registered": float(np.mean(theirs)), **compare(mine, theirs)})
    return out


def fix_by_class(diagnosis_rows: Sequence[dict], study_rows: Sequence[dict],
                 reference_rows: Sequence[dict] = ()) -> list[dict]:
    """The fix's secondary numbers per arm and task class: the mean zero-shot score over tasks x seeds under
    the fix and in the registered study (the same seeds); and the class's best-fit R^2 and exact planner's
    scores (`zero_shot.capping_links`) under the fix and, from `reference_rows` (a diagnosis without the fix,
    on its own seeds), without it."""
    fixed, registered = _fix_rows(diagnosis_rows, study_rows)
    classes = {row["task"]: row["task_class"] for row in diagnosis_rows}
    links = {(row["arm"], row["task_class"]): row for row in capping_links(diagnosis_rows)}
    before = {(row["arm"], row["task_class"]): row for row in capping_links(reference_rows)} \
        if reference_rows else {}
    measures = ("r2", "planner_best", "planner_identified")
    out = []
    for arm in [arm for arm in FAMILY_ARMS if arm in fixed]:
        for task_class in dict.fromkeys(row["task_class"] for row in fixed[arm][1]):
            then = [float(row["normalised_score"]) for row in registered[arm]
                    if classes[row["task"]] == task_class]
            now = links[(arm, task_class)]
            old = before.get((arm, task_class), {})
            out.append({"arm": arm, "task_class": task_class, "zero_shot_registered": float(np.mean(then)),
                        "zero_shot_fixed": now["zero_shot"],
                        **{f"{key}_{when}": row.get(key, "") for key in measures
                           for when, row in (("reference", old), ("fixed", now))},
                        "capping_link_reference": old.get("capping_link", ""),
                        "capping_link_fixed": now["capping_link"]})
    return out


def write_fix_tables(out_dir: str | Path, study_dir: str | Path, reference_dir: str | Path | None = None
                     ) -> tuple[Path, Path]:
    """OUT/fix_verdicts.csv (`fix_verdicts`) and OUT/fix_classes.csv (`fix_by_class`) of the diagnosis in
    out_dir under a fix, against the task-family study in study_dir (and a diagnosis without the fix in
    reference_dir)."""
    diagnosis = read_diagnosis(out_dir)
    study = read_rows(Path(study_dir) / RESULTS, COLUMNS)
    if not diagnosis or not study:
        raise ValueError(f"a fix is judged on a diagnosis and a study with rows; {out_dir} holds "
                         f"{len(diagnosis)}, {study_dir} {len(study)}")
    reference = read_diagnosis(reference_dir) if reference_dir is not None else ()
    paths = Path(out_dir) / "fix_verdicts.csv", Path(out_dir) / "fix_classes.csv"
    write_csv_atomic(paths[0], rounded(fix_verdicts(diagnosis, study)))
    write_csv_atomic(paths[1], rounded(fix_by_class(diagnosis, study, reference)))
    return paths
