"""A whole Atari run (`run`: pretrain, identify, zero-shot score, fine-tune, evaluate) and its run directory:
config.json, pretrain/ and finetune/ checkpoints, task.json (the identified w) and scores.csv.

The arms (`ATARI_METHODS`): the learner's methods (visr, apt, aps, dqn) and `random`, uniformly random
actions scored by the same evaluation (no training, no checkpoint: its row's checkpoint is "none").
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Literal

import torch

from aps_teach.atari.agent import AtariLearner, agent_config
from aps_teach.atari.config import RUN_FIELDS, AtariTrainConfig, atari_from_dict
from aps_teach.atari.envs import check_game, check_rom
from aps_teach.atari.train import (
    Identified,
    ScoreResult,
    check_replay_memory,
    evaluate,
    evaluate_random,
    evaluate_zero_shot,
    finetune,
    identify_task,
    new_learner,
    phase_steps,
    pretrain,
    run_identity,
)
from aps_teach.infra.checks import check_seed
from aps_teach.infra.devices import resolve_device
from aps_teach.infra.files import jsonable, read_json, write_csv_atomic, write_text_atomic
from aps_teach.infra.phases import check_checkpoint, check_compile_backend
from aps_teach.infra.run_dir import FINISHED_HINT, RunDir
from aps_teach.infra.sweeps import read_rows
from aps_teach.learner.config import METHODS, TASK_CONDITIONED, check_method, pretrains

ATARI_METHODS = (*METHODS, "random")
AtariMethod = Literal["visr", "apt", "aps", "dqn", "random"]
"""An Atari arm: a learner's method, or `random` (uniform actions, the floor every score is read against)."""

SCORE_COLUMNS = {"game": "str", "method": "str", "seed": "count", "checkpoint": "str", "score": "float",
                 "human_normalised": "float?"}
"""The columns of a scores.csv (a run's or a sweep's) its readers need (`sweeps.read_rows`)."""


def append_score_row(path: str | os.PathLike, *rows: dict) -> None:
    """Add `rows` to the scores CSV at `path` (rewritten atomically with the rows already there, which are
    checked first: `sweeps.read_rows`)."""
    write_csv_atomic(path, [*read_rows(path, SCORE_COLUMNS), *rows])


def score_row(result: ScoreResult, method: str, seed: int, phase: str, config: AtariTrainConfig,
              task_w: torch.Tensor | None, identified: Identified | None = None) -> dict:
    """One line of scores.csv: game, method, seed, which checkpoint (pretrain: the zero-shot score; none: the
    random arm), budgets (reward-free steps, fine-tuning steps, and the reward steps seen in all: task
    identification's, when `identified` says, plus fine-tuning's), how many identification steps had a
    reward (0: w was drawn at random), the n-step reward mode it was pretrained with, whether it acted by
    GPI, raw and normalised score."""
    atari = config.atari
    finetuned = phase_steps(atari, "finetune", method) if phase == "finetune" else 0
    unknown = method in TASK_CONDITIONED and (identified is None or identified.steps is None)
    seen = "" if unknown else (identified.steps if identified is not None else 0) + finetuned
    rewarded = "" if identified is None or identified.rewarded is None else identified.rewarded
    return {"game": result.game, "method": method, "seed": seed, "checkpoint": phase,
            "pretrain_steps": atari.pretrain_steps if pretrains(method) else 0,
            "finetune_steps": finetuned, "reward_steps": seen, "identify_rewards": rewarded,
            "nstep_reward": atari.nstep_reward, "gpi": result.gpi,
            "games": result.episodes, "score": result.score, "human_normalised": result.human_normalised,
            "task_w": "" if task_w is None else " ".join(f"{x:.6f}" for x in task_w.tolist())}


def run_record(method: str, game: str, seed: int, config: AtariTrainConfig) -> dict:
    """An Atari run's config.json: game, method, seed and the whole training config."""
    return jsonable({"game": game, "method": method, "seed": seed, "train": asdict(config)})


def start_run_dir(run: RunDir, method: str, game: str, seed: int, config: AtariTrainConfig, resume: bool,
                  force: bool = False) -> RunDir:
    """Check this run's inputs (`check_run`), then claim `run`, a directory the caller owns (`with
    RunDir(out) as run:`), for it (`RunDir.claim`): another run there is refused (naming the differing
    fields) unless `force`; `resume` continues the same run (game, method, seed, protocol, envs; device,
    threads, logging and the like may differ); a finished run is refused unless `force` (or `resume`);
    otherwise the run starts over (an earlier run's checkpoints, task.json and scores.csv removed)."""
    check_run(method, game, seed, config)
    run.claim(run_record(method, game, seed, config), resume=resume, force=force,
              ignore=[f"train.{f.name}" for f in fields(AtariTrainConfig) if f.name not in RUN_FIELDS],
              finished_hint=f"score it with `aps-teach atari evaluate --out {run.path}`, {FINISHED_HINT}")
    return run


def check_run(method: str, game: str, seed: int, config: AtariTrainConfig) -> None:
    """Everything a run can be refused for before it writes anything: the game's ROM, the method, the seed,
    k against the minibatch, a device this machine does not have, --compile without a working backend, and
    replays that would not fit in the device's free memory."""
    check_rom(game)
    check_method(method, ATARI_METHODS)
    check_seed(seed)
    device = resolve_device(config.device)
    if method == "random":  # no learner
        return
    agent_config(config.atari, method).check_particles()  # k against the minibatch, once the method is known
    if config.compile:
        check_compile_backend(config.device)
    for phase in ("pretrain", "finetune") if pretrains(method) else ("finetune",):
        check_replay_memory(config.atari, config.num_envs, phase, method, device)


def read_run_config(out: str | os.PathLike) -> tuple[str, str, int, AtariTrainConfig]:
    """(method, game, seed, config) of a run directory's config.json (FileNotFoundError if there is none,
    ValueError naming the file if it is corrupt)."""
    run = RunDir(out)
    saved = run.read_config(("game", "method", "seed", "train"),
                            hint=f"run `aps-teach atari pretrain --out {out}` first")
    try:
        train = dict(saved["train"])
        config = AtariTrainConfig(**{**train, "atari": atari_from_dict(train["atari"])})
        return saved["method"], saved["game"], int(saved["seed"]), config
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"corrupt run config {run.config_path}: not an Atari run config of this version "
                         f"({error})") from None


def check_run_checkpoint(path: Path, meta: dict, method: str, game: str, seed: int,
                         config: AtariTrainConfig) -> None:
    """Refuse a checkpoint (its `load_learner` metadata) that is not of the run its config.json describes,
    naming the fields that differ."""
    check_checkpoint(path, meta, run_identity(method, game, seed, config))


def identify_or_load(learner: AtariLearner, game: str, seed: int, config: AtariTrainConfig,
                     out: Path | None) -> Identified | None:
    """The task w for fine-tuning and its identification's record (`train.Identified`): None for apt/dqn;
    else OUT/task.json if there (steps and rewarded None if it predates their record), else `identify_task`
    (saved to OUT/task.json)."""
    if not learner.config.task_conditioned:
        return None
    path = out / "task.json" if out is not None else None
    if path is not None and path.exists():
        saved = read_json(path, "the run's task vector", "delete it to identify the task again")
        if not isinstance(saved, dict) or "w" not in saved:
            raise ValueError(f"{path} holds no task vector w; delete it to identify the task again")
        return Identified(torch.tensor(saved["w"]), saved.get("identify_steps"),
                          saved.get("identify_rewards"))
    identified = identify_task(learner, game, seed, config)
    if path is not None:
        write_text_atomic(path, json.dumps({"w": identified.w.tolist(), "identify_steps": identified.steps,
                                            "identify_rewards": identified.rewarded}))
    return identified


def run(method: AtariMethod, game: str, seed: int, config: AtariTrainConfig | None = None, *,
        out: str | os.PathLike | None = None, resume: bool = False,
        force: bool = False) -> tuple[AtariLearner | None, ScoreResult]:
    """The whole pipeline: pretrain (not dqn), identify the task and score it zero-shot (visr, aps:
    `evaluate_zero_shot`), fine-tune, evaluate; returns the fine-tuned learner and score (the random arm:
    no learner, its score, `evaluate_random`).

    With `out` (claimed by `start_run_dir`; `force` replaces another run there): config.json, pretrain/
    and finetune/ (metrics.csv, checkpoint.pt), task.json and in scores.csv the zero-shot row (checkpoint
    pretrain; visr, aps) and the fine-tuned row, both written at the end; `resume=True` continues each
    phase from its checkpoint (a finished phase is loaded) and scores the pretrained learner again (the
    same numbers: same checkpoint, same seed)."""
    config = config or AtariTrainConfig()
    game = check_game(game)
    if out is None:
        check_run(method, game, seed, config)
        return _run_phases(method, game, seed, config, None)
    with RunDir(out) as claimed:
        start_run_dir(claimed, method, game, seed, config, resume, force)
        return _run_phases(method, game, seed, config, claimed)


def _run_phases(method: AtariMethod, game: str, seed: int, config: AtariTrainConfig,
                claimed: RunDir | None) -> tuple[AtariLearner | None, ScoreResult]:
    """`run` after its checks, in the run directory `claimed` (owned and claimed) if given."""
    out = claimed.path if claimed is not None else None
    if method == "random":
        result = evaluate_random(game, seed, config)
        if out is not None:
            append_score_row(out / "scores.csv", score_row(result, method, seed, "none", config, None))
        return None, result

    def phase_dir(name: str) -> tuple[Path | None, bool]:
        if claimed is None:
            return None, False
        return claimed.path / name, claimed.resumes(name)

    if not pretrains(method):
        learner = new_learner(method, game, seed, config)
    else:
        run_dir, again = phase_dir("pretrain")
        learner, _ = pretrain(method, game, seed, config, run_dir=run_dir, resume=again)
    identified = identify_or_load(learner, game, seed, config, out)
    w = None if identified is None else identified.w
    zero_shot = None
    if learner.config.task_conditioned:
        zero_shot = evaluate_zero_shot(learner, game, w, seed, config)
    run_dir, again = phase_dir("finetune")
    finetune(learner, game, w, seed, config, run_dir=run_dir, resume=again)
    result = evaluate(learner, game, w, seed, config)
    if out is not None:  # both rows in one write: a run's scores.csv holds both or neither
        rows = [] if zero_shot is None else [score_row(zero_shot, method, seed, "pretrain", config, w,
                                                       identified)]
        append_score_row(out / "scores.csv", *rows,
                         score_row(result, method, seed, "finetune", config, w, identified))
    return learner, result
