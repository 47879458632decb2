"""Notebook 04c's capstone: APS pretrained with a reward and a vMF loss the learner wrote, judged by what
the trained agent does.

`train_your_aps(my_aps_reward, my_vmf_loss)` first compares the two functions with Eqs. 6 and 5 on
random inputs (the coaching line of `exercises.check`, and `exercises.failing_case`), then pretrains APS
on them (yours whenever they run, right or wrong; the library's only while one raises) on the judging
level, `LEVEL` (deep, where a uniform random walk leaves about half of the states unvisited), and judges
the agent on two things APS's two terms are for (`Measures`):

* it explores: the visitation entropy of its pretraining is at least `EXPLORE_MARGIN` above a uniform
  random walk's, under the same protocol, steps and seed (`train.random_walk`);
* its skills are recognisable: over states s' from its replay, phi(s')^T w with the skill w that reached
  s' exceeds phi(s')^T w' with another window's skill w' by at least `RECOGNISABLE` (0 when phi does not
  tell the skills apart).

What the judge can and cannot see, measured at the default budget on deep, seeds 0-2 (notebook 04c): it passes
Eq. 6 and fails VISR's reward alone (the exploration term missing) on every seed, and it fails a sign error in
either term (seed 0: paying crowded states, entropy 0.575 against the walk's 0.661; the vMF loss reversed, a
gap of -0.015). It cannot fail APT's reward alone (the exploitation term missing): the vMF loss makes skills
recognisable whatever the reward pays, and the kNN term alone explores about as much as Eq. 6 (it passes on
seeds 1 and 2 and misses the margin on seed 0 by 0.006). Fresh skills steer its greedy paths as far along
phi as Eq. 6's do (`probes.skill_steering`, docs/course.md), and at 1M steps (seeds 0 and 1) the two are
still level. The coaching line names a missing term instead.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from aps_teach.course import exercises
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.experiments import DEFAULT_PRETRAIN_STEPS
from aps_teach.grid.rounds import RoundEnd
from aps_teach.grid.train import pretrain, random_walk
from aps_teach.infra.phases import PhaseLog
from aps_teach.learner.agent import Learner
from aps_teach.learner.rewards import Objective

LEVEL = "deep"
"""The judging level: three rooms, where a uniform random walk of the default budget visits about half of
the states (entropy 0.652-0.661 on seeds 0-2), so exploring has something to win."""
EXPLORE_MARGIN = 0.08
"""How far above a random walk's visitation entropy the agent's must be, on `LEVEL` at the default budget.
Measured there (seeds 0-2): Eq. 6 with the vMF loss 0.092-0.098 above, VISR's reward alone 0.045-0.063
above (it explores too, less), APT's reward alone 0.074-0.110; paying crowded states instead falls below
the walk (seed 0: 0.086 below). The margin sits between VISR's highest and Eq. 6's lowest."""
RECOGNISABLE = 0.1
"""The least gap phi(s')^T w - phi(s')^T w' of an agent whose skills are recognisable: two thirds of the
least Eq. 6 and the vMF loss reach at the default budget (deep 0.161-0.172, easy 0.146-0.160); with the
vMF loss's sign flipped the gap is negative (easy: -0.02 to -0.03, seeds 0-2; deep, seed 0: -0.015)."""
SKILL_SAMPLES = 4096
"""Replay windows the skill gap is measured on."""


@dataclass(frozen=True)
class Measures:
    """What the judge decides from, and its decisions."""

    entropy: float
    """Visitation entropy of pretraining (`env_batch.visitation_entropy`)."""
    walk_entropy: float
    """The same for a uniform random walk under the same protocol, steps and seed."""
    own_skill: float
    """Mean phi(s')^T w over replay states s' with the skill w that reached them."""
    other_skill: float
    """The same with another window's skill w' in place of w."""

    @property
    def explores(self) -> bool:
        """entropy - walk_entropy >= EXPLORE_MARGIN."""
        return self.entropy - self.walk_entropy >= EXPLORE_MARGIN

    @property
    def recognisable(self) -> bool:
        """own_skill - other_skill >= RECOGNISABLE."""
        return self.own_skill - self.other_skill >= RECOGNISABLE

    @property
    def passed(self) -> bool:
        return self.explores and self.recognisable

    def failed(self) -> list[str]:
        """What the agent does not do, one phrase per criterion it fails."""
        criteria = ((self.explores, f"explore at least {EXPLORE_MARGIN} above a random walk"),
                    (self.recognisable, "tell its skills apart"))
        return [what for ok, what in criteria if not ok]


@dataclass(frozen=True)
class CapstoneResult:
    """The trained agent and what it was judged on."""

    learner: Learner
    log: PhaseLog
    objective: Objective
    """The reward and loss it trained on (yours, or the library's where yours raised)."""
    yours: tuple[bool, bool]
    """Whether your reward and your vMF loss were the ones trained on."""
    measures: Measures
    seconds: float

    @property
    def passed(self) -> bool:
        return self.measures.passed


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


def train_your_aps(your_reward: Callable, your_vmf_loss: Callable, level: str = LEVEL,
                   steps: int = DEFAULT_PRETRAIN_STEPS, seed: int = 0,
                   config: TrainConfig | None = None) -> CapstoneResult:
    """Pretrain APS on `level` for `steps` env steps with `your_reward(phi, w, h, k)` -> (B,) in place of
    Eq. 6 and `your_vmf_loss(phi, w)` -> a scalar in place of Eq. 5, then judge the agent (the module's
    docstring; the thresholds were chosen on `LEVEL` at the default budget); prints the verdicts. Trains
    with `training_config(config)`."""
    config = training_config(config)
    objective = Objective(exercises.check(exercises.APS_REWARD, your_reward, seed, keep_yours=True),
                          exercises.check(exercises.VMF_LOSS, your_vmf_loss, seed, keep_yours=True))
    yours = (objective.reward is your_reward, objective.vmf_loss is your_vmf_loss)
    tick, kept = time.perf_counter(), {}
    learner, log = pretrain("aps", level, steps, seed, config, objective=objective,
                            on_round=lambda end: kept.update(end=end))
    own, other = skill_gap(learner, kept["end"], SKILL_SAMPLES, seed)
    walk = random_walk(level, steps, seed, config)
    measures = Measures(log.coverage["visitation_entropy"], walk["visitation_entropy"], own, other)
    result = CapstoneResult(learner, log, objective, yours, measures, time.perf_counter() - tick)
    report(result, level, steps)
    return result


def verdict_lines(measures: Measures) -> list[str]:
    """One line per criterion, with its numbers, then the verdict."""
    yes = {True: "yes", False: "no"}
    failed = measures.failed()
    return [f"  explores: visitation entropy {measures.entropy:.3f}, a random walk's "
            f"{measures.walk_entropy:.3f}: at least {EXPLORE_MARGIN} above it: {yes[measures.explores]}",
            f"  skills recognisable: phi(s')^T w {measures.own_skill:.3f} with the skill that reached s', "
            f"{measures.other_skill:.3f} with another: gap >= {RECOGNISABLE}: {yes[measures.recognisable]}",
            "capstone: " + (f"not yet: the agent does not {' or '.join(failed)}" if failed else
                            "passed: the agent explores well beyond a random walk and its skills are "
                            "recognisable")]


def report(result: CapstoneResult, level: str, steps: int) -> None:
    """Print what the agent was trained on and judged by, one line each, and the verdict."""
    owner = {True: "your", False: "the library's"}
    trained_on = " and ".join(f"{owner[mine]} {what}"
                              for mine, what in zip(result.yours, ("reward", "vMF loss"), strict=True))
    print(f"capstone: APS pretrained on {level} for {steps:,} steps with {trained_on} "
          f"({result.seconds:.0f} s with the judging)")
    print("\n".join(verdict_lines(result.measures)))
