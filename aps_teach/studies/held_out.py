"""The pre-registered test of the task-family study's variants on levels and seeds no one had looked at.

The exploratory study (`aps_teach.studies.task_families`, easy, hard and deep, seeds 0-9) found APS's two
variants beating both parents over deep's family with pretraining budget; the variant conditioned on the
exploration weight was designed after seeing deep's data. This module runs the test that was fixed before any
run on the held-out levels (`gridworld.HELD_OUT`), in `docs/preregistration/held_out.md`: its protocol block
(JSON between `<!-- protocol -->` and `<!-- /protocol -->`) names the parts (a level and a pretraining budget
each), seeds, arms, budgets and fine-tuning protocols. The registered metric and its verdicts are those of
`aps_teach.studies.verdicts` (a contender beats both parents on a part when its seed-bootstrap difference
from VISR's and from APT's each lies wholly above 0, robustly when it holds with any one class of tasks left
out); this module reads them on each part (`write_part_tables`) and decides the hypotheses (`hypotheses`).
Read under Welch's intervals instead (`verdicts.welch_readings`), three readings of the committed parts turn
over: the explore-conditioned variant's robustness on detour-1m, H4 on detour-256k and H5 on detour-1m
(marginal).

A part's results are a task-family study in OUT/<part>/, resumable, its configuration record holding the
pre-registration's SHA-256: a run into results started under another text of the file is refused
(`check_unchanged`), as is a run without the file.

The zero-shot fix of the amendment (`docs/preregistration/held_out_fix.md`) is judged in
`aps_teach.studies.zero_shot_fix`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.infra.checks import MAX_SEED, MAX_SEEDS
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.locks import check_free
from aps_teach.infra.stats import iqm_with_ci
from aps_teach.infra.sweeps import SweepReport, read_rows
from aps_teach.studies.arms import FAMILY_ARMS, arm_name
from aps_teach.studies.protocol import Parts, check_digest, read_block
from aps_teach.studies.task_families import (
    COLUMNS,
    FINETUNE_PROTOCOLS,
    RESULTS,
    SOLVED,
    FamilyBudget,
    check_family_plan,
    run_family_study,
)
from aps_teach.studies.verdicts import (
    FEW_SEEDS,
    PRIMARY_PHASE,
    PRIMARY_VARIANTS,
    interval_text,
    pairwise,
    part_verdicts,
    rounded,
    seed_scores,
    verdict_text,
)

PREREGISTRATION = Path("docs/preregistration/held_out.md")
"""The pre-registration, relative to the repository's root (the commands' default)."""


@dataclass(frozen=True)
class Part:
    """One part of the study: every arm of `arms` pretrained on `level` for `pretrain_steps`, the seeds of
    the protocol."""

    name: str
    level: str
    pretrain_steps: int
    arms: tuple[str, ...]
    seeds: tuple[int, ...] = ()
    """The protocol's seeds (its results may hold no other; empty: not checked)."""

    @property
    def columns(self) -> dict:
        """The columns of the part's results its readers need (`task_families.COLUMNS`), the seed among the
        protocol's."""
        return {**COLUMNS, "seed": tuple(map(str, self.seeds))} if self.seeds else COLUMNS


@dataclass(frozen=True)
class Protocol(Parts):
    """What the pre-registration's protocol block fixes, and the file's digest."""

    path: Path
    sha256: str
    first_seed: int
    num_seeds: int
    budget: FamilyBudget
    """Every budget but pretrain_steps, which is each part's."""
    parts: tuple[Part, ...]
    primary_parts: tuple[str, ...]
    """The parts the primary hypotheses are decided on (a contender's win must hold on every one)."""

    def part_budget(self, part: Part) -> FamilyBudget:
        return FamilyBudget(**{**self.budget.__dict__, "pretrain_steps": part.pretrain_steps})


def read_protocol(path: str | Path = PREREGISTRATION) -> Protocol:
    """The protocol block of the pre-registration at `path`, checked; ValueError of one line naming the file
    when it is missing, has no block, or the block is not a valid protocol."""
    path = Path(path)
    found, sha256 = read_block(path, "the held-out study", "this study")
    try:
        block = json.loads(found, object_pairs_hook=_unique_keys)
        seeds = block["seeds"]
        budget = FamilyBudget(pretrain_steps=1, **block["budget"])
        parts = tuple(Part(name, spec["level"], int(spec["pretrain_steps"]), tuple(spec["arms"]))
                      for name, spec in block["parts"].items())
        primary = tuple(block["primary_parts"])
        if not set(primary) <= {part.name for part in parts} or not primary:
            raise ValueError(f"primary_parts {list(primary)} must name parts of the protocol")
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: its protocol block is not a valid protocol ({error})") from None
    seeds = _seed_range(path, seeds)
    parts = tuple(replace(part, seeds=seeds) for part in parts)
    for part in parts:
        unknown = [arm for arm in part.arms if arm not in FAMILY_ARMS]
        if part.level not in gridworld.TASK_FAMILIES or unknown or part.pretrain_steps < 1:
            raise ValueError(f"{path}: part {part.name!r} names level {part.level!r} or arms {unknown} that "
                             f"the study does not have; levels: {', '.join(gridworld.TASK_FAMILIES)}; arms: "
                             f"{', '.join(FAMILY_ARMS)}")
    return Protocol(path, sha256, seeds[0], len(seeds), budget, parts, primary)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict, refused when a key repeats (json keeps the last without a word: a part
    named twice would run once)."""
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"{repeated[0]!r} is named twice in one object; each part and field once")
    return dict(pairs)


def _seed_range(path: Path, seeds: object) -> tuple[int, ...]:
    """The protocol's `seeds` field, [first, last] (both included), as the seeds it registers; ValueError of
    one line naming the file and the field otherwise."""
    valid = (f"[first, last], integers with 0 <= first <= last <= {MAX_SEED} and at most {MAX_SEEDS:,} seeds "
             "(both ends included)")
    if not (isinstance(seeds, list) and len(seeds) == 2 and all(type(end) is int for end in seeds)):
        raise ValueError(f"{path}: its protocol block's \"seeds\" must be {valid}, got {json.dumps(seeds)}")
    first, last = seeds
    if not 0 <= first <= last <= MAX_SEED or last - first + 1 > MAX_SEEDS:
        raise ValueError(f"{path}: its protocol block's \"seeds\" must be {valid}, got {json.dumps(seeds)}")
    return tuple(range(first, last + 1))


def check_unchanged(protocol: Protocol, directory: str | Path) -> None:
    """ValueError of one line if the results in `directory` cannot be this protocol's: another process owns
    the directory (`locks.check_free`: what it is writing says nothing yet), they were started under no
    pre-registration (a task-family study's), or under another text of this one (their configuration record
    holds its SHA-256)."""
    check_free(directory)
    record = Path(directory) / RESULTS.replace(".csv", ".sweep.json")
    check_digest(record, protocol.path, protocol.sha256, directory,
                 unregistered=f"the results in {directory} were not started under a pre-registration "
                              f"({record.name} names none: a task-family study's, not the held-out study's); "
                              "give a fresh --out")


def run_part(protocol: Protocol, name: str, out_dir: str | Path, *, workers: int | None = None,
             executor: Executor | None = None, progress: bool = True, seeds_per_group: int = 5,
             train=None, checked: bool = False) -> SweepReport:
    """Part `name` of the protocol as a task-family study into out_dir/<name>/ (resumable), its record
    holding the pre-registration's SHA-256 (`check_unchanged` first, as the part starts). `checked`: its
    study's plan was checked already (`check_held_out_plan`)."""
    part = protocol.part(name)
    directory = Path(out_dir) / part.name
    check_unchanged(protocol, directory)
    return run_family_study([part.level], protocol.num_seeds, directory, protocol.part_budget(part),
                            arms=part.arms, train=train, workers=workers, executor=executor,
                            progress=progress, seeds_per_group=seeds_per_group,
                            first_seed=protocol.first_seed, record={"preregistration": protocol.sha256},
                            checked=checked)


def check_held_out_plan(protocol: Protocol, out_dir: str | Path, parts: Sequence[str] = ()) -> list[str]:
    """Everything the study can be refused for before its first part starts: `parts` (default: every part)
    named once each and in the protocol, the results of every part in out_dir started under this text
    (`check_unchanged`), and each chosen part's study (`task_families.check_family_plan`). Returns the parts
    to run, in order."""
    for name in parts:
        protocol.part(name)
    if len(set(parts)) < len(parts):
        raise ValueError(f"--parts names a part twice: {', '.join(parts)}; each part once")
    for part in protocol.parts:
        check_unchanged(protocol, Path(out_dir) / part.name)
    chosen = [protocol.part(name) for name in parts] or list(protocol.parts)
    for part in chosen:
        check_family_plan([part.level], protocol.num_seeds, part.arms, protocol.part_budget(part),
                          TrainConfig(progress=False), protocol.first_seed)
    return [part.name for part in chosen]


def arm_summary(rows: Sequence[dict], arm: str, phase: str) -> dict:
    """An arm's secondary numbers in a phase: the mean of its seeds' family means, the IQM over task x seed
    scores with its stratified-bootstrap interval, k/N, the (task, seed) pairs solved (score >= `SOLVED`),
    its pretraining's coverage and visitation entropy (mean over seeds), and for a fine-tuned phase of a
    w-conditioned arm the mean score of the pairs whose w was fitted on data that held the task's reward and
    of those whose data held none (`identification_split`). The random walk has its coverage alone (phase
    "random_walk")."""
    mine = [row for row in rows if arm_name(row["method"], row["overrides"], FAMILY_ARMS) == arm]
    coverage = {key: float(np.mean([float(row[key]) for row in {row["seed"]: row for row in mine}.values()]))
                if mine and mine[0][key] != "" else "" for key in ("state_coverage", "visitation_entropy")}
    if phase == "random_walk":
        return {"arm": arm, "phase": phase, **coverage} if any(row["phase"] == phase for row in mine) else {}
    per_task: dict[str, list[float]] = {}
    for row in mine:
        if row["phase"] == phase:
            per_task.setdefault(row["task"], []).append(float(row["normalised_score"]))
    if not per_task:
        return {}
    scores = list(seed_scores(mine, arm, phase).values())
    iqm, low, high = iqm_with_ci(list(per_task.values()))
    pairs = [score for task_scores in per_task.values() for score in task_scores]
    return {"arm": arm, "phase": phase, "mean": float(np.mean(scores)), "seeds": len(scores), "iqm": iqm,
            "iqm_low": low, "iqm_high": high, "solved": int(sum(score >= SOLVED for score in pairs)),
            "pairs": len(pairs), **coverage, **identification_split(mine, phase)}


def identification_split(rows: Sequence[dict], phase: str) -> dict:
    """For one arm's rows and a fine-tuned phase: the mean normalised score (and count) of the (task, seed)
    pairs whose w came from data holding the task's reward, and of those from data holding none (the
    `identified` column of the zero-shot phase the protocol takes w from); empty where the arm identifies
    nothing (apt, dqn) or the phase is not fine-tuned."""
    if phase not in FINETUNE_PROTOCOLS:
        return {}
    source = FINETUNE_PROTOCOLS[phase][2]
    seen = {(row["seed"], row["task"]): row.get("identified", "") for row in rows if row["phase"] == source}
    groups: dict[str, list[float]] = {"1": [], "0": []}
    for row in rows:
        if row["phase"] == phase and str(seen.get((row["seed"], row["task"]), "")) in groups:
            groups[str(seen[(row["seed"], row["task"])])].append(float(row["normalised_score"]))
    if not groups["1"] and not groups["0"]:
        return {}
    return {"mean_reward_seen": float(np.mean(groups["1"])) if groups["1"] else "",
            "pairs_reward_seen": len(groups["1"]),
            "mean_no_reward_seen": float(np.mean(groups["0"])) if groups["0"] else "",
            "pairs_no_reward_seen": len(groups["0"])}


SECONDARY_PAIRS = (
    ("aps", "visr", None),
    ("aps, explore-conditioned", "aps, kNN feature, explore weight 0.5", None),
    *((contender, "dqn", None) for contender in PRIMARY_VARIANTS),
    *((contender, "dqn, equal budget", "dqn, equal budget") for contender in PRIMARY_VARIANTS),
)
"""The registered secondary comparisons (x, y, the arm whose tasks they are judged on; None: all): APS
against VISR, the explore-conditioned variant against its ablation (the kNN-feature variant at its mean
exploration weight, unconditioned), each contender against DQN from scratch with the same fine-tuning budget,
and, on the one task per class it ran, against DQN given the whole budget."""


def write_part_tables(out_dir: str | Path, part: Part) -> list[Path]:
    """OUT/<part>/verdicts.csv (`part_verdicts`), OUT/<part>/summary.csv (`arm_summary` of every arm in every
    phase present) and OUT/<part>/pairs.csv (the secondary comparisons: APS against VISR, the
    explore-conditioned variant against its ablation, each contender against DQN from scratch and, on the
    tasks it ran, DQN with the whole budget); nothing while the part has no rows."""
    directory = Path(out_dir) / part.name
    rows = read_rows(directory / RESULTS, part.columns)
    if not rows:
        return []
    phases = [phase for phase in ("zero_shot", "zero_shot_relabelled", *FINETUNE_PROTOCOLS)
              if any(row["phase"] == phase for row in rows)]
    arms = [arm for arm in FAMILY_ARMS if arm in part.arms]
    summary = [found for phase in (*phases, "random_walk") for arm in arms
               if (found := arm_summary(rows, arm, phase))]
    pairs = []
    for x, y, subset_of in SECONDARY_PAIRS:
        if x in part.arms and y in part.arms:
            tasks = sorted({row["task"] for row in rows
                            if arm_name(row["method"], row["overrides"], FAMILY_ARMS) == subset_of}) \
                if subset_of else None
            pairs.append({**pairwise(rows, x, y, PRIMARY_PHASE, tasks),
                          "tasks": "all" if tasks is None else "; ".join(tasks)})
    tables = {"verdicts": part_verdicts(rows, part.level), "summary": summary, "pairs": pairs}
    paths = []
    for name, table in tables.items():
        write_csv_atomic(directory / f"{name}.csv", rounded(table))
        paths.append(directory / f"{name}.csv")
    return paths


def read_part(out_dir: str | Path, part: Part) -> list[dict]:
    """The rows of a part's results (empty before its first run), each of a seed of the protocol."""
    return read_rows(Path(out_dir) / part.name / RESULTS, part.columns)


def hypotheses(out_dir: str | Path, protocol: Protocol) -> list[dict]:
    """The pre-registration's hypotheses decided from the parts' results in out_dir, one row each:
    - H1, H2 (primary): the explore-conditioned / kNN-feature variant beats both parents, robustly to leaving
      out any one class, on every primary part: 'holds', 'holds on <parts> only', 'does not hold', or
      'pending' while a primary part lacks its arms;
    - H3: each contender's verdict on every other part (a larger budget);
    - H4: the explore-conditioned variant against its ablation, H5: APS against VISR, per part (`compare`'s
      reading)."""
    verdicts, rows_of = {}, {}
    for part in protocol.parts:
        rows_of[part.name] = read_part(out_dir, part)
        verdicts[part.name] = {row["contender"]: row for row in part_verdicts(rows_of[part.name], part.level)}
    out = []
    for number, contender in enumerate(PRIMARY_VARIANTS, 1):
        found = [verdicts[name].get(contender) for name in protocol.primary_parts]
        won = [name for name, row in zip(protocol.primary_parts, found, strict=True)
               if row and row["verdict"] == "beats both parents" and row["robust"] == "yes"]
        outcome = ("pending" if None in found else
                   FEW_SEEDS if any(row["verdict"] == FEW_SEEDS for row in found) else
                   "holds" if len(won) == len(found) else
                   f"holds on {', '.join(won)} only" if won else "does not hold")
        out.append({"hypothesis": f"H{number}", "about": f"{contender} beats both parents",
                    "parts": ", ".join(protocol.primary_parts), "outcome": outcome,
                    "details": "; ".join(f"{name}: {verdict_text(row)}" for name, row
                                         in zip(protocol.primary_parts, found, strict=True) if row)})
    for part in protocol.parts:
        if part.name in protocol.primary_parts:
            continue
        for contender in PRIMARY_VARIANTS:
            row = verdicts[part.name].get(contender)
            out.append({"hypothesis": "H3", "about": f"{contender} beats both parents", "parts": part.name,
                        "outcome": "pending" if row is None else verdict_text(row), "details": ""})
    for number, (x, y) in ((4, ("aps, explore-conditioned", "aps, kNN feature, explore weight 0.5")),
                           (5, ("aps", "visr"))):
        for part in protocol.parts:
            rows = rows_of[part.name]
            if x not in part.arms or y not in part.arms:
                continue
            try:
                found = pairwise(rows, x, y)
            except ValueError:
                found = None
            out.append({"hypothesis": f"H{number}", "about": f"{x} against {y}", "parts": part.name,
                        "outcome": "pending" if found is None else found["reading"],
                        "details": "" if found is None else interval_text(found, digits=2)})
    return out


def run_held_out(protocol: Protocol, out_dir: str | Path, parts: Sequence[str] = (), *,
                 workers: int | None = None, seeds_per_group: int = 5) -> list[SweepReport]:
    """The study as the held-out command runs it: the whole plan checked (`check_held_out_plan`), then each
    of `parts` (default: every part, in the registered order) run (`run_part`) and its tables written
    (`write_part_tables`), then the hypotheses, OUT/hypotheses.csv; each part's report."""
    reports = []
    for name in check_held_out_plan(protocol, out_dir, parts):
        reports.append(run_part(protocol, name, out_dir, workers=workers, seeds_per_group=seeds_per_group,
                                checked=True))
        write_part_tables(out_dir, protocol.part(name))
    write_csv_atomic(Path(out_dir) / "hypotheses.csv", hypotheses(out_dir, protocol))
    return reports
