"""The set-up notebooks 05 and 05b share: where their probe sweeps keep results, the worker processes that run
them, and `probe`, which runs (or resumes) a set of labelled variants as pretraining probes.

    sweep = probe_sweep("05_ablations", "hard", [0, 1, 2], probe_budget, workers=2, fast=False)
    rows = sweep.probe({"k=3": ("aps", agent_overrides(k=3)), "k=10": ("aps", agent_overrides(k=10))})
    sweep.executor.shutdown()
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from aps_teach.grid.experiments import DEFAULT_PRETRAIN_STEPS, Budget
from aps_teach.grid.train import TrainConfig
from aps_teach.infra.executors import local_executor
from aps_teach.infra.sweeps import config_hash
from aps_teach.studies import probes
from aps_teach.studies.ablations import run_variants


@dataclass(frozen=True)
class ProbeSweep:
    """A notebook's probe sweeps: the level, seeds and budget every probe runs with, what its results folder's
    name hashes (`budgets`), that folder, and the executor running the probes (shut it down at the end)."""

    level: str
    seeds: tuple[int, ...]
    budget: Budget
    budgets: dict[str, dict[str, int]]
    run_dir: Path
    executor: Executor

    def probe(self, variants: Mapping[str, tuple[str, tuple]]) -> list[dict]:
        """The pretraining probe (`probes.run_probe_rows`) of every {label: (method, overrides)} variant x
        seed on the level, run or resumed into run_dir/probes.csv (`ablations.run_variants`): their rows,
        each labelled in its "variant" column."""
        return run_variants(probes.run_probe_rows, self.budget, self.run_dir / "probes.csv", variants,
                            [self.level], list(self.seeds), self.executor)


def probe_sweep(notebook: str, level: str, seeds: Sequence[int], budget: Budget, workers: int, fast: bool
                ) -> ProbeSweep:
    """Set up `notebook`'s probe sweeps and print what they are: the results folder, in fast mode a fresh
    temporary one, else runs/<notebook>/<hash of the probe budget and TrainConfig's defaults> under the
    working folder (a re-run resumes; a changed budget or library default never mixes in stale rows); a
    local executor of `workers` processes; the probes' level, seeds and budget, and the share of the default
    pretraining budget they spend. Returns them as a `ProbeSweep`."""
    budgets = {"probe": probes.probe_budget(budget)}
    run_dir = Path(tempfile.mkdtemp()) if fast else \
        Path("runs") / notebook / config_hash(budgets, TrainConfig(progress=False))
    run_dir.mkdir(parents=True, exist_ok=True)
    executor = local_executor(workers)
    print(f"sweep results in {run_dir}, {workers} worker processes")
    print(f"probes: {level} level, seeds {list(seeds)}, {budgets['probe']}")
    print(f"the probes pretrain for {budget.pretrain_steps / DEFAULT_PRETRAIN_STEPS:.0%} of the default "
          f"budget's {DEFAULT_PRETRAIN_STEPS:,} pretraining steps")
    return ProbeSweep(level, tuple(seeds), budget, budgets, run_dir, executor)
