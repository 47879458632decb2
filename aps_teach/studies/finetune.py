"""Why fine-tuning unlearnt, measured: one pretraining per method and seed, then each fine-tuning protocol
(`ARMS`) from a copy of it, with the greedy success, the value range and the TD loss after every round.

    report = run_finetune_study(out_dir="runs/finetune")

The arms are the candidates of the question "what keeps a good zero-shot policy through fine-tuning": the
target ending the episode (the paper's protocol, the default) or absorbing as in pretraining, a
lower fine-tuning learning rate, a slower target network, the paper's reward clipping, and w at its
least-squares magnitude (rewards divided by ||c||, so Q = psi^T w starts at the fitted reward's scale).
Every arm starts from the same pretrained learner and the same identified w. Each row is one evaluation:
method, seed, arm, round, env steps, success rate, the range of max_a Q(s, a) over the level's states (in
the task's units: divided by the arm's reward scale) beside the task's own optimal values, and the round's
mean TD loss. `study_plots.write_finetune_figure` draws it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import torch

import gridworld
from aps_teach.grid.blame import optimal_q
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.rollouts import state_observations
from aps_teach.grid.rounds import RoundEnd
from aps_teach.grid.train import evaluate, finetune, new_learner, pretrain, task_data
from aps_teach.infra.checks import check_num_seeds
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.stats import rate_text
from aps_teach.infra.sweeps import RunSpec, SweepReport, run_sweep
from aps_teach.learner.config import pretrains
from aps_teach.learner.tasks import fit_task

ARMS: dict[str, tuple[tuple[str, object], ...]] = {
    "target ends the episode": (("finetune_absorbing_target", False),),
    "ends, lr 1e-4": (("finetune_absorbing_target", False), ("agent.finetune_lr", 1e-4)),
    "ends, target period 400": (("finetune_absorbing_target", False), ("agent.target_update_period", 400)),
    "ends, rewards clipped to 1": (("finetune_absorbing_target", False), ("reward_clip", 1.0)),
    "ends, w at least-squares scale": (("finetune_absorbing_target", False),),
    "target absorbing": (("finetune_absorbing_target", True),),
    "absorbing, lr 1e-4": (("finetune_absorbing_target", True), ("agent.finetune_lr", 1e-4)),
}
"""Arm -> overrides of the default `TrainConfig` for fine-tuning ('w at least-squares scale' also divides
the task rewards by ||c||, `LEAST_SQUARES_ARM`). The first is the default protocol, the paper's."""
LEAST_SQUARES_ARM = "ends, w at least-squares scale"
METHOD_ARMS = {"visr": tuple(ARMS), "aps": tuple(ARMS),
               "apt": ("target ends the episode", "target absorbing"),
               "dqn": ("target ends the episode", "target absorbing")}
"""The arms each method runs: every arm for the methods with a zero-shot policy to keep (visr, aps), the
protocol alone for those that must find the task while fine-tuning (apt, dqn)."""
RESULTS = "finetune.csv"
COLUMNS = {"run_key": "str", "method": "str", "seed": "count", "arm": "str", "finetune_steps": "steps",
           "success_rate": "rate", "value_min": "float", "value_max": "float", "optimal_value_min": "float",
           "optimal_value_max": "float"}
"""The columns of finetune.csv its readers need, and their kinds (`sweeps.read_rows`)."""


@torch.no_grad()
def value_range(learner, level, w: torch.Tensor) -> tuple[float, float]:
    """(min, max) over the level's non-terminal states of max_a Q(s, a) = psi(s, a, w)^T w."""
    _, states = state_observations(level)
    values = learner.q_values(states, w.expand(len(states), -1).float()).amax(1)
    return float(values.min()), float(values.max())


def optimal_value_range(level, gamma: float) -> tuple[float, float]:
    """(min, max) over the level's non-terminal states of the task's optimal discounted value (the target
    ending the episode; `blame.optimal_q`)."""
    compiled = gridworld.compile_level(level)
    values = optimal_q(level, compiled.reward, gamma, absorbing=False)[:compiled.num_nonterminal].max(1)
    return float(values.min()), float(values.max())


def run_finetune_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """One method and seed: pretrain (not dqn) and identify the task once, then every arm of
    `METHOD_ARMS[spec.method]` from a copy, evaluated after every fine-tuning round."""
    config = TrainConfig(progress=False)
    level, seed = spec.env, spec.seed
    if not pretrains(spec.method):
        pretrained = new_learner("dqn", level, seed, config)
    else:
        pretrained, _ = pretrain(spec.method, level, budget.pretrain_steps, seed, config)
    w, scale = None, 1.0
    if pretrained.config.task_conditioned:
        fit = fit_task(*task_data(pretrained, level, budget.identify_steps, seed, config), seed)
        w = fit.w
        scale = float(fit.coefficients.norm()) if fit.coefficients is not None else 1.0
    task_w = pretrained.default_task(1)[0] if w is None else w
    optimal = optimal_value_range(level, config.agent.gamma)
    zero = evaluate(pretrained, level, w, budget.eval_episodes, seed, config)
    rows = []
    for arm in METHOD_ARMS[spec.method]:
        arm_config = with_overrides(replace(config, agent=pretrained.config), ARMS[arm])
        learner = copy.deepcopy(pretrained)
        learner.config = arm_config.agent
        factor = 1 / scale if arm == LEAST_SQUARES_ARM else 1.0
        low, high = value_range(learner, level, task_w)
        shared = {"method": spec.method, "level": level, "seed": seed, "arm": arm, "reward_scale": factor,
                  "optimal_value_min": optimal[0], "optimal_value_max": optimal[1]}
        rows.append({**shared, "round": 0, "finetune_steps": 0, "success_rate": zero.success_rate,
                     "value_min": low / factor, "value_max": high / factor, "loss_sf": math.nan})

        def score(end: RoundEnd, shared=shared, factor=factor, arm_config=arm_config) -> None:
            result = evaluate(end.learner, level, w, budget.eval_episodes, seed, arm_config)
            low, high = value_range(end.learner, level, task_w)
            rows.append({**shared, "round": end.round, "finetune_steps": end.env_steps,
                         "success_rate": result.success_rate, "value_min": low / factor,
                         "value_max": high / factor, "loss_sf": end.metrics.get("loss_sf", math.nan)})

        finetune(learner, level, w, budget.finetune_steps, seed, arm_config, on_round=score,
                 reward_scale=factor)
    return rows


def run_finetune_study(methods: Sequence[str] = ("visr", "aps", "apt", "dqn"), level: str = "easy",
                       num_seeds: int = 4, out_dir: str | Path = "runs/finetune", *,
                       workers: int | None = None, progress: bool = True, budget: Budget | None = None
                       ) -> SweepReport:
    """Every method x seed 0..num_seeds-1 (`run_finetune_rows`: all its arms) at `budget` (default: the
    default budgets, the committed study's) into out_dir/finetune.csv (resumable), on `workers` local
    processes (default: one per core); each method's plan checked first (`experiments.check_run`)."""
    unknown = sorted(set(methods) - set(METHOD_ARMS))
    if unknown or isinstance(methods, str) or not methods:
        raise ValueError(f"methods must name one or more of {', '.join(METHOD_ARMS)}; got {list(methods)}")
    budget, num_seeds = budget or Budget(), check_num_seeds(num_seeds)
    for method in methods:
        check_run(level, budget, TrainConfig(progress=False), method=method)
    specs = [RunSpec(method, level, seed) for method in methods for seed in range(num_seeds)]
    return run_sweep(specs, partial(run_finetune_rows, budget=budget), Path(out_dir) / RESULTS,
                     config={"budget": budget, "train": TrainConfig(progress=False), "arms": ARMS},
                     workers=workers, progress=progress)


def finetune_table(rows: Sequence[dict]) -> str:
    """A markdown table of the study: per method and arm, over seeds, the zero-shot success, the fine-tuned
    success (`stats.rate_text`: mean [95% CI], k/N seeds solving), the mean success along fine-tuning (every
    round after the start), the seeds that end below their zero-shot success, and the mean of the largest
    max_a Q over the level's states at the start and after the first round, beside the task's optimum."""
    lines = ["| method | arm | zero-shot | fine-tuned | mean along fine-tuning | seeds ending below "
             "zero-shot | max value: start, round 1 (task optimum) |", "|---|---|---|---|---|---|---|"]
    for method in METHOD_ARMS:
        for arm in ARMS:
            runs: dict[int, list[dict]] = {}
            for row in rows:
                if row["method"] == method and row["arm"] == arm:
                    runs.setdefault(int(row["seed"]), []).append(row)
            if not runs:
                continue
            curves = [[float(r["success_rate"]) for r in sorted(seed_rows, key=lambda r: int(r["round"]))]
                      for seed_rows in runs.values()]
            starts = [sorted(seed_rows, key=lambda r: int(r["round"]))[:2] for seed_rows in runs.values()]
            below = sum(curve[-1] < curve[0] for curve in curves)
            values = f"{np.mean([float(s[0]['value_max']) for s in starts]):.1f}, " \
                     f"{np.mean([float(s[1]['value_max']) for s in starts]):.1f} " \
                     f"({float(starts[0][0]['optimal_value_max']):.1f})"
            zero, along = np.mean([c[0] for c in curves]), np.mean([np.mean(c[1:]) for c in curves])
            tuned = rate_text([c[-1] for c in curves])
            lines.append(f"| {method} | {arm} | {zero:.2f} | {tuned} | {along:.2f} | {below}/{len(curves)} "
                         f"| {values} |")
    return "\n".join(lines)
