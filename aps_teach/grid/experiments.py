"""Whole experiments: `run_gridworld` = pretrain -> identify task -> zero-shot eval -> fine-tune -> eval."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch

import gridworld
from aps_teach.grid.blame import ZeroShotBlame, zero_shot_blame
from aps_teach.grid.config import RUN_SETTINGS, TrainConfig, with_method
from aps_teach.grid.memory import check_memory
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.rounds import RoundEnd, RoundHook, check_identity
from aps_teach.grid.train import (
    SuccessResult,
    adapt_to_task,
    evaluate,
    finetune,
    finetune_seeds,
    load_learner,
    new_learner,
    pretrain,
    pretrain_seeds,
    task_data,
)
from aps_teach.infra.checks import (
    check_field,
    check_int,
    check_seed,
    check_steps,
    check_type,
)
from aps_teach.infra.devices import resolve_device
from aps_teach.infra.files import read_json, write_text_atomic
from aps_teach.infra.phases import PhaseLog
from aps_teach.infra.run_dir import FINISHED_HINT, RUN_FILES, RunDir, say
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig, check_method, check_no_fb, pretrains
from aps_teach.learner.tasks import fit_task

DEFAULT_PRETRAIN_STEPS = 64_000
"""Reward-free env steps (the budget study, docs/studies.md, chose it)."""
DEFAULT_FINETUNE_STEPS = 32_000
"""Env steps on the task reward, the same for every method (the dqn baseline's whole budget)."""
DEFAULT_IDENTIFY_STEPS = 16_000
"""Env steps of random-w rollouts whose (phi(s'), reward) pairs identify the task (paper: 40k on Atari)."""
DEFAULT_EVAL_EPISODES = 64
DEFAULT_ADAPTATION_POINTS = 4
"""Evaluations during fine-tuning, evenly spaced in rounds (the last one is the fine-tuned score)."""


@dataclass(frozen=True)
class Budget:
    """The budget of a gridworld run, the same for every method: each number an integer >= 1 (a ValueError
    naming the field otherwise). The step budgets run in whole rounds (`whole_rounds`)."""

    pretrain_steps: int = DEFAULT_PRETRAIN_STEPS
    """Reward-free env steps (rounded up to whole rounds of num_envs x 100, said and recorded)."""
    finetune_steps: int = DEFAULT_FINETUNE_STEPS
    """Env steps on the task reward (rounded up likewise)."""
    identify_steps: int = DEFAULT_IDENTIFY_STEPS
    """Env steps of random-w rollouts for least-squares task identification (visr, aps; rounded up
    likewise)."""
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    """Greedy episodes of each evaluation."""

    def __post_init__(self) -> None:
        for budget in fields(self):
            check_field(self, budget.name, check_int)


@dataclass
class GridworldResult:
    """What one method x level x seed run measured."""

    method: str
    level: str
    seed: int
    zero_shot_success: float
    """Success rate of the greedy policy right after pretraining and task identification (dqn: untrained)."""
    zero_shot_return: float
    finetuned_success: float
    finetuned_return: float
    state_coverage: float
    """Fraction of reachable (position, keys held) states visited in pretraining (dqn: in fine-tuning)."""
    visitation_entropy: float
    """Entropy of the visits over those states, over log(number of states): 1 for even visits."""
    states_visited: int
    keys_picked: int
    """Distinct keys ever picked up in pretraining (dqn: in fine-tuning)."""
    target_reached: bool
    """Whether pretraining ever reached the target (dqn: fine-tuning)."""
    adaptation: list[dict]
    """Success against fine-tuning steps: {finetune_steps, success_rate, return} from 0 (zero-shot) to the
    whole budget (fine-tuned)."""
    task_w: list[float] | None
    """The identified task vector (visr, aps); None for apt and dqn."""
    blame: ZeroShotBlame | None
    """Where the zero-shot score was lost (`aps_teach.grid.blame`; visr, aps); None for apt and dqn."""
    pretrain_seconds: float
    """Wall seconds of pretraining's rounds, summed over the sessions that ran them (`PhaseLog.seconds`: a
    finished phase loaded by --resume keeps its time); 0 for dqn."""
    finetune_seconds: float
    """Wall seconds of fine-tuning's rounds and its evaluations on the way, summed likewise."""
    wall_seconds: float
    """The work the run's results cost, in wall seconds: this session's, from the start of the run to its
    summary, plus what earlier sessions' checkpoints record of the phase rounds they ran. Time lost to
    kills (work after a phase's last checkpoint, done again on resume) and pauses between sessions are not
    counted: the run's cost as if it had run in one go, comparable between runs however they were
    interrupted."""
    metrics: dict = field(default_factory=dict, repr=False)
    """Per-round metrics of each phase: {"pretrain": [...], "finetune": [...]}."""


ROUNDED_STEPS = ("pretrain_steps", "finetune_steps", "identify_steps")
"""The budgets a phase runs in whole rounds (every env plays to the round's end): rounded up, see
`whole_rounds`."""


def whole_rounds(budget: Budget, config: TrainConfig, *, announce: bool = False,
                 names: tuple[str, ...] = ROUNDED_STEPS) -> Budget:
    """`budget` as the phases run it: each of `names` (default `ROUNDED_STEPS`) rounded up to whole rounds of
    `num_envs` x `gridworld.MAX_EPISODE_STEPS` env steps. A run records this effective budget (config.json,
    sweep records) and, with `announce`, says each number it rounded, so what a run claims is what it ran."""
    size = config.num_envs * gridworld.MAX_EPISODE_STEPS
    effective = replace(budget, **{name: -(-getattr(budget, name) // size) * size for name in names})
    for name in names:
        before, after = getattr(budget, name), getattr(effective, name)
        if announce and after != before:
            say(f"{name} {before:,} -> {after:,} env steps: whole rounds of "
                f"{config.num_envs:,} envs x {gridworld.MAX_EPISODE_STEPS} steps")
    return effective


def check_run(level: str, budget: Budget, config: TrainConfig | None = None, *, method: str | None = None,
              seed: int | None = None, announce: bool = False, pretrain_only: bool = False) -> Budget:
    """Raise ValueError for an unknown level or method, a seed out of range, a budget or config of another
    type (`InputTypeError`), or (with `config`) a kNN k the minibatch cannot serve, a device this machine
    lacks, a phase of more env steps than `MAX_PHASE_STEPS`, a learning_starts that leaves no phase an
    update (`check_learning_starts`), or phases whose replays would not fit in free memory: everything a
    run can be refused for besides its `Budget`'s own checks, before it writes anything. Returns the budget
    the run will have: with `config`, `whole_rounds` of `budget` (said, with `announce`, once every check
    passed); with `pretrain_only` (a run that pretrains now and fine-tunes later), only pretraining's steps
    are rounded and checked."""
    check_type("level", level, str, f"a level name, one of {', '.join(gridworld.ENV_IDS)}")
    if level not in gridworld.ENV_IDS:
        raise ValueError(f"unknown level {level!r}; valid levels: {', '.join(gridworld.ENV_IDS)}")
    check_type("budget", budget, Budget, "a Budget (e.g. Budget(pretrain_steps=3200))")
    if method is not None:
        check_method(method)
    if seed is not None:
        check_seed(seed)
    if config is None:
        return budget
    check_type("config", config, TrainConfig, "a TrainConfig (the learner's settings go in its agent field: "
                                              "TrainConfig(agent=AgentConfig(...)))")
    config = config if method is None else replace(config, agent=replace(config.agent, method=method))
    config.agent.check_particles()
    config.agent.check_task_options()
    check_no_fb(config.agent)
    resolve_device(config.device, "--device")
    names = ("pretrain_steps",) if pretrain_only else ROUNDED_STEPS
    effective = whole_rounds(budget, config, names=names)
    pretrains = config.agent.pretrains
    for name in names:
        if name != "pretrain_steps" or pretrains:
            check_steps(name, getattr(effective, name))
    if not pretrain_only:
        check_steps("eval_episodes", -(-budget.eval_episodes // config.num_envs) * config.num_envs
                    * gridworld.MAX_EPISODE_STEPS)
    identifies = config.agent.task_conditioned and not pretrain_only
    check_memory(level, config, pretrain_steps=effective.pretrain_steps if pretrains else 0,
                 finetune_steps=0 if pretrain_only else effective.finetune_steps,
                 identify_steps=effective.identify_steps if identifies else 0)
    check_learning_starts(effective, config, pretrain_only=pretrain_only)
    if announce:
        whole_rounds(budget, config, announce=True, names=names)
        check_learning_starts(effective, config, pretrain_only=pretrain_only, announce=True)
    return effective


def check_learning_starts(budget: Budget, config: TrainConfig, *, pretrain_only: bool = False,
                          announce: bool = False) -> None:
    """A phase updates only once `learning_starts` env steps are collected, so a phase of no more steps makes
    no update. Refuse (ValueError) a run in which no phase would update: its numbers would be an untrained
    agent's, reported as results. A phase without updates beside one with them may be meant (fine-tuning
    that keeps the zero-shot policy, a fine-tuning-only baseline): with `announce`, one warning line each."""
    phases = {"pretraining": budget.pretrain_steps} if config.agent.pretrains else {}
    if not pretrain_only:
        phases["fine-tuning"] = budget.finetune_steps
    starts = config.learning_starts
    idle = {name: steps for name, steps in phases.items() if steps <= starts}
    if idle and len(idle) == len(phases):
        shown = " and ".join(f"{name}'s {steps:,}" for name, steps in phases.items())
        raise ValueError(f"learning_starts {starts:,} is not below {shown} env steps: no phase would make an "
                         "update, and the run would report an untrained agent's numbers; valid: "
                         f"learning_starts < {max(phases.values()):,}")
    effect = {"pretraining": "fine-tuning starts from an untrained learner",
              "fine-tuning": "the fine-tuned scores are the pretrained learner's"}
    for name, steps in idle.items() if announce else ():
        say(f"warning: learning_starts {starts:,} is not below {name}'s {steps:,} env steps: {name} makes no "
            f"update ({effect[name]})")


def adaptation_rounds(rounds: int, points: int) -> set[int]:
    """The fine-tuning rounds after which to evaluate: `points` of them, evenly spaced, the last included."""
    return {math.ceil(rounds * k / points) for k in range(1, points + 1)}


def adapt_and_score(learner: Learner, method: str, level: str, budget: Budget, config: TrainConfig, *,
                    seed: int, pretrain_log: PhaseLog | None, start: float, run: RunDir | None = None,
                    adaptation_points: int = DEFAULT_ADAPTATION_POINTS) -> GridworldResult:
    """Everything after pretraining, for a learner pretrained from `start` (a perf_counter time), on the
    rest of `budget` (identify_steps, eval_episodes, finetune_steps): identify the task (visr, aps), evaluate
    zero-shot, fine-tune with `adaptation_points` evaluations on the way (the last is the fine-tuned score),
    into `run`'s finetune/ if given (continued if `run.resumes` it). `method` names the result. Coverage is
    the pretraining's (`pretrain_log`), or fine-tuning's when there was none (dqn)."""
    zero = zero_shot(learner, level, budget, config, seed, kept_replay(pretrain_log))
    log = finetune(learner, level, zero.w, budget.finetune_steps, seed, config,
                   run_dir=run.path / "finetune" if run else None,
                   resume=run is not None and run.resumes("finetune"),
                   on_round=adaptation_scorer(level, zero.w, budget, config, seed, adaptation_points))
    return gridworld_result(method, level, seed, zero, pretrain_log, log, time.perf_counter() - start)


@dataclass
class ZeroShot:
    """What a run measures before fine-tuning: the identified task (visr, aps), the zero-shot score and its
    blame."""

    w: torch.Tensor | None
    score: SuccessResult
    blame: ZeroShotBlame | None


def zero_shot(learner: Learner, level: str, budget: Budget, config: TrainConfig, seed: int,
              replay: NStepReplay | None = None) -> ZeroShot:
    """Identify the task (visr, aps: least squares on `task_data`, ridge with `AgentConfig.identify_ridge`),
    with `AgentConfig.adapt_psi` adapt psi to it offline on the pretraining `replay` (`adapt_to_task`; the
    learner then acts without GPI, as after fine-tuning), evaluate zero-shot (`eval_episodes`) and blame what
    it lost (`zero_shot_blame`)."""
    w = blame = None
    if learner.config.task_conditioned:
        features, rewards = task_data(learner, level, budget.identify_steps, seed, config)
        fit = fit_task(features, rewards, seed, ridge=learner.config.identify_ridge)
        w = fit.w
        if learner.config.adapt_psi:
            adapt_to_task(learner, replay, w, seed)
    score = evaluate(learner, level, w, budget.eval_episodes, seed, config)
    if w is not None:
        blame = zero_shot_blame(learner, level, fit, rewards, score.success_rate, lambda oracle_w: evaluate(
            learner, level, oracle_w, budget.eval_episodes, seed, config).success_rate)
    return ZeroShot(w, score, blame)


def kept_replay(pretrain_log: PhaseLog | None) -> NStepReplay | None:
    """The pretraining replay a log kept for psi's offline adaptation (`PhaseLog.replay`), or None (no
    pretraining: dqn)."""
    return None if pretrain_log is None else pretrain_log.replay


def adaptation_scorer(level: str, w: torch.Tensor | None, budget: Budget, config: TrainConfig, seed: int,
                      points: int = DEFAULT_ADAPTATION_POINTS) -> RoundHook:
    """The fine-tuning round hook that evaluates the learner after `points` evenly spaced rounds (the last
    included), into the round's metrics (eval_success, eval_return)."""
    def score(end: RoundEnd) -> None:
        if end.round in adaptation_rounds(end.rounds, points):
            result = evaluate(end.learner, level, w, budget.eval_episodes, seed, config)
            end.metrics.update(eval_success=result.success_rate, eval_return=result.mean_return)
    return score


def gridworld_result(method: str, level: str, seed: int, zero: ZeroShot, pretrain_log: PhaseLog | None,
                     log: PhaseLog, seconds: float) -> GridworldResult:
    """A run's result from its phases: `seconds` this session's wall time, to which the earlier sessions'
    phase times (`PhaseLog.earlier_seconds`) are added."""
    earlier = pretrain_log.earlier_seconds if pretrain_log is not None else 0.0
    curve = [{"finetune_steps": 0, "success_rate": zero.score.success_rate, "return": zero.score.mean_return}]
    curve += [{"finetune_steps": row["env_steps"], "success_rate": row["eval_success"],
               "return": row["eval_return"]} for row in log.metrics if "eval_success" in row]
    coverage = pretrain_log.coverage if pretrain_log is not None else log.coverage
    metrics = {"pretrain": pretrain_log.metrics} if pretrain_log is not None else {}
    return GridworldResult(
        method=method, level=level, seed=seed,
        zero_shot_success=zero.score.success_rate, zero_shot_return=zero.score.mean_return,
        finetuned_success=curve[-1]["success_rate"], finetuned_return=curve[-1]["return"],
        state_coverage=coverage["state_coverage"], visitation_entropy=coverage["visitation_entropy"],
        states_visited=coverage["states_visited"],
        keys_picked=coverage["keys_picked"], target_reached=coverage["target_reached"], adaptation=curve,
        task_w=None if zero.w is None else [round(x, 6) for x in zero.w.tolist()], blame=zero.blame,
        pretrain_seconds=pretrain_log.seconds if pretrain_log is not None else 0.0,
        finetune_seconds=log.seconds,
        wall_seconds=seconds + earlier + log.earlier_seconds,
        metrics={**metrics, "finetune": log.metrics},
    )


def run_gridworld(method: str, level: str, *, seed: int, budget: Budget = Budget(),
                  config: TrainConfig | None = None, run_dir: str | Path | None = None, resume: bool = False,
                  force: bool = False) -> GridworldResult:
    """One full run of the budget rounded up to whole rounds (`whole_rounds`: said when it changes, and
    recorded). dqn skips pretraining and identification (zero-shot = its untrained policy); apt
    skips identification (zero-shot = its pretrained policy). With `run_dir`, owns it for the run (a second
    process is refused) and claims it (`claim_run`: `resume` continues the run it holds from whatever its
    phases checkpointed, `force` replaces another run or starts a finished one over) and writes config.json,
    pretrain/ and finetune/ (metrics.csv, checkpoint.pt) and summary.json."""
    seed = check_seed(seed)
    budget, config = prepare_run(method, level, seed, budget, TrainConfig() if config is None else config)
    if run_dir is None:
        if resume:
            raise ValueError("resume continues a run directory: give run_dir")
        return run_pipeline(method, level, seed, budget, config)[1]
    with RunDir(run_dir) as run:
        claim_run(run, run_record(method, level, seed, budget, config), resume=resume, force=force)
        return run_pipeline(method, level, seed, budget, config, run)[1]


def prepare_run(method: str, level: str, seed: int, budget: Budget, config: TrainConfig, *,
                pretrain_only: bool = False) -> tuple[Budget, TrainConfig]:
    """What every entry point of a run does before it claims a directory: `check_run` (rounding to whole
    rounds said), and the training config with `method` set. The effective budget and that config."""
    budget = check_run(level, budget, config, method=method, seed=seed, announce=True,
                       pretrain_only=pretrain_only)
    return budget, with_method(config, method)


def run_record(method: str, level: str, seed: int, budget: Budget, config: TrainConfig, *,
               pretrain_only: bool = False) -> dict:
    """A gridworld run's config.json: what it is and every setting its numbers depend on (with
    `pretrain_only`, of the budget only pretrain_steps: the rest is recorded when it is fine-tuned). The
    method is the training config's (`train.agent.method`, read back by `run_method`), held nowhere else."""
    steps = {"pretrain_steps": budget.pretrain_steps} if pretrain_only else asdict(budget)
    return {"level": level, "seed": seed, **steps, "train": asdict(with_method(config, method))}


def run_method(saved: dict) -> str:
    """The method of a run directory's config.json (`run_record`)."""
    return saved["train"]["agent"]["method"]


def claim_run(run: RunDir, record: dict, *, resume: bool, force: bool,
              restart: tuple[str, ...] = RUN_FILES, finished_hint: str | None = None) -> dict:
    """`RunDir.claim` for a gridworld run (the `RUN_SETTINGS` of its training config may change on resume);
    the config the directory then holds. Inside `with run:`, which owns the directory. A finished run is
    refused with `finished_hint`, by default: score it with `aps-teach gridworld evaluate`, --resume or
    --force."""
    hint = finished_hint or f"score it with `aps-teach gridworld evaluate --out {run.path}`, {FINISHED_HINT}"
    return run.claim(record, resume=resume, force=force, restart=restart,
                     ignore=[f"train.{name}" for name in RUN_SETTINGS], finished_hint=hint)


def pretrain_phase(method: str, level: str, seed: int, budget: Budget, config: TrainConfig,
                   run: RunDir | None = None, on_round: RoundHook | None = None,
                   ) -> tuple[Learner, PhaseLog | None]:
    """The learner a run goes on to fine-tune and its pretraining log: dqn's untrained learner (no log),
    else `train.pretrain` for budget.pretrain_steps into `run`'s pretrain/ if given (continued from its
    checkpoint if `run.resumes` it; a finished phase is loaded)."""
    if not pretrains(method):
        return new_learner(method, level, seed, config), None
    return pretrain(method, level, budget.pretrain_steps, seed, config,
                    run_dir=run.path / "pretrain" if run else None,
                    resume=run is not None and run.resumes("pretrain"), on_round=on_round)


def run_pipeline(method: str, level: str, seed: int, budget: Budget, config: TrainConfig,
                 run: RunDir | None = None, *, on_pretrain_round: RoundHook | None = None,
                 ) -> tuple[Learner, GridworldResult]:
    """A run after `prepare_run` (and the claim of `run`): `pretrain_phase` (`on_pretrain_round` after each
    of its rounds), then `adapt_and_score`, each phase continued from its checkpoint in `run` if it has one;
    summary.json written at the end. The fine-tuned learner and the result."""
    start = time.perf_counter()
    learner, log = pretrain_phase(method, level, seed, budget, config, run, on_pretrain_round)
    result = adapt_and_score(learner, method, level, budget, config, seed=seed, pretrain_log=log, start=start,
                             run=run)
    if run is not None:
        write_summary(run.path, result)
    return learner, result


def run_pipeline_seeds(method: str, level: str, seeds: Sequence[int], budget: Budget, config: TrainConfig,
                       runs: Sequence[RunDir | None] | None = None) -> list[GridworldResult]:
    """`run_pipeline` of one method and level for each of `seeds`, as a seed group: pretraining and
    fine-tuning update the seeds together (`train.pretrain_seeds`, `train.finetune_seeds`), identification
    and evaluation run seed by seed. Each result equals its own run's where the machine passes
    `benchmarks/seed_groups.py`; its times are the group's over the number of seeds. `runs`: one claimed
    run directory per seed (each phase continued from its checkpoint there), or None."""
    start, runs = time.perf_counter(), list(runs) if runs is not None else [None] * len(seeds)
    if len(runs) != len(seeds):
        raise ValueError(f"a seed group of {len(seeds)} seeds needs as many run directories, got {len(runs)}")

    def dirs(phase: str) -> dict:
        if runs[0] is None:
            return {}
        return {"run_dirs": [run.path / phase for run in runs],
                "resume": [run.resumes(phase) for run in runs]}

    if not pretrains(method):
        learners, logs = [new_learner(method, level, seed, config) for seed in seeds], [None] * len(seeds)
    else:
        trained = pretrain_seeds(method, level, budget.pretrain_steps, seeds, config, **dirs("pretrain"))
        learners, logs = [learner for learner, _ in trained], [log for _, log in trained]
    zeros = [zero_shot(learner, level, budget, config, seed, kept_replay(log))
             for learner, seed, log in zip(learners, seeds, logs, strict=True)]
    hooks = [adaptation_scorer(level, zero.w, budget, config, seed)
             for zero, seed in zip(zeros, seeds, strict=True)]
    tuned = finetune_seeds(learners, level, [zero.w for zero in zeros], budget.finetune_steps, seeds, config,
                           on_round=hooks, **dirs("finetune"))
    seconds = (time.perf_counter() - start) / len(seeds)
    results = [gridworld_result(method, level, seed, zero, log, fine, seconds)
               for seed, zero, log, fine in zip(seeds, zeros, logs, tuned, strict=True)]
    for run, result in zip(runs, results, strict=True):
        if run is not None:
            write_summary(run.path, result)
    return results


SUMMARY = "summary.json"
"""A run directory's result file: the `GridworldResult` without its per-round metrics (those are in
pretrain/ and finetune/ metrics.csv)."""


def write_summary(run_dir: str | Path, result: GridworldResult) -> Path:
    """Write `result` as run_dir/summary.json (JSON, indent 2, atomically), its metrics left out."""
    path = Path(run_dir) / SUMMARY
    write_text_atomic(path, json.dumps({k: v for k, v in asdict(result).items() if k != "metrics"}, indent=2))
    return path


def read_summary(run_dir: str | Path) -> dict:
    """run_dir/summary.json as `write_summary` wrote it."""
    return read_json(Path(run_dir) / SUMMARY, "a run's summary",
                     "run it again (the same command with --resume finishes it), or restore the file")


def train_config(run: RunDir, saved: dict) -> TrainConfig:
    """The `TrainConfig` of a run directory's config.json, whose level, seed and budget are checked too: a
    ValueError naming the file and the field if it is not a config of this version, or was edited out of
    range (e.g. pretrain_steps -5)."""
    try:
        recorded = {budget.name: saved[budget.name] for budget in fields(Budget) if budget.name in saved}
        check_run(saved["level"], Budget(**recorded), seed=saved["seed"])
        train = dict(saved["train"])
        return TrainConfig(**{**train, "agent": AgentConfig(**train["agent"])})
    except KeyError as error:
        raise ValueError(f"corrupt run config {run.config_path}: no {error} field") from None
    except (TypeError, ValueError) as error:
        raise ValueError(f"corrupt run config {run.config_path}: {error} (not a config of this version, or "
                         "edited)") from None


def load_run_learner(run: RunDir, phase: str, saved: dict) -> tuple[Learner, dict]:
    """The learner of `phase`'s checkpoint in `run` and its metadata, refused (ValueError naming what
    differs) if the checkpoint is not of the run config.json describes (`saved`): method, level, seed,
    budget, training config."""
    path = run.checkpoint(phase)
    learner, meta = load_learner(path)
    identity = {"phase": phase, "method": run_method(saved), "art": level_art(saved["level"]),
                "seed": saved["seed"], "config": saved["train"]}
    if f"{phase}_steps" in saved:
        identity["steps"] = saved[f"{phase}_steps"]
    check_identity(path, meta, identity)
    return learner, meta


def level_art(level: str) -> list[str]:
    """The ASCII art of a built-in level, as checkpoints record it."""
    return list(gridworld.resolve_level(level).art)
