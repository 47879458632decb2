"""Notebook 04's capstone: APS pretrained with a reward and a vMF loss the learner wrote, judged by what
the trained agent does.

`train_your_aps(my_aps_reward, my_vmf_loss)` first compares the two functions with Eqs. 6 and 5 on
random inputs (the coaching line of `exercises.check`, and `exercises.failing_case`), then pretrains APS
on them (yours whenever they run, right or wrong; the library's only while one raises), and judges the
agent on two things APS's two terms are for:

* it explores: the visitation entropy of its pretraining is above a uniform random walk's, under the
  same protocol, steps and seed (`train.random_walk`);
* its skills are recognisable: over states s' from its replay, phi(s')^T w with the skill w that reached
  s' exceeds phi(s')^T w' with another window's skill w' by at least `RECOGNISABLE` (0 when phi does not
  tell the skills apart).

Zero-shot success on the level's task (after identifying w) is reported, not judged: on the easy level a
reward without either term can reach it too (the APS-parts study, docs/studies.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from aps_teach.course import exercises
from aps_teach.grid.experiments import DEFAULT_EVAL_EPISODES, DEFAULT_IDENTIFY_STEPS, DEFAULT_PRETRAIN_STEPS
from aps_teach.grid.train import RoundEnd, TrainConfig, evaluate, identify_task, pretrain, random_walk
from aps_teach.infra.phases import PhaseLog
from aps_teach.learner.agent import Learner
from aps_teach.learner.rewards import Objective

RECOGNISABLE = 0.1
"""The least gap phi(s')^T w - phi(s')^T w' of an agent whose skills are recognisable: about two thirds of
the least the library's reward and loss reach on the easy level at the default budget (0.146-0.160 over
seeds 0-4); with the vMF loss's sign flipped the gap is negative (-0.02 to -0.03, seeds 0-2)."""
SKILL_SAMPLES = 4096
"""Replay windows the skill gap is measured on."""


@dataclass(frozen=True)
class CapstoneResult:
    """The trained agent and what it was judged on."""

    learner: Learner
    log: PhaseLog
    objective: Objective
    """The reward and loss it trained on (yours, or the library's where yours raised)."""
    yours: tuple[bool, bool]
    """Whether your reward and your vMF loss were the ones trained on."""
    entropy: float
    """Visitation entropy of pretraining (`env_batch.visitation_entropy`)."""
    walk_entropy: float
    """The same for a uniform random walk under the same protocol, steps and seed."""
    own_skill: float
    """Mean phi(s')^T w over replay states s' with the skill w that reached them."""
    other_skill: float
    """The same with another window's skill w' in place of w."""
    zero_shot: float
    """Success rate on the level's task acting on the identified w."""
    seconds: float

    @property
    def explores(self) -> bool:
        return self.entropy > self.walk_entropy

    @property
    def recognisable(self) -> bool:
        return self.own_skill - self.other_skill >= RECOGNISABLE

    @property
    def passed(self) -> bool:
        return self.explores and self.recognisable


def training_config(config: TrainConfig | None = None) -> TrainConfig:
    """`config` (default `TrainConfig(progress=False)`) without the kNN distance normaliser, so that an
    objective's reward is the whole reward (`Learner.use_objective`)."""
    config = config or TrainConfig(progress=False)
    return dataclasses.replace(config, agent=dataclasses.replace(config.agent, knn_normalise=False))


def skill_gap(learner: Learner, end: RoundEnd, samples: int, seed: int) -> tuple[float, float]:
    """(mean phi(s')^T w, mean phi(s')^T w') over `samples` replay windows: s' their first next state, w
    the skill that reached it, w' the skill of the next window in the sample."""
    batch = end.replay.sample(samples, 1, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        phi = learner.features(batch.next_obs[:, 0])
    return (phi * batch.w).sum(1).mean().item(), (phi * batch.w.roll(1, 0)).sum(1).mean().item()


def train_your_aps(your_reward: Callable, your_vmf_loss: Callable, level: str = "easy",
                   steps: int = DEFAULT_PRETRAIN_STEPS, seed: int = 0, config: TrainConfig | None = None, *,
                   identify_steps: int = DEFAULT_IDENTIFY_STEPS,
                   eval_episodes: int = DEFAULT_EVAL_EPISODES) -> CapstoneResult:
    """Pretrain APS on `level` for `steps` env steps with `your_reward(phi, w, h, k)` -> (B,) in place of
    Eq. 6 and `your_vmf_loss(phi, w)` -> a scalar in place of Eq. 5, then judge the agent (the module's
    docstring); prints the verdicts. Trains with `training_config(config)`."""
    config = training_config(config)
    objective = Objective(exercises.check(exercises.APS_REWARD, your_reward, seed, keep_yours=True),
                          exercises.check(exercises.VMF_LOSS, your_vmf_loss, seed, keep_yours=True))
    yours = (objective.reward is your_reward, objective.vmf_loss is your_vmf_loss)
    tick, kept = time.perf_counter(), {}
    learner, log = pretrain("aps", level, steps, seed, config, objective=objective,
                            on_round=lambda end: kept.update(end=end))
    own, other = skill_gap(learner, kept["end"], SKILL_SAMPLES, seed)
    walk = random_walk(level, steps, seed, config)
    w = identify_task(learner, level, identify_steps, seed, config)
    zero = evaluate(learner, level, w, eval_episodes, seed, config)
    result = CapstoneResult(learner, log, objective, yours, log.coverage["visitation_entropy"],
                            walk["visitation_entropy"], own, other, zero.success_rate,
                            time.perf_counter() - tick)
    report(result, level, steps)
    return result


def report(result: CapstoneResult, level: str, steps: int) -> None:
    """Print what the agent was trained on and judged by, one line each, and the verdict."""
    owner = {True: "your", False: "the library's"}
    trained_on = " and ".join(f"{owner[mine]} {what}"
                              for mine, what in zip(result.yours, ("reward", "vMF loss"), strict=True))
    print(f"capstone: APS pretrained on {level} for {steps:,} steps with {trained_on} "
          f"({result.seconds:.0f} s with the judging)")
    yes = {True: "yes", False: "no"}
    print(f"  explores: visitation entropy {result.entropy:.3f}, a random walk's {result.walk_entropy:.3f}: "
          f"above it: {yes[result.explores]}")
    print(f"  skills recognisable: phi(s')^T w {result.own_skill:.3f} with the skill that reached s', "
          f"{result.other_skill:.3f} with another: gap >= {RECOGNISABLE}: {yes[result.recognisable]}")
    print(f"  zero-shot on {level} (reported, not judged): success {result.zero_shot:.2f}")
    failed = [what for ok, what in ((result.explores, "explore more evenly than a random walk"),
                                    (result.recognisable, "tell its skills apart")) if not ok]
    print("capstone: " + (f"not yet: the agent does not {' or '.join(failed)}" if failed else
                          "passed: the agent explores more evenly than a random walk and its skills are "
                          "recognisable"))
