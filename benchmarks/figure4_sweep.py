"""Wall time of the whole Figure 4 sweep against its target: 30 minutes on 2 cores.

    python benchmarks/figure4_sweep.py [--seeds 10] [--workers 2] [--out DIR]

Runs what `aps-teach gridworld sweep --methods visr apt aps dqn --levels easy hard deep --seeds 10
--workers 2` runs (default budgets, one single-threaded run per worker process), into a fresh temporary
directory unless `--out` names an empty one (a results file already there would make the sweep skip its runs).
Prints the wall time and its ratio to 30 minutes, and the mean seconds per run of each method.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from aps_teach.grid.experiments import Budget, run_figure4_sweep
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.config import METHODS

LEVELS = ("easy", "hard", "deep")
TARGET_SECONDS = 30 * 60


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def timed_sweep(out: Path, seeds: int, workers: int) -> tuple[float, list[dict]]:
    """Run the sweep into `out`; return its wall seconds and the result rows (one per run)."""
    if (out / "figure4.csv").exists():
        raise SystemExit(f"{out / 'figure4.csv'} exists: its runs would be skipped, not timed; "
                         "give an empty --out")
    start = time.perf_counter()
    report = run_figure4_sweep(METHODS, LEVELS, seeds, out, Budget(), workers=workers)
    wall = time.perf_counter() - start
    if report.failures:
        raise SystemExit(f"{len(report.failures)} runs failed: {', '.join(report.failures)}")
    return wall, [row for row in read_rows(out / "figure4.csv") if row["phase"] == "finetuned"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None,
                        help="an empty directory (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wall, runs = timed_sweep(args.out or Path(tmp), args.seeds, args.workers)
    seconds = [float(row["run_seconds"]) for row in runs]
    print(f"Figure 4 sweep: {len(runs)} runs ({len(METHODS)} methods x {len(LEVELS)} levels x {args.seeds} "
          f"seeds) on {args.workers} workers: {minutes(wall)} wall, {wall / TARGET_SECONDS:.3f} x the "
          f"{TARGET_SECONDS // 60}-minute target")
    per_method = " | ".join(
        f"{m} {statistics.mean(float(r['run_seconds']) for r in runs if r['method'] == m):.1f}"
        for m in METHODS)
    print(f"mean seconds per run: {per_method} | all {statistics.mean(seconds):.1f} "
          f"(sum of runs / workers = {minutes(sum(seconds) / args.workers)})")


if __name__ == "__main__":
    main()
