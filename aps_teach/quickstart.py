"""`aps-teach`, with no arguments: APS on the easy level, start to finish, in about a minute on a laptop CPU.

Pretrain reward-free (compiled engine), identify the task by least squares, evaluate zero-shot (GPI),
fine-tune on the task reward with evaluations on the way, and draw one figure of what was learnt: the two
terms of APS's intrinsic reward over the level, the value map with the greedy path, and success before
and after fine-tuning (`plots.plot_run_overview`). OUT is a run directory as `aps-teach gridworld run`
writes it (config.json, pretrain/, finetune/, summary.json), plus overview.png.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import matplotlib
import torch

import gridworld
from aps_teach.experiments import (
    DEFAULT_EVAL_EPISODES,
    DEFAULT_FINETUNE_STEPS,
    DEFAULT_IDENTIFY_STEPS,
    DEFAULT_PRETRAIN_STEPS,
    GridworldResult,
    adapt_and_score,
    check_run,
    claim_run,
    run_record,
)
from aps_teach.files import write_text_atomic
from aps_teach.rollouts import greedy_rollout
from aps_teach.run_dir import RunDir
from aps_teach.snapshots import Snapshot, take_snapshot
from aps_teach.train import RoundEnd, TrainConfig, pretrain, with_method


@dataclass
class QuickstartConfig:
    """APS on a gridworld, start to finish: pretrain reward-free, identify the task, evaluate zero-shot,
    fine-tune, evaluate; write OUT/overview.png."""

    out: Path = Path("runs/quickstart")
    """Run directory (config.json, pretrain/, finetune/, summary.json, overview.png)."""
    method: Literal["aps", "visr"] = "aps"
    """aps | visr: the methods whose reward has the term phi(s')^T w the figure draws."""
    level: Literal["easy", "hard"] = "easy"
    seed: int = 0
    pretrain_steps: int = DEFAULT_PRETRAIN_STEPS
    finetune_steps: int = DEFAULT_FINETUNE_STEPS
    identify_steps: int = DEFAULT_IDENTIFY_STEPS
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    force: bool = False
    """Replace a run of another config in OUT (its checkpoints and results are deleted); a run of this
    config there is started over without it."""
    train: TrainConfig = field(default_factory=TrainConfig)


@dataclass
class QuickstartResult:
    result: GridworldResult
    snapshot: Snapshot
    """The learner and kNN particles at the end of pretraining."""
    figure: Path


def run_quickstart(config: QuickstartConfig) -> QuickstartResult:
    """The whole run into `config.out`, then overview.png; prints a summary."""
    budget = {"pretrain_steps": config.pretrain_steps, "finetune_steps": config.finetune_steps,
              "identify_steps": config.identify_steps, "eval_episodes": config.eval_episodes}
    check_run(config.level, budget, config.train, method=config.method, seed=config.seed)
    if matplotlib.get_backend().lower() not in {"agg", "module://matplotlib_inline.backend_inline"}:
        matplotlib.use("Agg")  # a command line draws to a file, never to a window
    from aps_teach.plots import plot_run_overview, save_figure

    train = with_method(config.train, config.method)
    out = Path(config.out)
    claim_run(RunDir(out), run_record(config.method, config.level, config.seed, budget, train), resume=False,
              force=config.force)
    kept: list[Snapshot] = []

    def keep_last(end: RoundEnd) -> None:
        if end.round == end.rounds:
            kept.append(take_snapshot(end, config.level, max_particles=2000, seed=config.seed))

    start = time.perf_counter()
    learner, log = pretrain(config.method, config.level, config.pretrain_steps, config.seed, train,
                            run_dir=out / "pretrain", on_round=keep_last)
    result = adapt_and_score(learner, config.method, config.level, seed=config.seed, pretrain_log=log,
                             start=start, finetune_steps=config.finetune_steps,
                             identify_steps=config.identify_steps, eval_episodes=config.eval_episodes,
                             config=train, run_dir=out)
    write_text_atomic(out / "summary.json", json.dumps(
        {k: v for k, v in asdict(result).items() if k != "metrics"}, indent=2))
    snapshot, w = kept[0], torch.tensor(result.task_w)
    zero_shot = greedy_rollout(snapshot.learner, config.level, w, config.seed,
                               gpi=snapshot.learner.config.gpi)
    finetuned = greedy_rollout(learner, config.level, w, config.seed)
    figure = out / "overview.png"
    title = (f"{config.method} on the {config.level} level, seed {config.seed}: "
             f"{config.pretrain_steps:,} reward-free steps, then {config.finetune_steps:,} on the task")
    save_figure(plot_run_overview(gridworld.resolve_level(config.level), snapshot.learner, snapshot.particles,
                                  w, zero_shot, finetuned, result.adaptation, title), figure)
    print(f"{config.method} on {config.level}, seed {config.seed}: pretraining "
          f"{result.pretrain_seconds:.0f} s, coverage {result.state_coverage:.2f}, target reached: "
          f"{result.target_reached}")
    print(f"zero-shot success {result.zero_shot_success:.2f} (identified w, GPI) -> fine-tuned "
          f"{result.finetuned_success:.2f}; {result.wall_seconds:.0f} s in all")
    print(f"wrote {out}/ (checkpoints, metrics, summary.json) and {figure}")
    return QuickstartResult(result, snapshot, figure)
