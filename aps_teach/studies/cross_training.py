"""X -> Y in miniature (Section 6 of the paper): method Y learns from the data method X collects.

X pretrains as usual, its behaviour filling its replay. Alongside it, a fresh learner of method Y
never acts: after each of X's rounds it catches up to X's update count with minibatches of X's replay
(the paper, too, trains Y concurrently with X rather than after it, so Y sees the replay grow as X
does). Y thus gets exactly the updates its own pretraining would make (the count depends only on the
step budget and `TrainConfig`) and the same replay ratio; only the behaviour that chose the data
differs. Y's updates of a round run at its end, on the replay as it stands then (X's run a step at
a time), and draw from their own random stream, so X's run is bit for bit the run `pretrain` would
make alone. Then Y goes through the usual task identification (visr, aps), zero-shot evaluation,
fine-tuning and evaluation, acting itself.

The replay is reward-free, so Y computes its own intrinsic reward from each s' (`update.td_targets`).
The task vector w stored with each transition is the behaviour's; Y trains under:
- X's own w when both are task-conditioned (visr, aps): the skill labels its discriminator needs;
- a fresh w uniform on the sphere per sample when only Y is: apt's data carry no task label;
- Y's fixed task e_1 when Y is apt.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import Budget, GridworldResult, adapt_and_score, check_run
from aps_teach.grid.replay import NStepReplay
from aps_teach.grid.rounds import RoundEnd
from aps_teach.grid.sweep import result_rows, run_gridworld_rows
from aps_teach.grid.train import EnvSource, new_learner, pretrain
from aps_teach.infra.overrides import with_overrides
from aps_teach.infra.phases import PhaseLog
from aps_teach.infra.seeds import shadow_generator
from aps_teach.infra.sweeps import RunSpec
from aps_teach.learner.agent import Learner
from aps_teach.learner.tasks import sample_tasks

PRETRAINED_METHODS = ("visr", "apt", "aps")
"""The methods with a reward-free pretraining phase: X and Y are drawn from these."""
ARROW = "->"
"""Separator of a pair's name, e.g. "apt->aps" (Y = aps trained on the data of X = apt)."""


def check_pair(data_method: str, learner_method: str) -> None:
    """Raise ValueError unless both methods have a pretraining phase."""
    for role, method in (("data method X", data_method), ("learner method Y", learner_method)):
        if method not in PRETRAINED_METHODS:
            raise ValueError(f"unknown {role} {method!r}; valid: {', '.join(PRETRAINED_METHODS)}")


def parse_pair(name: str) -> tuple[str, str]:
    """'X->Y' -> (X, Y), both checked."""
    parts = name.split(ARROW)
    if len(parts) != 2:
        raise ValueError(f"a cross-training pair is named 'X{ARROW}Y' (e.g. 'apt{ARROW}aps'), got {name!r}")
    check_pair(*parts)
    return parts[0], parts[1]


def task_labels(stored_w: torch.Tensor, data_conditioned: bool, learner: Learner,
                generator: torch.Generator) -> torch.Tensor:
    """The w each sampled transition trains Y under (see the module docstring): the stored w if X and Y
    are both task-conditioned, fresh tasks uniform on the sphere if only Y is, e_1 if Y is not."""
    if not learner.config.task_conditioned:
        return learner.default_task(len(stored_w))
    if data_conditioned:
        return stored_w
    return sample_tasks(len(stored_w), learner.config.feature_dim, generator)


def train_on_replay(learner: Learner, replay: NStepReplay, updates: int, data_conditioned: bool,
                    generator: torch.Generator) -> None:
    """`updates` updates of `learner` on minibatches of `replay` (only read), w set by `task_labels`."""
    cfg = learner.config
    for _ in range(updates):
        batch = replay.sample(cfg.batch_size, cfg.n_step, generator)
        learner.update(batch._replace(w=task_labels(batch.w, data_conditioned, learner, generator)))


def pretrain_on_data_of(data_method: str, learner_method: str, env: EnvSource, steps: int, seed: int,
                        config: TrainConfig | None = None) -> tuple[Learner, Learner, PhaseLog]:
    """Pretrain X for `steps` env steps and, alongside, Y on X's replay only (equal update counts).

    Returns (X's learner, Y's learner, X's pretraining log: the data's coverage). Y starts from the
    weights Y's own `pretrain` with this seed would start from.
    """
    check_pair(data_method, learner_method)
    config = config or TrainConfig()
    shadow = new_learner(learner_method, env, seed, config)
    generator = shadow_generator(seed)
    data_conditioned = replace(config.agent, method=data_method).task_conditioned

    def catch_up(end: RoundEnd) -> None:
        # Y's inputs are normalised by the mean of X's data
        shadow.board_inputs.load_state_dict(end.learner.board_inputs.state_dict())
        train_on_replay(shadow, end.replay, end.learner.updates - shadow.updates, data_conditioned, generator)

    learner, log = pretrain(data_method, env, steps, seed, config, on_round=catch_up)
    return learner, shadow, log


def run_cross(data_method: str, learner_method: str, level: str, *, seed: int, budget: Budget = Budget(),
              config: TrainConfig | None = None) -> GridworldResult:
    """The `run_gridworld` pipeline for Y, its pretraining replaced by `pretrain_on_data_of`. The result
    has method 'X->Y', Y's scores and task vector, and the coverage and metrics of X's pretraining."""
    check_pair(data_method, learner_method)
    check_run(level, budget)
    config = config or TrainConfig()
    start = time.perf_counter()
    _, learner, log = pretrain_on_data_of(data_method, learner_method, level, budget.pretrain_steps, seed,
                                          config)
    return adapt_and_score(learner, f"{data_method}{ARROW}{learner_method}", level, budget, config, seed=seed,
                           pretrain_log=log, start=start)


def run_cross_rows(spec: RunSpec, budget: Budget) -> list[dict]:
    """A sweep run: `spec.method` 'X->Y' is `run_cross` of that pair, a plain method name is
    `run_gridworld_rows`; the same columns either way, two rows (phase zero_shot, finetuned)."""
    if ARROW not in spec.method:
        return run_gridworld_rows(spec, budget)
    data_method, learner_method = parse_pair(spec.method)
    config = with_overrides(TrainConfig(progress=False), spec.overrides)
    result = run_cross(data_method, learner_method, spec.env, seed=spec.seed, budget=budget, config=config)
    return result_rows(spec, budget, config, result)
