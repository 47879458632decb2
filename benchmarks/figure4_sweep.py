"""Wall time of the whole Figure 4 sweep against its target (30 min on 2 cores), runs alone against groups.

    python benchmarks/figure4_sweep.py [--seeds 10] [--workers 2] [--seeds-per-group 1 10] [--out DIR]

Runs what `aps-teach gridworld sweep --methods visr apt aps dqn --levels easy hard deep --seeds 10
--workers 2 --seeds-per-group G` runs (default budgets, one single-threaded task per worker process: a run,
or a seed group of up to G runs) once per G of `--seeds-per-group`, in that order, each into a fresh
temporary directory unless `--out` names an empty one (a results file already there would make the sweep
skip its runs). Prints each sweep's wall time and its ratio to 30 minutes, and the mean seconds per run of
each method; with two or more sweeps, the speed of each against the first and whether their results
(every row but its times) are identical.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from aps_teach.grid.experiments import Budget
from aps_teach.grid.sweep import run_figure4_sweep
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.config import METHODS

LEVELS = ("easy", "hard", "deep")
TARGET_SECONDS = 30 * 60


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def timed_sweep(out: Path, seeds: int, workers: int, seeds_per_group: int) -> tuple[float, list[dict]]:
    """Run the sweep into `out`; return its wall seconds and its result rows."""
    if (out / "figure4.csv").exists():
        raise SystemExit(f"{out / 'figure4.csv'} exists: its runs would be skipped, not timed; "
                         "give an empty --out")
    start = time.perf_counter()
    report = run_figure4_sweep(METHODS, LEVELS, seeds, out, Budget(), workers=workers,
                               seeds_per_group=seeds_per_group)
    wall = time.perf_counter() - start
    if report.failures:
        raise SystemExit(f"{len(report.failures)} runs failed: {', '.join(report.failures)}")
    return wall, read_rows(out / "figure4.csv")


def results(rows: list[dict]) -> list[dict]:
    """A sweep's rows without their times, in run order."""
    kept = [{k: v for k, v in row.items() if k not in ("run_seconds", "wall_seconds")} for row in rows]
    return sorted(kept, key=lambda row: (row["run_key"], int(row["finetune_steps"])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None,
                        help="an empty directory (default: a temporary one)")
    parser.add_argument("--seeds-per-group", type=int, nargs="+", default=[1, 10],
                        help="one sweep per value, in order (1: every run alone)")
    args = parser.parse_args()
    sweeps = {}
    for size in args.seeds_per_group:
        with tempfile.TemporaryDirectory() as tmp:
            out = args.out / f"group-{size}" if args.out else Path(tmp)
            wall, rows = timed_sweep(out, args.seeds, args.workers, size)
        sweeps[size] = wall, rows
        runs = [row for row in rows if row["phase"] == "finetuned"]
        seconds = [float(row["run_seconds"]) for row in runs]
        print(f"Figure 4 sweep, seed groups of up to {size}: {len(runs)} runs ({len(METHODS)} methods x "
              f"{len(LEVELS)} levels x {args.seeds} seeds) on {args.workers} workers: {minutes(wall)} wall, "
              f"{wall / TARGET_SECONDS:.3f} x the {TARGET_SECONDS // 60}-minute target", flush=True)
        per_method = " | ".join(
            f"{m} {statistics.mean(float(r['run_seconds']) for r in runs if r['method'] == m):.1f}"
            for m in METHODS)
        print(f"  mean seconds per run: {per_method} | all {statistics.mean(seconds):.1f} "
              f"(sum of runs / workers = {minutes(sum(seconds) / args.workers)})", flush=True)
    first, (base, base_rows) = next(iter(sweeps.items()))
    for size, (wall, rows) in list(sweeps.items())[1:]:
        same = "identical" if results(rows) == results(base_rows) else "DIFFERENT"
        print(f"seed groups of up to {size} against {first}: {base / wall:.2f}x the speed; results {same}")


if __name__ == "__main__":
    main()
