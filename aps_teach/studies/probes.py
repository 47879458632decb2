"""Cheap measures of what reward-free pretraining produced, for ablation sweeps where fine-tuning every
variant would cost too much.

    row = probe_pretraining("aps", "hard", seed=0, budget=Budget(pretrain_steps=8_000))

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
- how much the behaviour depends on w (`w_dependence`): how often the greedy action of a state is the
  same under different w, and the spread of Q over w against the gap between the best two actions;
- its cost: wall seconds, and CPU seconds of its process (what a busy machine does not inflate).
Methods without phi (apt) get NaN phi_spread, task_r2 and w dependence, and are evaluated on their fixed
task.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict

import numpy as np
import torch

import gridworld
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import (
    Budget,
    check_run,
)
from aps_teach.grid.rollouts import state_observations
from aps_teach.grid.train import evaluate, pretrain
from aps_teach.grid.transfer import feature_spread, identify
from aps_teach.infra.checks import check_range
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.phases import PhaseLog
from aps_teach.infra.sweeps import RunSpec, config_hash
from aps_teach.learner.agent import Learner
from aps_teach.learner.tasks import sample_tasks

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


@torch.no_grad()
def w_dependence(learner: Learner, level, num_tasks: int = 32, seed: int = 0) -> dict[str, float]:
    """How much a task-conditioned learner's pretraining behaviour depends on w, over the level's
    non-terminal states s and `num_tasks` w uniform on the sphere, Q(s, a, w) as it acts while pretraining
    (`Learner.q_values(..., explore=True)`):

    - w_consistency: the mean share of tasks under which s's greedy action is its most frequent one
      (1: the same action under every w; about 1/4 to 1/3 when the action is noise in w);
    - q_std_over_w: the standard deviation of Q(s, a, w) over w, averaged over s and a;
    - action_gap: the mean gap between the best and second-best Q(s, ., w).
    When Q's spread over w dwarfs the action gap, each w acts as a different policy."""
    _, states = state_observations(level)
    tasks = sample_tasks(num_tasks, learner.config.feature_dim, torch.Generator().manual_seed(seed))
    q = torch.stack([learner.q_values(states, w.expand(len(states), -1), explore=True) for w in tasks])
    greedy = q.argmax(-1)  # (W, S)
    consistency = (greedy == greedy.mode(0).values).float().mean()
    top = q.topk(2, dim=-1).values
    return {"w_consistency": float(consistency), "q_std_over_w": float(q.std(0).mean()),
            "action_gap": float((top[..., 0] - top[..., 1]).mean())}


@torch.no_grad()
def skill_steering(learner: Learner, level, num_tasks: int = 16, steps: int = 10, seed: int = 0
                   ) -> dict[str, float]:
    """Whether fresh skills steer where phi says they should, on paths the learner never trained on: from
    every non-terminal state s of `level` and each of `num_tasks` w uniform on the sphere, `steps` greedy
    moves under w (Q(s, a, w) as it acts while pretraining; the compiled level's moves), ending at s_T:

    - own_skill: the mean of phi(s_T)^T w;
    - other_skill: the same with the next task's w' in place of w (tasks in a cycle).
    A policy blind to w ends where it would under any w, and the two are equal (each s's sum over the cycle
    telescopes); the gap is how far the skills' paths follow phi."""
    compiled = gridworld.compile_level(level)
    n = compiled.num_nonterminal
    observations = torch.from_numpy(compiled.observations.copy())
    successor = torch.from_numpy(compiled.successor.astype(np.int64))
    tasks = sample_tasks(num_tasks, learner.config.feature_dim, torch.Generator().manual_seed(seed))
    state = torch.arange(n).repeat_interleave(num_tasks)
    w = tasks.repeat(n, 1)
    for _ in range(steps):
        action = learner.q_values(observations[state], w, explore=True).argmax(-1)
        state = torch.where(state < n, successor[state, action], state)  # terminal states stay
    phi = learner.features(observations[state])
    return {"own_skill": float((phi * w).sum(-1).mean()),
            "other_skill": float((phi * w.roll(1, 0)).sum(-1).mean())}


def probe_pretraining(method: str, level: str, *, seed: int, budget: Budget = Budget(),
                      config: TrainConfig | None = None) -> dict:
    """Pretrain `method` on the key level `level` and measure the result (see the module docstring); of
    `budget`, a probe spends all but finetune_steps."""
    check_run(level, budget)
    if level not in gridworld.LEVELS:
        raise ValueError(f"probes measure the key levels' task; valid levels: {', '.join(gridworld.LEVELS)}")
    config = config or TrainConfig()
    start, cpu_start = time.perf_counter(), time.process_time()
    learner, log = pretrain(method, level, budget.pretrain_steps, seed, config)
    row = {key: log.coverage[key] for key in ("state_coverage", "visitation_entropy", "states_visited",
                                               "keys_picked", "target_reached")}
    row.update(late_reward_terms(log))
    row["updates"] = learner.updates
    w, row["phi_spread"], row["task_r2"] = None, math.nan, math.nan
    row.update(dict.fromkeys(("w_consistency", "q_std_over_w", "action_gap"), math.nan))
    if learner.config.task_conditioned:
        row.update(w_dependence(learner, level, seed=seed))
        row["phi_spread"] = feature_spread(learner, gridworld.resolve_level(level))
        fit = identify(learner, level, budget.identify_steps, seed, config)
        w, row["task_r2"] = fit.w, fit.r2
    result = evaluate(learner, level, w, budget.eval_episodes, seed, config)
    row.update(zero_shot_success=result.success_rate, zero_shot_return=result.mean_return,
               probe_seconds=round(time.perf_counter() - start, 3),
               probe_cpu_seconds=round(time.process_time() - cpu_start, 3))
    return row


def probe_budget(budget: Budget) -> dict[str, int]:
    """`budget` as a probe records it (config hash, sweep record): without finetune_steps, which it does
    not spend."""
    return {name: steps for name, steps in asdict(budget).items() if name != "finetune_steps"}


def run_probe_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """A sweep run (`sweeps.run_sweep`): the probe of spec.method on spec.env with the spec's overrides
    applied to `TrainConfig(progress=False)`, as one row."""
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    row = probe_pretraining(spec.method, spec.env, seed=spec.seed, budget=budget, config=config)
    return [{"method": spec.method, "level": spec.env, "seed": spec.seed,
             "overrides": json.dumps(spec.overrides) if spec.overrides else "", **row,
             "config_hash": config_hash(probe_budget(budget), config)}]
