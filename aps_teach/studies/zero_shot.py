"""Zero-shot over a task family, diagnosed link by link: why acting on an identified w scores low.

Zero-shot is a chain (`aps_teach.grid.blame` names its links for the Figure 4 target): the features phi, the
task identification, the successor features psi and GPI. For a pretrained w-conditioned learner and every task
of a level's family, `diagnose_task` measures each link exactly on the level's compiled tables:

- phi: the R^2 of the task's reward on phi(s') over every move (s, a) of the level, its best linear fit c*;
  and P_best, the normalised return of an exact planner (value iteration, gamma, the target absorbing as in
  pretraining) on the best-fit reward phi(s')^T c*, played greedily on the task: what zero-shot could reach if
  identification and psi were perfect. phi's effective rank (`effective_rank`) is measured once per run;
- identification: P_id, the same planner on the reward fitted from the 16k identification steps (0 when they
  saw no reward: then nothing was fitted, and the agent acts on a random w);
- psi: the agent's zero-shot score Z (greedy, GPI, the identified w) against P_id, and psi against the
  successor features of the agent's own greedy policy under that w, computed exactly
  (`exact_successor_features`): the error left after the best scale, the scale, and how often psi's greedy
  action is optimal for the reward it values (`psi_quality`);
- GPI: Z against the same policy without GPI; and O, the agent's score under the best-case w (w of c*).

The score lost, 1 - Z, splits as `aps_teach.grid.blame` splits success: (1 - P_best) to phi,
max(0, P_best - P_id) to identification, max(0, P_id - Z) to psi, on normalised returns clipped to [0, 1];
`capping_links` names, per task class, the link that lost the most on average.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from functools import partial
from pathlib import Path

import numpy as np
import torch

import gridworld
from aps_teach.grid.blame import optimal_q
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.envs import LevelSpec
from aps_teach.grid.experiments import Budget, check_run
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.train import adapt_to_task, evaluate, pretrain_seeds, task_data
from aps_teach.infra.checks import check_int, check_seeds, check_type
from aps_teach.infra.files import write_csv_atomic
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.seeds import task_seed
from aps_teach.infra.sweeps import RunSpec, SweepReport, check_seed_group, config_hash, read_rows, run_sweep
from aps_teach.learner.agent import Learner
from aps_teach.learner.tasks import TaskFit, fit_task
from aps_teach.studies.arms import FAMILY_ARMS

LINKS = ("phi", "identification", "psi")
"""The links the score lost is split over, in the chain's order."""
ARMS_DIAGNOSED = ("visr", "aps", "aps, kNN feature", "aps, explore-conditioned")
"""The w-conditioned arms of the task-family study (the ablation has the kNN-feature variant's networks)."""
DIAGNOSABLE = tuple(arm for arm, (method, _) in FAMILY_ARMS.items() if method in ("visr", "aps"))
"""The arms of the task-family study a diagnosis can run: those that act on a task vector w."""
IDENTIFY_STEPS, EVAL_EPISODES = 16_000, 32
"""Each task's identification and evaluation budgets, the task-family study's."""
RESULTS = "zero_shot.csv"
COLUMNS = {"run_key": "str", "method": ("visr", "aps"), "level": tuple(gridworld.TASK_FAMILIES),
           "seed": "count", "overrides": "str", "task": "str", "task_class": "str", "zero_shot": "score",
           "zero_shot_no_gpi": "score", "best_case": "score", "r2": "measure", "planner_best": "score",
           "planner_identified": "score",
           "psi_error": "measure", "psi_scale": "measure", "psi_agreement": "measure", "identified": "flag",
           "effective_rank": "score"}
"""The columns of zero_shot.csv its readers need (`sweeps.read_rows`): every score finite (nan only where a
measure is undefined: psi's against a policy of value 0), the method and level ones a diagnosis runs."""


def state_features(learner: Learner, level) -> np.ndarray:
    """phi(s) of every compiled state of `level` (S, d), float64."""
    compiled = gridworld.compile_level(level)
    return learner.features(torch.tensor(compiled.observations)).double().numpy()


def effective_rank(features: np.ndarray) -> float:
    """exp(H(p)) of the singular values sigma of `features` (N, d), p = sigma / sum(sigma) (Roy & Vetterli
    2007): d for d equal directions, 1 for features on one line."""
    sigma = np.linalg.svd(features, compute_uv=False)
    p = sigma[sigma > 0] / sigma.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def move_rewards(level, task: gridworld.Task) -> np.ndarray:
    """The task's reward of every move (S, A) of `level`'s compiled states (terminal states pay 0)."""
    return gridworld.compile_level(level, task=task).reward


def best_fit(features: np.ndarray, level, task: gridworld.Task) -> TaskFit:
    """`fit_task` of the task's reward on phi(s') over one (s, a) of every non-terminal state and action:
    the best linear fit phi can give, and its R^2."""
    compiled = gridworld.compile_level(level)
    n = compiled.num_nonterminal
    following = torch.from_numpy(features[compiled.successor[:n].ravel()])
    rewards = torch.tensor(move_rewards(level, task)[:n].ravel())
    return fit_task(following, rewards, seed=0)


def greedy_return(level, task: gridworld.Task, q: np.ndarray) -> float:
    """The normalised return (0 random, 1 optimal: `gridworld.normalised_score`) of acting greedily on
    `q` (S, A) on the task, from each start cell, over `gridworld.MAX_EPISODE_STEPS` steps (the task's own
    tables: a box task's target absorbs, the target task's ends the episode)."""
    compiled = gridworld.compile_level(level, task=task)
    state = compiled.start_states.copy()
    total = np.zeros(len(state))
    for _ in range(gridworld.MAX_EPISODE_STEPS):
        action = q[state].argmax(1)
        total += compiled.reward[state, action]
        state = compiled.successor[state, action]
    optimal, random = gridworld.task_references(level, task)
    return gridworld.normalised_score(float(total.mean()), optimal, random)


def planner_score(features: np.ndarray, level, task: gridworld.Task, coefficients, gamma: float) -> float:
    """`greedy_return` of the exact planner's Q* (`blame.optimal_q`, the target absorbing) on the fitted
    reward phi(s')^T c of every move; 0 when nothing was fitted (`coefficients` None)."""
    if coefficients is None:
        return 0.0
    compiled = gridworld.compile_level(level)
    believed = (features @ np.asarray(coefficients, dtype=float))[compiled.successor]
    return greedy_return(level, task, optimal_q(level, believed, gamma))


@torch.no_grad()
def agent_psi(learner: Learner, level, w: torch.Tensor) -> np.ndarray:
    """psi(s, a, w) of the learner for every compiled state (S, A, sf_dim), task input w (a task: beta 0)."""
    compiled = gridworld.compile_level(level)
    obs = torch.tensor(compiled.observations)
    tasks = learner.psi_task(w.expand(len(obs), -1))[:, None]
    return learner.psi(learner.inputs(obs), tasks)[:, 0].double().numpy()


def exact_successor_features(features: np.ndarray, level, policy: np.ndarray, gamma: float) -> np.ndarray:
    """psi^pi(s, a) = phi(s') + gamma psi^pi(s', pi(s')) of a deterministic `policy` (S,) on `level`'s
    compiled tables, the target absorbing (its state loops to itself, as in pretraining), by solving the
    linear system over the states: (S, A, d)."""
    compiled = gridworld.compile_level(level)
    successor = compiled.successor
    states = np.arange(len(successor))
    after = successor[states, policy]
    transition = np.zeros((len(states), len(states)))
    transition[states, after] = 1.0
    along = np.linalg.solve(np.eye(len(states)) - gamma * transition, features[after])  # psi(s, pi(s))
    return features[successor] + gamma * along[successor]


def psi_quality(learner: Learner, features: np.ndarray, level, w: torch.Tensor) -> dict[str, float]:
    """How far psi is from the values of the policy it induces, over every non-terminal (s, a): Q = psi(s, a,
    w)^T w from the learner's phi columns against Q^pi = psi^pi(s, a)^T w, `exact_successor_features` of the
    learner's own greedy policy under w (no GPI):
    - psi_error: the relative error left after the best scale, min_c ||Q - c Q^pi|| / ||Q|| (the sine of the
      angle between the two), since the authors' n-step target (`nstep_reward='last'`, the window's last
      cumulant standing for its n) learns values at another scale than the discounted sum;
    - psi_scale: ||Q|| / ||Q^pi||;
    - psi_agreement: the share of states whose greedy action under Q is an optimal one for the reward psi
      values, phi(s')^T w (value iteration, `blame.optimal_q`; ties within 1e-9 count).
    NaN where Q or Q^pi is 0."""
    d, gamma = features.shape[1], learner.config.gamma
    weights = w.double().numpy()
    q = agent_psi(learner, level, w)[..., :d] @ weights
    exact = exact_successor_features(features, level, q.argmax(1), gamma) @ weights
    n = gridworld.compile_level(level).num_nonterminal
    q, exact_n = q[:n].ravel(), exact[:n].ravel()
    norms = np.linalg.norm(q), np.linalg.norm(exact_n)
    if min(norms) == 0:
        return {"psi_error": math.nan, "psi_scale": math.nan, "psi_agreement": math.nan}
    cosine = float(q @ exact_n / (norms[0] * norms[1]))
    best = optimal_q(level, (features @ weights)[gridworld.compile_level(level).successor], gamma)[:n]
    chosen = best[np.arange(n), q.reshape(n, -1).argmax(1)]
    return {"psi_error": math.sqrt(max(0.0, 1 - cosine ** 2)), "psi_scale": norms[0] / norms[1],
            "psi_agreement": float(np.mean(chosen >= best.max(1) - 1e-9))}


def diagnose_task(learner: Learner, features: np.ndarray, level: str, task: gridworld.Task, seed: int,
                  config: TrainConfig, identify_steps: int, eval_episodes: int,
                  replay: NStepReplay | None = None) -> dict:
    """Every measurement of the module docstring for one task, from seed `seed` (identification and
    evaluation as the task-family study makes them). With `AgentConfig.adapt_psi`, everything after the
    identification measures a copy of the learner whose psi was adapted offline to the identified w on the
    pretraining `replay` (`train.adapt_to_task`; `learner` itself is left as it was, for the next task):
    its scores with and without GPI, psi's quality, and its score under the best-case w (psi adapted to the
    identified w, not to that one)."""
    env = LevelSpec(level, task=task)
    optimal, random = gridworld.task_references(level, task)
    fit = fit_task(*task_data(learner, env, identify_steps, seed, config), seed=seed,
                   ridge=learner.config.identify_ridge)
    if learner.config.adapt_psi:
        learner = copy.deepcopy(learner)
        adapt_to_task(learner, replay, fit.w, seed)

    def score(w: torch.Tensor, gpi: bool = True) -> float:
        result = evaluate(learner, env, w, eval_episodes, seed, config, gpi=gpi)
        return gridworld.normalised_score(result.mean_return, optimal, random)

    best = best_fit(features, level, task)
    gamma = learner.config.gamma
    return {"task": task.name, "task_class": task.task_class, "identified": int(fit.identified),
            "zero_shot": score(fit.w), "zero_shot_no_gpi": score(fit.w, gpi=False),
            "best_case": score(best.w), "r2": best.r2,
            "planner_best": planner_score(features, level, task, best.coefficients, gamma),
            "planner_identified": planner_score(features, level, task, fit.coefficients, gamma),
            **psi_quality(learner, features, level, fit.w)}


def run_diagnosis_group_rows(specs: Sequence[RunSpec], pretrain_steps: int,
                             identify_steps: int = IDENTIFY_STEPS, eval_episodes: int = EVAL_EPISODES,
                             train: TrainConfig | None = None) -> list[list[dict]]:
    """Runs that differ only in their seed, pretrained as one seed group, then each task of the level's
    family diagnosed per run (`diagnose_task`; task t from seed `task_seed(seed, t)`, as in the task-family
    study)."""
    start, first = time.perf_counter(), check_seed_group(specs)
    config = with_overrides(train or TrainConfig(progress=False), first.overrides)
    seeds = [spec.seed for spec in specs]
    trained = pretrain_seeds(first.method, first.env, pretrain_steps, seeds, config)
    out = []
    for (learner, log), seed in zip(trained, seeds, strict=True):
        features = state_features(learner, first.env)
        shared = {"method": first.method, "level": first.env, "seed": seed,
                  "overrides": json.dumps(first.overrides) if first.overrides else "",
                  "config_hash": config_hash(pretrain_steps, identify_steps, eval_episodes, config),
                  "effective_rank": effective_rank(features)}
        out.append([{**shared, **diagnose_task(learner, features, first.env, task, task_seed(seed, index),
                                               config, identify_steps, eval_episodes, log.replay)}
                    for index, task in enumerate(gridworld.task_family(first.env))])
    wall = round((time.perf_counter() - start) / len(specs), 3)
    return [[{**row, "wall_seconds": wall} for row in rows] for rows in out]


def run_diagnosis_rows(spec: RunSpec, pretrain_steps: int, identify_steps: int = IDENTIFY_STEPS,
                       eval_episodes: int = EVAL_EPISODES, train: TrainConfig | None = None) -> list[dict]:
    """One run of `run_diagnosis_group_rows`."""
    return run_diagnosis_group_rows([spec], pretrain_steps, identify_steps, eval_episodes, train)[0]


def check_diagnosis_plan(level: str, seeds: Sequence[int], pretrain_steps: int, arms: Sequence[str],
                         overrides: Sequence[tuple[str, object]] = (), train: TrainConfig | None = None, *,
                         identify_steps: int = IDENTIFY_STEPS, eval_episodes: int = EVAL_EPISODES,
                         names: dict[str, str] | None = None) -> list[int]:
    """Everything a diagnosis can be refused for, before any worker starts (as
    `task_families.check_family_plan` checks a study): a level with a task family; one or more distinct arms
    that act on a w (`DIAGNOSABLE`); one or more distinct seeds, each in range (`checks.check_seeds`); and per
    arm, with `overrides` applied, what `gridworld run` checks of its pretraining, identification and
    evaluation (`experiments.check_run`: each phase's env steps, memory, device, k against the minibatch).
    `names`: how the caller spells the arguments (e.g. {"seeds": "--seeds"}). Returns the seeds."""
    names = {"level": "level", "seeds": "seeds", "arms": "arms", "pretrain_steps": "pretrain_steps",
             **(names or {})}
    if not isinstance(level, str) or level not in gridworld.TASK_FAMILIES:
        raise ValueError(f"{names['level']} must be a level with a task family, one of "
                         f"{', '.join(gridworld.TASK_FAMILIES)}; got {level!r}")
    seeds = check_seeds(seeds, names["seeds"])
    arms = [arms] if isinstance(arms, str) else list(arms)
    if not arms or len(set(arms)) < len(arms) or any(arm not in DIAGNOSABLE for arm in arms):
        raise ValueError(f"{names['arms']} must name one or more distinct arms that act on a task vector, of "
                         f"{', '.join(map(repr, DIAGNOSABLE))}; got {arms}")
    steps = check_int(names["pretrain_steps"], pretrain_steps)
    train = train or TrainConfig(progress=False)
    check_type("train", train, TrainConfig, "a TrainConfig (e.g. TrainConfig(progress=False))")
    for arm in arms:
        method, arm_overrides = FAMILY_ARMS[arm]
        config = with_overrides(train, (*arm_overrides, *overrides))
        check_run(level, Budget(pretrain_steps=steps, identify_steps=identify_steps,
                                eval_episodes=eval_episodes), config, method=method)
    return seeds


def run_diagnosis(level: str, seeds: Sequence[int], out_dir: str | Path, pretrain_steps: int = 256_000, *,
                  arms: Sequence[str] = ARMS_DIAGNOSED, overrides: Sequence[tuple[str, object]] = (),
                  train: TrainConfig | None = None, workers: int | None = None,
                  executor: Executor | None = None, progress: bool = True, seeds_per_group: int = 5,
                  identify_steps: int = IDENTIFY_STEPS, eval_episodes: int = EVAL_EPISODES) -> SweepReport:
    """Every arm of `arms` x seed of `seeds` on `level` into out_dir/zero_shot.csv (resumable), each arm with
    `overrides` added (e.g. a fix under test: (("agent.feature_dim", 64),)); each task identified from
    `identify_steps` and scored over `eval_episodes` (the task-family study's by default; other values are
    recorded with the results); the whole plan checked first (`check_diagnosis_plan`)."""
    train = train or TrainConfig(progress=False)
    seeds = check_diagnosis_plan(level, seeds, pretrain_steps, arms, overrides, train,
                                 identify_steps=identify_steps, eval_episodes=eval_episodes)
    specs = [RunSpec(FAMILY_ARMS[arm][0], level, seed, (*FAMILY_ARMS[arm][1], *overrides))
             for arm in arms for seed in seeds]
    kwargs = {"pretrain_steps": pretrain_steps, "identify_steps": identify_steps,
              "eval_episodes": eval_episodes, "train": train}
    per_task = {name: value for name, value, default in (("identify_steps", identify_steps, IDENTIFY_STEPS),
                                                         ("eval_episodes", eval_episodes, EVAL_EPISODES))
                if value != default}  # recorded when not the study's (the records before them hold neither)
    return run_sweep(specs, partial(run_diagnosis_rows, **kwargs), Path(out_dir) / RESULTS,
                     config={"pretrain_steps": pretrain_steps, "train": train, **per_task}, workers=workers,
                     executor=executor, progress=progress, group=partial(run_diagnosis_group_rows, **kwargs),
                     group_size=seeds_per_group)


def losses(row: dict) -> dict[str, float]:
    """The score a task's zero-shot lost to each link (module docstring), on normalised returns clipped to
    [0, 1]."""
    best, identified, zero_shot = (min(1.0, max(0.0, float(row[key])))
                                   for key in ("planner_best", "planner_identified", "zero_shot"))
    return {"phi": 1 - best, "identification": max(0.0, best - identified),
            "psi": max(0.0, identified - zero_shot)}


def diagnosed_arm(method: str, overrides: str) -> tuple[str, str]:
    """(arm, fix) of a zero_shot.csv row: the arm of `FAMILY_ARMS` whose method is the row's and whose
    overrides begin the row's (`run_diagnosis` appends a fix under test after them; the longest such arm), and
    the fix, the overrides after the arm's as JSON ('' when none)."""
    pairs = tuple(tuple(pair) for pair in json.loads(overrides)) if overrides else ()
    matches = [(name, arm_overrides) for name, (arm_method, arm_overrides) in FAMILY_ARMS.items()
               if arm_method == method and pairs[:len(arm_overrides)] == arm_overrides]
    if not matches:
        raise ValueError(f"{(method, pairs)} begins no arm of the study; arms: {', '.join(FAMILY_ARMS)}")
    name, arm_overrides = max(matches, key=lambda match: len(match[1]))
    fix = pairs[len(arm_overrides):]
    return name, json.dumps([list(pair) for pair in fix]) if fix else ""


def rows_by_arm(rows: Sequence[dict]) -> dict[str, tuple[str, list[dict]]]:
    """arm -> (its fix, its rows) of zero_shot.csv rows (`diagnosed_arm`), arms in the order they first
    appear; refused when one arm's rows mix fixes (a directory holds one diagnosis)."""
    found: dict[str, dict[str, list[dict]]] = {}
    for row in rows:
        arm, fix = diagnosed_arm(row["method"], row["overrides"])
        found.setdefault(arm, {}).setdefault(fix, []).append(row)
    mixed = {arm: sorted(fixes) for arm, fixes in found.items() if len(fixes) > 1}
    if mixed:
        raise ValueError(f"a diagnosis holds one fix per arm; these arms mix several: {mixed}")
    return {arm: next(iter(fixes.items())) for arm, fixes in found.items()}


def capping_links(rows: Sequence[dict]) -> list[dict]:
    """Per level, arm and task class: the means over tasks x seeds of every measurement and of each link's
    loss (`losses`), and the link that lost the most (ties go to the chain's earlier link). The rows of one
    arm must share one fix (`rows_by_arm`)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for arm, (_, members) in rows_by_arm(rows).items():
        for row in members:
            groups.setdefault((row["level"], arm, row["task_class"]), []).append(row)
    out = []
    for (level, arm, task_class), members in groups.items():
        lost = {link: float(np.mean([losses(row)[link] for row in members])) for link in LINKS}
        means = {key: float(np.nanmean([float(row[key]) for row in members]))
                 for key in ("zero_shot", "zero_shot_no_gpi", "best_case", "r2", "planner_best",
                             "planner_identified", "psi_error", "psi_scale", "psi_agreement", "identified")}
        out.append({"level": level, "arm": arm, "task_class": task_class, "pairs": len(members), **means,
                    **{f"lost_to_{link}": value for link, value in lost.items()},
                    "capping_link": max(LINKS, key=lambda link: (lost[link], -LINKS.index(link)))})
    return out


def read_diagnosis(out_dir: str | Path) -> list[dict]:
    """The rows of out_dir/zero_shot.csv."""
    return read_rows(Path(out_dir) / RESULTS, COLUMNS)


def run_zero_shot(level: str, seeds: Sequence[int], out_dir: str | Path, pretrain_steps: int = 256_000,
                  **options) -> SweepReport:
    """The diagnosis as the zero-shot command runs it: `run_diagnosis` (`options` as it takes them), then the
    link that caps zero-shot per arm and task class, OUT/capping_links.csv (`capping_links`)."""
    report = run_diagnosis(level, seeds, out_dir, pretrain_steps, **options)
    write_csv_atomic(Path(out_dir) / "capping_links.csv", capping_links(read_diagnosis(out_dir)))
    return report
