"""Cheap measures of what reward-free pretraining produced, for ablation sweeps where fine-tuning every
variant would cost too much.

    row = probe_pretraining("aps", "hard", seed=0, pretrain_steps=8_000)

One probe = `train.pretrain`, then, without any further training:
- coverage: the pretraining log's fraction of reachable (position, keys held) states visited, keys
  picked, whether the target was reached;
- reward terms: the mean of each intrinsic-reward term (phi(s')^T w, kNN entropy) over the last
  quarter of the pretraining rounds, i.e. what the learned behaviour earns, not the random start;
- phi_spread: `transfer.feature_spread` over the level's cells (0: phi collapsed to one vector);
- task_r2: R^2 of the least-squares fit of the level's own reward on phi(s') (`transfer.identify`):
  how linear the task is in the learned features where the pretrained policy goes (NaN when the
  identification data hold no reward);
- zero-shot success and return of the greedy policy on the identified w (`train.evaluate`);
- its cost: wall seconds, and CPU seconds of its process (what a busy machine does not inflate).
Methods without phi (apt) get NaN phi_spread and task_r2, and are evaluated on their fixed task.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np

import gridworld
from aps_teach.checks import check_range
from aps_teach.experiments import (
    DEFAULT_EVAL_EPISODES,
    DEFAULT_IDENTIFY_STEPS,
    DEFAULT_PRETRAIN_STEPS,
    check_run,
)
from aps_teach.sweeps import RunSpec, config_hash, with_overrides
from aps_teach.train import PhaseLog, TrainConfig, evaluate, pretrain
from aps_teach.transfer import feature_spread, identify

REWARD_TERMS = ("reward_exploit", "reward_explore")
"""The per-round intrinsic-reward means of `Learner.update` that a probe reports."""


def late_reward_terms(log: PhaseLog, fraction: float = 0.25) -> dict[str, float]:
    """Mean of each reward term over the last `fraction` of the rounds (at least one); NaN for a term the
    method does not have or that no round in that window logged (e.g. no updates yet)."""
    check_range("fraction", fraction, 0, 1, low_open=True)
    window = log.metrics[-max(1, math.ceil(fraction * len(log.metrics))):]
    means = {}
    for term in REWARD_TERMS:
        values = [row[term] for row in window if term in row]
        means[term] = float(np.mean(values)) if values else math.nan
    return means


def probe_pretraining(method: str, level: str, *, seed: int, pretrain_steps: int = DEFAULT_PRETRAIN_STEPS,
                      identify_steps: int = DEFAULT_IDENTIFY_STEPS,
                      eval_episodes: int = DEFAULT_EVAL_EPISODES, config: TrainConfig | None = None) -> dict:
    """Pretrain `method` on the key level `level` and measure the result (see the module docstring)."""
    check_run(level, {"pretrain_steps": pretrain_steps, "identify_steps": identify_steps,
                      "eval_episodes": eval_episodes})
    if level not in gridworld.LEVELS:
        raise ValueError(f"probes measure the key levels' task; valid levels: {', '.join(gridworld.LEVELS)}")
    config = config or TrainConfig()
    start, cpu_start = time.perf_counter(), time.process_time()
    learner, log = pretrain(method, level, pretrain_steps, seed, config)
    row = {key: log.coverage[key] for key in ("state_coverage", "states_visited", "keys_picked",
                                               "target_reached")}
    row.update(late_reward_terms(log))
    row["updates"] = learner.updates
    w, row["phi_spread"], row["task_r2"] = None, math.nan, math.nan
    if learner.config.task_conditioned:
        row["phi_spread"] = feature_spread(learner, gridworld.resolve_level(level))
        fit = identify(learner, level, identify_steps, seed, config)
        w, row["task_r2"] = fit.w, fit.r2
    result = evaluate(learner, level, w, eval_episodes, seed, config)
    row.update(zero_shot_success=result.success_rate, zero_shot_return=result.mean_return,
               probe_seconds=round(time.perf_counter() - start, 3),
               probe_cpu_seconds=round(time.process_time() - cpu_start, 3))
    return row


def run_probe_rows(spec: RunSpec, budget: dict[str, int]) -> list[dict]:
    """A sweep run (`sweeps.run_sweep`): the probe of spec.method on spec.env with the spec's overrides
    applied to `TrainConfig(progress=False)`, as one row."""
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    row = probe_pretraining(spec.method, spec.env, seed=spec.seed, config=config, **budget)
    return [{"method": spec.method, "level": spec.env, "seed": spec.seed,
             "overrides": json.dumps(spec.overrides) if spec.overrides else "", **row,
             "config_hash": config_hash(budget, config)}]
