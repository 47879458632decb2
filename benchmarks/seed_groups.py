"""Seed groups give every seed its own run's numbers: bit for bit, checked on the machine that runs this.

    python benchmarks/seed_groups.py [--seeds 3 4 5]

For each gridworld run of `identical_weights.py`'s set (every method, and each option with a code path of its
own: the exact n-step sum, the scalar SF loss, APS without a shared encoder, APT on raw observations; plus the
kNN reward as a feature of its own and that conditioned on the exploration weight), the full pipeline
(pretrain, identify, zero-shot, fine-tune with evaluations on the way) of each seed alone
(`run_gridworld`) and of all seeds as one seed group (`run_pipeline_seeds`), each into run directories;
then the SHA-256 of every tensor in every checkpoint (weights, target network, optimiser state, normalisers,
replay) and of each seed's scores, metrics and coverage, alone against grouped. Bitwise results depend on
the CPU and the PyTorch build (docs/reproducibility.md): a group equals its seeds' runs where this prints so,
and nowhere else is it promised. Exit status 1 if any seed differs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from identical_weights import GRIDWORLD_BUDGET, GRIDWORLD_RUNS, checkpoint_fingerprints, digest  # noqa: E402

from aps_teach.grid.experiments import (  # noqa: E402
    Budget,
    prepare_run,
    run_gridworld,
    run_pipeline_seeds,
    run_record,
)
from aps_teach.grid.train import TrainConfig  # noqa: E402
from aps_teach.infra.run_dir import RunDir  # noqa: E402
from aps_teach.learner.config import AgentConfig  # noqa: E402

RUNS = {**GRIDWORLD_RUNS, "aps-knn-feature": ("aps", {"knn_feature": True}),
        "aps-explore-conditioned": ("aps", {"knn_feature": True, "explore_conditioned": True})}
TIMES = ("pretrain_seconds", "finetune_seconds", "wall_seconds")


def fingerprint(result, run_dir: Path) -> dict[str, str]:
    """Digests of a run's result (its times left out) and of every tensor in its checkpoints."""
    kept = {key: value for key, value in asdict(result).items() if key not in TIMES}
    return {"result": digest(kept), **checkpoint_fingerprints(run_dir)}


def check(name: str, seeds: list[int], out: Path) -> tuple[list[str], int]:
    """The seeds that differ between their runs alone and their seed group, for run `name` of `RUNS`, and
    how many digests each seed's comparison covers."""
    method, changes = RUNS[name]
    config = TrainConfig(agent=replace(AgentConfig(method=method), **changes), progress=False)
    budget = Budget(**GRIDWORLD_BUDGET)
    alone = {seed: fingerprint(run_gridworld(method, "easy", seed=seed, budget=budget, config=config,
                                             run_dir=out / f"alone-{seed}"), out / f"alone-{seed}")
             for seed in seeds}
    checked, config = prepare_run(method, "easy", seeds[0], budget, config)
    with contextlib.ExitStack() as stack:
        runs = [stack.enter_context(RunDir(out / f"group-{seed}")) for seed in seeds]
        for run, seed in zip(runs, seeds, strict=True):
            run.claim(run_record(method, "easy", seed, checked, config), resume=False, force=False)
        results = run_pipeline_seeds(method, "easy", seeds, checked, config, runs)
    grouped = {seed: fingerprint(result, out / f"group-{seed}")
               for seed, result in zip(seeds, results, strict=True)}
    return [f"seed {seed}" for seed in seeds if alone[seed] != grouped[seed]], len(alone[seeds[0]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}; seeds {args.seeds}, each alone and as one group, on the easy level")
    start, differing = time.perf_counter(), 0
    with tempfile.TemporaryDirectory(prefix="seed-groups-") as tmp:
        for name in RUNS:
            wrong, digests = check(name, args.seeds, Path(tmp) / name)
            differing += bool(wrong)
            print(f"{'DIFFERENT' if wrong else 'identical'} {name}: "
                  f"{', '.join(wrong) if wrong else f'every seed of {len(args.seeds)}'} "
                  f"({digests} tensors and the result per seed)", flush=True)
    print(f"{len(RUNS) - differing} of {len(RUNS)} runs bit-identical alone and grouped "
          f"({time.perf_counter() - start:.0f} s)")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
