"""`aps-teach`, with no arguments: APS on the easy level, start to finish, in about a minute on a laptop CPU.

Pretrain reward-free (compiled engine), identify the task by least squares, evaluate zero-shot (GPI),
fine-tune on the task reward with evaluations on the way (`run_quickstart`, which returns what the figure
needs); the command (`aps_teach.cli.main`) then draws one figure of what was learnt: the two terms of APS's
intrinsic reward over the level, the value map with the greedy path, and success before and after
fine-tuning (`plots.plot_run_overview` of `cell_maps.overview_maps`). OUT is a run directory as
`aps-teach gridworld run` writes it (config.json, pretrain/, finetune/, summary.json), plus overview.png.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from tyro.conf import OmitArgPrefixes

from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import (
    Budget,
    GridworldResult,
    claim_run,
    prepare_run,
    run_pipeline,
    run_record,
)
from aps_teach.grid.rollouts import Rollout, greedy_rollout
from aps_teach.grid.rounds import RoundEnd
from aps_teach.grid.snapshots import Snapshot, take_snapshot
from aps_teach.infra.checks import check_seed
from aps_teach.infra.run_dir import RunDir


@dataclass
class QuickstartConfig:
    """APS on a gridworld, start to finish: pretrain reward-free, identify the task, evaluate zero-shot,
    fine-tune, evaluate; write OUT/overview.png."""

    out: Path = Path("runs/quickstart")
    """Run directory (config.json, pretrain/, finetune/, summary.json, overview.png)."""
    method: Literal["aps", "visr"] = "aps"
    """aps | visr: the methods whose reward has the term phi(s')^T w the figure draws."""
    level: Literal["easy", "hard", "deep"] = "easy"
    seed: int = 0
    budget: OmitArgPrefixes[Budget] = field(default_factory=Budget)
    """Steps of each phase and evaluation episodes (flags --pretrain-steps, ...)."""
    force: bool = False
    """Replace the run in OUT (its checkpoints and results are deleted): a run of another config, or a
    finished one (without --force, a finished run is kept and the command refused)."""
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        self.seed = check_seed(self.seed)


@dataclass
class QuickstartResult:
    result: GridworldResult
    snapshot: Snapshot
    """The learner and kNN particles at the end of pretraining."""
    w: torch.Tensor
    """The identified task vector."""
    zero_shot: Rollout
    """A greedy episode of the pretrained learner under w (GPI unless its config turns it off)."""
    finetuned: Rollout
    """A greedy episode of the fine-tuned learner under w."""


def run_quickstart(config: QuickstartConfig) -> QuickstartResult:
    """The whole run into `config.out` (config.json, pretrain/, finetune/, summary.json), and what its figure
    draws: the pretrained snapshot, w and a greedy episode before and after fine-tuning."""
    budget, train = prepare_run(config.method, config.level, config.seed, config.budget, config.train)
    kept: list[Snapshot] = []

    def keep_last(end: RoundEnd) -> None:
        if end.round == end.rounds:
            kept.append(take_snapshot(end, config.level, max_particles=2000, seed=config.seed))

    with RunDir(config.out) as run:
        claim_run(run, run_record(config.method, config.level, config.seed, budget, train), resume=False,
                  force=config.force, finished_hint="give --force to run it again, or another --out")
        learner, result = run_pipeline(config.method, config.level, config.seed, budget, train, run,
                                       on_pretrain_round=keep_last)
    snapshot, w = kept[0], torch.tensor(result.task_w)
    zero_shot = greedy_rollout(snapshot.learner, config.level, w, config.seed,
                               gpi=snapshot.learner.config.gpi)
    finetuned = greedy_rollout(learner, config.level, w, config.seed)
    return QuickstartResult(result, snapshot, w, zero_shot, finetuned)
