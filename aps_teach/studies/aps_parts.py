"""APS's parts, tested where they matter: each arm of APS beside VISR, APT and a uniformly random walk,
through the whole pipeline at the same budget, on the same levels and seeds.

    report = run_parts_study(levels=("deep", "easy", "hard"), num_seeds=5, out_dir="runs/aps_parts")

An arm is APS with one part changed (`ARMS`): its own contrastive encoder for the kNN reward instead of
phi (the paper's ablation), the kNN on phi before its normalisation (the authors' code), the exploration
weight, and the kNN reward as a successor feature of its own (`AgentConfig.knn_feature`); or a reference:
VISR, APT, DQN, a random walk. Every run is an `experiments.run_gridworld` row set (coverage, visitation
entropy, zero-shot success with its blame, success along fine-tuning); the random walk's row is its
coverage under pretraining's protocol (`train.random_walk`). `study_plots.write_parts_figure` draws
the results.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np

import gridworld
from aps_teach.grid.blame import blame_summary
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.sweep import PHASES as FIGURE4_PHASES
from aps_teach.grid.sweep import figure4_config, run_gridworld_rows
from aps_teach.grid.train import random_walk
from aps_teach.infra.checks import check_num_seeds
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.stats import rate_text
from aps_teach.infra.sweeps import RunSpec, SweepReport, run_sweep
from aps_teach.studies.arms import arm_name
from aps_teach.studies.probes import probe_budget, run_probe_rows

ARMS: dict[str, tuple[str, tuple[tuple[str, object], ...]]] = {
    "aps": ("aps", ()),
    "aps, own encoder": ("aps", (("agent.shared_encoder", False),)),
    "aps, kNN on g": ("aps", (("agent.knn_phi_normalised", False),)),
    "aps, explore 0": ("aps", (("agent.explore_weight", 0.0),)),
    "aps, explore 3": ("aps", (("agent.explore_weight", 3.0),)),
    "aps, kNN feature": ("aps", (("agent.knn_feature", True),)),
    "visr": ("visr", ()),
    "apt": ("apt", ()),
    "dqn": ("dqn", ()),
    "dqn, epsilon 1": ("dqn", (("finetune_epsilon_start", 1.0),)),
    "random": ("random", ()),
}
"""Arm name -> (method, overrides of the default `TrainConfig`). APS with one part changed (the default
first): own encoder, the kNN reward on APT's contrastive encoder f (trained by InfoNCE) instead of phi;
kNN on g, on phi's output before its L2 normalisation, as the authors' code measures it; explore 0 / 3, the
exploration term's weight (Eq. 6 adds the two terms with weight 1); kNN feature, the kNN reward as a
successor feature of its own (`AgentConfig.knn_feature`), so its return is not carried along w. Beside
them, at the same budget: VISR (APS without the kNN term), APT (the kNN term alone), the DQN baseline
under the one fine-tuning protocol and, for reference, with pretraining's exploration schedule (epsilon
from 1), and a uniformly random walk (coverage only, `train.random_walk`)."""
RESULTS = "aps_parts.csv"
COLUMNS = {"run_key": "str", "method": tuple(dict.fromkeys(method for method, _ in ARMS.values())),
           "level": tuple(gridworld.ENV_IDS), "seed": "count", "overrides": "str",
           "phase": (*FIGURE4_PHASES, "random_walk"), "state_coverage": "rate", "visitation_entropy": "rate",
           "success_rate": "rate?"}
"""The columns of aps_parts.csv its readers need, and their kinds (`sweeps.read_rows`)."""


def parts_table(rows: Sequence[dict], level: str) -> str:
    """A markdown table of one level's arms: coverage and visitation entropy of pretraining (mean over
    seeds), zero-shot and fine-tuned success as `stats.rate_text` (mean [95% CI], k/N seeds solving), and
    the zero-shot blame of each seed."""
    lines = ["| arm | coverage | visitation entropy | zero-shot | fine-tuned | zero-shot blame (seeds) |",
             "|---|---|---|---|---|---|"]
    mine = [row for row in rows if row["level"] == level]
    for arm in ARMS:
        runs = [row for row in mine if arm_name(row["method"], row["overrides"], ARMS) == arm]
        last = [row for row in runs if row["phase"] in ("finetuned", "random_walk")]
        if not last:
            continue
        coverage = np.mean([float(row["state_coverage"]) for row in last])
        entropy = np.mean([float(row["visitation_entropy"]) for row in last])
        cells = [f"{coverage:.2f}", f"{entropy:.3f}"]
        for phase in ("zero_shot", "finetuned"):
            values = [float(row["success_rate"]) for row in runs if row["phase"] == phase]
            cells.append(rate_text(values) if values else "—")
        cells.append(blame_summary(runs) or "—")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parts_specs(levels: Sequence[str], num_seeds: int) -> list[RunSpec]:
    """Every arm x level x seed 0..num_seeds-1, in `ARMS` order."""
    return [RunSpec(method, level, seed, overrides) for method, overrides in ARMS.values() for level in levels
            for seed in range(num_seeds)]


def run_part_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """One run of the study: `experiments.run_gridworld_rows`, or for 'random' the random walk's coverage
    at the pretraining budget (one row, phase 'random_walk', no success)."""
    if spec.method != "random":
        return run_gridworld_rows(spec, budget)
    coverage = random_walk(spec.env, budget.pretrain_steps, spec.seed, TrainConfig(progress=False))
    return [{"method": "random", "level": spec.env, "seed": spec.seed, "overrides": "",
             "phase": "random_walk",
             **{key: coverage[key] for key in ("state_coverage", "visitation_entropy", "states_visited",
                                               "keys_picked", "target_reached")}}]


def check_parts_plan(levels: Sequence[str], budget: Budget, train: TrainConfig) -> None:
    """What each arm's runs can be refused for on each level (`experiments.check_run`, with the arm's
    settings: levels, every phase's env steps, memory, device, k), before any worker starts."""
    unknown = sorted(set(levels) - set(gridworld.LEVELS))
    if isinstance(levels, str) or not levels or unknown:
        raise ValueError(f"levels must list one or more of {', '.join(gridworld.LEVELS)}; got {list(levels)}")
    for method, overrides in ARMS.values():
        config = with_overrides(train, overrides)
        for level in levels:
            check_run(level, budget, config, method=None if method == "random" else method,
                      pretrain_only=method == "random")


def run_parts_study(levels: Sequence[str] = ("deep", "easy", "hard"), num_seeds: int = 5,
                    out_dir: str | Path = "runs/aps_parts", budget: Budget = Budget(), *,
                    workers: int | None = None, progress: bool = True) -> SweepReport:
    """Every arm and reference x level x seed into out_dir/aps_parts.csv (resumable: finished runs are
    skipped; a file of another budget or config is refused), on `workers` local processes (default: one per
    core). `budget`: the defaults of `experiments` (the same for every run)."""
    check_parts_plan(levels, budget, TrainConfig(progress=False))
    num_seeds = check_num_seeds(num_seeds)
    return run_sweep(parts_specs(levels, num_seeds), partial(run_part_rows, budget=budget),
                     Path(out_dir) / RESULTS, config=figure4_config(budget), workers=workers,
                     progress=progress)


APT_REWARD = (("agent.exploit_weight", 0.0), ("agent.shared_encoder", False))
"""APS paid APT's reward exactly: no exploitation term, the kNN on its own contrastive encoder."""
W_ARMS: dict[str, tuple[str, tuple[tuple[str, object], ...]]] = {
    "apt": ("apt", ()),
    "aps": ("aps", ()),
    "aps, kNN feature": ("aps", (("agent.knn_feature", True),)),
    "aps with APT's reward": ("aps", APT_REWARD),
    "aps with APT's reward, kNN feature": ("aps", (*APT_REWARD, ("agent.knn_feature", True))),
}
"""Why APS's exploration term explores so little: APS paid APT's reward exactly (exploit weight 0, the kNN on
its own contrastive encoder) beside APT, with and without the kNN reward as a feature of its own, each
pretrained and probed (`probes.probe_pretraining`: coverage, visitation entropy, `probes.w_dependence`)."""
W_RESULTS = "w_dependence.csv"


def run_w_dependence_study(level: str = "deep", num_seeds: int = 3, out_dir: str | Path = "runs/aps_parts", *,
                           workers: int | None = None, progress: bool = True) -> SweepReport:
    """Every `W_ARMS` arm x seed probed after the default pretraining into out_dir/w_dependence.csv."""
    budget = Budget()
    specs = [RunSpec(method, level, seed, overrides) for method, overrides in W_ARMS.values()
             for seed in range(num_seeds)]
    return run_sweep(specs, partial(run_probe_rows, budget=budget), Path(out_dir) / W_RESULTS,
                     config={"budget": probe_budget(budget), "train": TrainConfig(progress=False)},
                     workers=workers, progress=progress)


def w_dependence_table(rows: Sequence[dict]) -> str:
    """A markdown table of the w-dependence study: per `W_ARMS` arm, means over seeds of coverage,
    visitation entropy and `probes.w_dependence`, and the seeds whose pretraining reached the target."""
    lines = ["| arm | coverage | visitation entropy | share of w with a state's most common greedy action "
             "| std of Q over w | action gap | target reached |", "|---|---|---|---|---|---|---|"]
    for arm in W_ARMS:
        runs = [row for row in rows if arm_name(row["method"], row["overrides"], W_ARMS) == arm]
        if not runs:
            continue
        cells = []
        for column, digits in (("state_coverage", 2), ("visitation_entropy", 3), ("w_consistency", 2),
                               ("q_std_over_w", 2), ("action_gap", 2)):
            values = [float(row[column]) for row in runs]
            cells.append("—" if np.isnan(values).all() else f"{np.mean(values):.{digits}f}")
        reached = sum(row["target_reached"] in (True, "True") for row in runs)
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {reached}/{len(runs)} |")
    return "\n".join(lines)
