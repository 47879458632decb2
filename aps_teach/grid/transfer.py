"""Zero-shot transfer to reward-map tasks: pretrain once on a maze without reward, then for each random
box-shaped reward map infer w by least squares and act at once (greedy, GPI), scored against exact
references.

    report = run_transfer("aps", "open10", seeds=range(5), num_tasks=20, out_dir="results/transfer")
    shot = zero_shot_on_reward_map(learner, "open10", {(2, 3): 1.0, (2, 4): 1.0}, seed=0)

Decisions:

- Pretraining is `train.pretrain` on the maze with an all-zero reward map (a target-free maze needs one to
  be built; pretraining drops the reward anyway).
- Task t under seed s is `random_box_reward_map(maze, num_boxes, box_size, task_seed(s, t))`: the same
  tasks for every method, so VISR and APS are compared task by task.
- Identification is `train.task_data` on the task (the pretrained policy under random w); w =
  `infer_task` (unit norm). R^2 = 1 - SS_res / SS_tot of the least-squares fit r ~ Phi c (c the
  unnormalised solution, no intercept) on those same identification data: in-sample, how linear the
  task is in phi where the policy went. Without an intercept it can be negative; it is NaN when the
  rewards seen are all equal.
- A task whose identification data hold no reward at all cannot be inferred: its row has
  identified = 0 and R^2 = NaN, and the agent acts on a w drawn uniformly on the sphere from the task
  seed, as it would have to. Its score counts in the aggregate: dropping it would flatter the method.
- Evaluation is `train.evaluate`, greedy, with GPI unless the learner's `AgentConfig.gpi` is off,
  `eval_episodes` episodes of `horizon` steps from uniform start cells: the horizon and start
  distribution of the exact references `optimal_return` and `random_return`, so score =
  (return - random) / (optimal - random). The return is a Monte Carlo mean over few episodes, so a
  task's score can fall outside [0, 1].
- Each row carries `phi_spread` (`feature_spread` of its seed's learner): 0 means phi collapsed to one
  vector, which makes every task's w the same and its R^2 0.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

import gridworld
from aps_teach.grid.cell_maps import cell_states, value_map
from aps_teach.grid.config import TrainConfig, with_method
from aps_teach.grid.envs import EnvSource, LevelSpec
from aps_teach.grid.experiments import (
    DEFAULT_IDENTIFY_STEPS,
    DEFAULT_PRETRAIN_STEPS,
    Budget,
    check_learning_starts,
)
from aps_teach.grid.memory import check_memory
from aps_teach.grid.rollouts import Rollout, greedy_rollout, state_observations
from aps_teach.grid.train import evaluate, pretrain, task_data
from aps_teach.infra.checks import check_int, check_seed, check_steps
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.seeds import task_seed
from aps_teach.infra.stats import cluster_mean_with_ci
from aps_teach.infra.sweeps import RunSpec, config_hash, read_rows
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import check_method, check_no_adaptation, check_no_fb
from aps_teach.learner.tasks import TaskFit, fit_task
from gridworld.layout import Layout
from gridworld.reward_maps import (
    as_reward_map,
    normalised_score,
    optimal_return,
    random_box_reward_map,
    random_return,
)

TRANSFER_METHODS = ("visr", "aps")
"""The methods that transfer zero-shot: they have a task vector w to infer from the reward."""
DEFAULT_TRANSFER_EPISODES = 16
"""Greedy evaluation episodes per task (two rounds of the default 8 envs)."""
DEFAULT_NUM_BOXES = 2
DEFAULT_BOX_SIZE = 3


def maze_layout(maze: str | Sequence[str]) -> Layout:
    """A target-free maze (a built-in name from gridworld.MAZES, or ASCII art) as a `Layout`."""
    if isinstance(maze, str) and maze not in gridworld.MAZES:
        raise ValueError(f"unknown maze {maze!r}; valid mazes: {', '.join(gridworld.MAZES)} (or ASCII art "
                         "without a target)")
    layout = gridworld.resolve_level(maze)
    if layout.target is not None:
        raise ValueError("reward-map tasks need a maze without a target 'T'")
    return layout


def maze_env(maze: str | Sequence[str], reward_map: np.ndarray, horizon: int) -> LevelSpec:
    """The maze with `reward_map` and a `horizon`-step time limit, for either engine."""
    return LevelSpec(maze if isinstance(maze, str) else tuple(maze), reward_map, horizon)


def task_references(layout: Layout, reward_map: np.ndarray, horizon: int) -> tuple[float, float]:
    """(optimal, random) expected returns over `horizon` steps from a uniform start cell; ValueError if no
    policy beats random (e.g. the boxes cover the whole maze), since the score is then undefined."""
    optimal, random = optimal_return(layout, reward_map, horizon), random_return(layout, reward_map, horizon)
    if optimal <= random:
        raise ValueError(f"every policy earns the same on this reward map (optimal {optimal}, random "
                         f"{random}): use fewer or smaller boxes")
    return optimal, random


@torch.no_grad()
def feature_spread(learner: Learner, layout: Layout) -> float:
    """Mean over dimensions of the standard deviation of phi(s) across the maze's cells: 0 means phi has
    collapsed to one vector, so every task gets the same w and R^2 = 0."""
    return float(learner.features(cell_states(layout).observations).std(0).mean())


@torch.no_grad()
def dead_units(learner: Learner, level) -> int:
    """How many of phi's hidden ReLU units are 0 in every reachable state of `level` (a name or art): units
    that no longer respond to anything. Raw one-hot boards left 118-123 of 128 dead on `open10`."""
    if learner.phi is None:
        raise ValueError(f"method {learner.config.method!r} has no task features phi")
    _, observations = state_observations(level)
    return int((learner.phi.hidden(learner.inputs(observations)) == 0).all(0).sum())


def identify(learner: Learner, env: EnvSource, steps: int, seed: int, config: TrainConfig | None = None
             ) -> TaskFit:
    """`fit_task` on the `train.task_data` of `env`'s reward (ridge: the learner's `identify_ridge`). A
    learner set to adapt psi to the identified w (`AgentConfig.adapt_psi`) is refused: transfer does not
    adapt; so is the fb arm (`AgentConfig.fb`), whose zero-shot transfer does not make."""
    check_no_adaptation(learner.config, "transfer")
    check_no_fb(learner.config)
    features, rewards = task_data(learner, env, steps, seed, config)
    return fit_task(features, rewards, seed, ridge=getattr(learner.config, "identify_ridge", 0.0))


def transfer_task(learner: Learner, maze: str | Sequence[str], reward_map: np.ndarray, seed: int, *,
                  references: tuple[float, float], identify_steps: int = DEFAULT_IDENTIFY_STEPS,
                  eval_episodes: int = DEFAULT_TRANSFER_EPISODES, config: TrainConfig | None = None,
                  horizon: int = gridworld.MAX_EPISODE_STEPS) -> dict:
    """Identify the task of `reward_map`, evaluate greedily (GPI as `learner.config.gpi` says), normalise by
    `references` (optimal, random): one result row (without method, maze, seed, task)."""
    start = time.perf_counter()
    env = maze_env(maze, reward_map, horizon)
    fit = identify(learner, env, identify_steps, seed, config)
    result = evaluate(learner, env, fit.w, eval_episodes, seed, config, gpi=learner.config.gpi)
    optimal, random = references
    return {"normalised_score": normalised_score(result.mean_return, optimal, random),
            "return": result.mean_return, "optimal_return": optimal, "random_return": random,
            "r2": fit.r2, "identified": int(fit.identified), "w": [round(x, 6) for x in fit.w.tolist()],
            "task_seconds": time.perf_counter() - start}


@dataclass
class ZeroShot:
    """What a pretrained learner does with one painted task, for the notebooks' plots."""

    reward_map: np.ndarray
    """The task, (H, W)."""
    fit: TaskFit
    """w, the least-squares coefficients c, R^2, whether any reward was seen."""
    fitted_reward: np.ndarray
    """phi(s)^T c at each cell: the reward the linear model believes in (NaN on walls, or everywhere
    when no reward was seen); where it departs from `reward_map` the task is not linear in phi."""
    value: np.ndarray
    """max_a psi(s, a, w)^T w at each cell, policy w alone (`cell_maps.value_map`, no GPI)."""
    action: np.ndarray
    """argmax_a psi(s, a, w)^T w at each cell (0 up, 1 down, 2 left, 3 right)."""
    rollout: Rollout
    """One greedy episode (GPI unless the learner's config turns it off) from the start cell reset(seed)
    draws."""


def zero_shot_on_reward_map(learner: Learner, maze: str | Sequence[str], reward_map, seed: int, *,
                            identify_steps: int = DEFAULT_IDENTIFY_STEPS, config: TrainConfig | None = None,
                            horizon: int = gridworld.MAX_EPISODE_STEPS) -> ZeroShot:
    """Infer w for `reward_map` (H x W, or {(row, col): value}) on `maze` from `identify_steps` env steps
    of identification data, and show the result: fitted reward, value map, greedy (GPI) trajectory."""
    layout = maze_layout(maze)
    reward_map = as_reward_map(layout, reward_map)
    env = maze_env(maze, reward_map, horizon)
    fit = identify(learner, env, identify_steps, seed, config)
    cells = cell_states(layout)
    fitted = np.full(len(cells.positions), np.nan) if fit.coefficients is None else \
        (learner.features(cells.observations).double() @ fit.coefficients).numpy()
    values = value_map(learner, cells, fit.w)
    rollout = greedy_rollout(learner, env, fit.w, seed, gpi=learner.config.gpi)
    return ZeroShot(reward_map, fit, cells.grid(fitted), values["value"], values["action"], rollout)


@dataclass
class TransferReport:
    rows: list[dict]
    """One row per (seed, task)."""
    summary: dict
    """`summarise_transfer(rows)` plus the total wall seconds."""
    results: Path | None
    """OUT/<method>-<maze>.csv, when an out_dir was given (`study_plots.write_transfer_figure` draws
    OUT/transfer.png from every such file in OUT)."""


TRANSFER_COLUMNS = {"method": TRANSFER_METHODS, "maze": tuple(gridworld.MAZES), "seed": "count",
                    "normalised_score": "score", "r2": "measure", "identified": "count",
                    "phi_spread": "score"}
"""The columns of a transfer CSV its readers need (`sweeps.read_rows`): method and maze among transfer's, the
score finite (R^2 nan where no reward was seen)."""


def summarise_transfer(rows: Sequence[dict]) -> dict:
    """Mean normalised score over all rows (tasks x seeds) with its 95% cluster-bootstrap interval over
    seeds (`stats.cluster_mean_with_ci`: whole seeds resampled, each with all its tasks, since a seed's
    tasks share its pretraining and are its own, `task_seed(seed, task)`), mean R^2 over the identified
    tasks, how many (task, seed) rows showed no reward during identification, and the mean
    `feature_spread`. "tasks" counts the tasks of a seed (the most any seed has), "rows" the (task, seed)
    pairs: 20 tasks x 5 seeds are 100 rows, not 100 tasks. Rows may come from a CSV (strings)."""
    groups = {(str(row["method"]), str(row["maze"])) for row in rows}
    if len(groups) != 1:
        raise ValueError(f"summarise_transfer needs the rows of one method on one maze, got {sorted(groups)}")
    mean, low, high = cluster_mean_with_ci([float(row["normalised_score"]) for row in rows],
                                           [row["seed"] for row in rows])
    r2 = [float(row["r2"]) for row in rows if int(row["identified"])]
    per_seed = Counter(str(row["seed"]) for row in rows)
    return {"method": rows[0]["method"], "maze": rows[0]["maze"], "tasks": max(per_seed.values()),
            "rows": len(rows), "seeds": len(per_seed), "normalised_score": mean, "score_low": low,
            "score_high": high, "mean_r2": float(np.nanmean(r2)) if r2 else math.nan,
            "unidentified": len(rows) - len(r2),
            "phi_spread": float(np.mean([float(row["phi_spread"]) for row in rows]))}


def transfer_rows(out_dir: str | Path) -> list[dict]:
    """The rows of every OUT/<method>-<maze>.csv that exists (methods visr, aps; mazes of gridworld.MAZES)."""
    return [row for method in ("visr", "aps") for maze in gridworld.MAZES
            for row in read_rows(Path(out_dir) / f"{method}-{maze}.csv", TRANSFER_COLUMNS)]


def _draw_tasks(layout: Layout, seeds: Sequence[int], num_tasks: int, num_boxes: int, box_size: int,
                horizon: int) -> dict[tuple[int, int], tuple[np.ndarray, tuple[float, float]]]:
    """Every (seed, task)'s reward map and references, before any training (so a bad one fails early)."""
    tasks = {}
    for seed in seeds:
        for task in range(num_tasks):
            reward_map = random_box_reward_map(layout, num_boxes, box_size, task_seed(seed, task))
            tasks[seed, task] = reward_map, task_references(layout, reward_map, horizon)
    return tasks


def run_transfer(method: str, maze: str, *, seeds: Sequence[int] = (0,), num_tasks: int = 20,
                 pretrain_steps: int = DEFAULT_PRETRAIN_STEPS, identify_steps: int = DEFAULT_IDENTIFY_STEPS,
                 eval_episodes: int = DEFAULT_TRANSFER_EPISODES, num_boxes: int = DEFAULT_NUM_BOXES,
                 box_size: int = DEFAULT_BOX_SIZE, horizon: int = gridworld.MAX_EPISODE_STEPS,
                 config: TrainConfig | None = None, out_dir: str | Path | None = None) -> TransferReport:
    """The zero-shot transfer benchmark: for each seed, pretrain `method` on `maze` once, then
    `transfer_task` on `num_tasks` random box reward maps. With `out_dir`, rewrites
    OUT/<method>-<maze>.csv (atomically, after each seed)."""
    check_method(method, TRANSFER_METHODS, "for transfer")
    if not isinstance(maze, str):
        raise ValueError(f"run_transfer names its results after the maze: give a built-in maze name "
                         f"({', '.join(gridworld.MAZES)})")
    layout = maze_layout(maze)
    seeds = [check_seed(seed) for seed in seeds]
    if not seeds:
        raise ValueError("run_transfer needs at least one seed")
    budget = {"pretrain_steps": pretrain_steps, "identify_steps": identify_steps,
              "eval_episodes": eval_episodes, "num_tasks": num_tasks, "horizon": horizon}
    budget = {name: check_int(name, value) for name, value in budget.items()}
    pretrain_steps, identify_steps, eval_episodes, num_tasks, horizon = budget.values()
    config = with_method(config, method)
    check_no_adaptation(config.agent, "transfer")
    check_no_fb(config.agent)
    round_steps = config.num_envs * horizon  # every phase runs whole rounds: refused before any work
    pretrain_rounded, identify_rounded = (-(-steps // round_steps) * round_steps
                                          for steps in (pretrain_steps, identify_steps))
    check_steps("pretrain_steps", pretrain_rounded)
    check_steps("identify_steps", identify_rounded)
    check_steps("eval_episodes", -(-eval_episodes // config.num_envs) * round_steps)
    check_learning_starts(Budget(pretrain_steps=pretrain_rounded), config, pretrain_only=True)
    check_memory(maze_env(maze, np.zeros(layout.shape), horizon), config, pretrain_steps=pretrain_rounded,
                 identify_steps=identify_rounded)
    tasks = _draw_tasks(layout, seeds, num_tasks, num_boxes, box_size, horizon)
    shared = {**{k: v for k, v in budget.items() if k != "num_tasks"}, "num_boxes": num_boxes,
              "box_size": box_size, "config_hash": config_hash(budget, num_boxes, box_size, config)}
    results = Path(out_dir) / f"{method}-{maze}.csv" if out_dir is not None else None
    rows, start = [], time.perf_counter()
    bar = tqdm(total=len(tasks), desc=f"transfer {method} {maze}", unit="task", disable=not config.progress)
    for seed in seeds:
        tick = time.perf_counter()
        learner, _ = pretrain(method, maze_env(maze, np.zeros(layout.shape), horizon), pretrain_steps, seed,
                              config)
        pretrain_seconds = time.perf_counter() - tick
        spread = feature_spread(learner, layout)
        for task in range(num_tasks):
            reward_map, references = tasks[seed, task]
            row = transfer_task(learner, maze, reward_map, task_seed(seed, task), references=references,
                                identify_steps=identify_steps, eval_episodes=eval_episodes, config=config,
                                horizon=horizon)
            rows.append({"method": method, "maze": maze, "seed": seed, "task": task, **row,
                         "phi_spread": spread, "pretrain_seconds": pretrain_seconds, **shared})
            bar.update()
        if results is not None:
            write_csv_atomic(results, rows)
    bar.close()
    summary = {**summarise_transfer(rows), "wall_seconds": time.perf_counter() - start}
    return TransferReport(rows, summary, results)


def run_transfer_rows(spec: RunSpec, budget: dict[str, int]) -> list[dict]:
    """A sweep run (`sweeps.run_sweep`): `run_transfer` of spec.method on the maze spec.env with the one
    seed spec.seed and the spec's overrides applied to `TrainConfig(progress=False)`; its rows, overrides
    added.
    `budget` holds run_transfer's keyword arguments (num_tasks, pretrain_steps, ...)."""
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    report = run_transfer(spec.method, spec.env, seeds=[spec.seed], config=config, **budget)
    overrides = json.dumps(spec.overrides) if spec.overrides else ""
    return [{**row, "overrides": overrides} for row in report.rows]
