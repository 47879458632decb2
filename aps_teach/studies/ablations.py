"""Ablation sweeps as the course's notebooks 05, 05b and 05c run them: labelled variants of a
configuration, run (or resumed) over levels and seeds, each metric reported per variant with a verdict.

    variants = {"k=3": ("aps", agent_overrides(k=3)), "k=10": ("aps", agent_overrides(k=10))}
    rows = run_variants(probes.run_probe_rows, budget, "runs/k/probes.csv", variants, ["hard"], [0, 1, 2])
    found = show(rows, ["state_coverage"], list(variants))

A variant is (method, overrides): the overrides are `RunSpec.overrides`, dotted config fields such as
("agent.k", 3). `show` prints each metric per variant as a mean with its 95% bootstrap interval and the
count it resamples (`stats.summarise`): n runs, or, where rows share a cluster (a seed's transfer tasks), the
clusters beside the rows, "(2 seeds, 16 rows)"; and it compares every variant with the first: "separate from"
(the two intervals do not overlap), "overlaps", or "identical to" (mean and interval equal to the last digit:
the same runs by construction, or a knob that changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from aps_teach.infra.stats import Summary, summarise
from aps_teach.infra.sweeps import RunSpec, read_rows, run_sweep
from aps_teach.learner.config import AgentConfig

VERDICTS = ("separate from", "overlaps", "identical to")
"""The verdicts of `verdict`, in the order a tally lists them."""


def agent_overrides(**fields: Any) -> tuple[tuple[str, Any], ...]:
    """("agent.<field>", value) for each field whose value differs from `AgentConfig`'s default, so that a
    variant equal to the default has the default's run key and runs once for every sweep that needs it."""
    defaults = AgentConfig()
    for name in fields:
        if not hasattr(defaults, name):
            raise ValueError(f"AgentConfig has no field {name!r}")
    return tuple((f"agent.{name}", value) for name, value in fields.items()
                 if getattr(defaults, name) != value)


def run_variants(run: Callable[..., list[dict]], budget: Any, results: str | Path,
                 variants: Mapping[str, tuple[str, tuple]], levels: Sequence[str], seeds: Sequence[int],
                 executor: Executor | None = None) -> list[dict]:
    """Run (or resume) every {label: (method, overrides)} variant x level x seed with the module-level
    function `run(spec, budget=budget)` into the results CSV `results` (`run_sweep`, on `executor`); print
    how many runs ran now and how many were reused; return the rows of these runs, each with a "variant"
    column holding its label. Raises the first failed run's traceback."""
    specs = {RunSpec(method, level, seed, overrides): label for label, (method, overrides) in variants.items()
             for level in levels for seed in seeds}
    report = run_sweep(list(specs), partial(run, budget=budget), results, executor=executor)
    if report.failures:
        raise RuntimeError(next(iter(report.failures.values())))
    print(f"{len(report.completed)} runs done now, {len(report.skipped)} reused from {results}")
    labels = {spec.key: label for spec, label in specs.items()}
    return [{**row, "variant": labels[row["run_key"]]} for row in read_rows(results)
            if row["run_key"] in labels]


def verdict(variant: Summary, base: Summary) -> str:
    """How a variant's (mean, low, high, n) compares with the baseline's: "identical to" when mean and
    interval are equal, "separate from" when the intervals [low, high] do not overlap, else "overlaps"."""
    if variant[:3] == base[:3]:
        return "identical to"
    return "separate from" if variant[2] < base[1] or base[2] < variant[1] else "overlaps"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def show(rows: Sequence[Mapping], metrics: Sequence[str], order: Sequence[str], cluster: str | None = None
         ) -> list[tuple[str, str, str, str]]:
    """Print each metric's mean [95% CI] per variant label in `order` (NaN values left out) with the count the
    interval resamples, and its verdict against the first label (none where either has a single value to
    resample: no interval to compare). Rows that are not independent name their `cluster` column (a seed's
    transfer tasks: "seed"): the interval resamples whole clusters, and the count reads "(2 seeds, 16 rows)",
    not "(n=16)". Returns the verdicts given, as (metric, variant, baseline, verdict)."""
    found = []
    for metric in metrics:
        summary = summarise(rows, ("variant",), metric, drop_nan=True, cluster=cluster)
        # what the interval resamples per label: its rows, or the clusters they fall in
        resampled = {label: n for (label,), (*_, n) in summary.items()} if cluster is None else {
            label: len({str(row[cluster]) for row in rows if row["variant"] == label
                        and not np.isnan(float(row[metric]))}) for (label,) in summary}
        print(metric)
        base = summary.get((order[0],))
        for label in order:
            if (label,) not in summary:
                print(f"  {label:>22}: no finite value")
                continue
            m, lo, hi, n = summary[(label,)]
            count = f"n={n}" if cluster is None else \
                f"{_plural(resampled[label], cluster)}, {_plural(n, 'row')}"
            versus = ""
            if base is not None and label != order[0] and min(resampled[label], resampled[order[0]]) < 2:
                versus = f"   (one {cluster or 'run'}: no interval to compare)"
            elif base is not None and label != order[0]:
                said = verdict(summary[(label,)], base)
                found.append((metric, label, order[0], said))
                versus = f"   {said} {order[0]} ({m - base[0]:+.3f})"
            print(f"  {label:>22}: {m:7.3f} [{lo:7.3f}, {hi:7.3f}] ({count}){versus}")
    return found


def tally(verdicts: Mapping[str, Sequence[tuple[str, str, str, str]]], scope: str) -> list[str]:
    """Lines counting {exercise: `show`'s verdicts}: in all (in `scope`, e.g. "Exercises 1-2"), then per
    exercise the comparisons that separate."""
    given = [said for found in verdicts.values() for *_, said in found]
    counts = {name: given.count(name) for name in VERDICTS}
    lines = [f"{len(given)} comparisons in {scope}: {counts['separate from']} separate, "
             f"{counts['overlaps']} overlap, {counts['identical to']} identical to the last digit"]
    for exercise, found in verdicts.items():
        separated = [f"{label} vs {base} on {metric}" for metric, label, base, said in found
                     if said == "separate from"]
        lines.append(f"  Exercise {exercise}: {len(separated)} separate: {', '.join(separated) or '-'}")
    return lines


def by_seed(rows: Sequence[Mapping], label: str) -> dict[str, Mapping]:
    """{seed: row} of the variant `label`'s rows (one row per seed, as a probe's)."""
    return {row["seed"]: row for row in rows if row["variant"] == label}
