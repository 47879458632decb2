"""Where a zero-shot score was lost: task identification, the features phi, or the successor features psi.

Zero-shot acting is a chain: the identification data -> the fitted reward phi(s')^T c (least squares) ->
the policy argmax_a psi(s, a, w)^T w. `zero_shot_blame` measures each link with an exact tool:

- the task rewards the identification data hold (target entries, key pick-ups): with no target reward in
  them the regression cannot know that the target pays;
- an exact planner, value iteration on the level's real moves and gamma, on the fitted reward phi(s')^T c,
  once with c from the identification data (P_id) and once with c fitted on every move of the level (the
  oracle, P_oracle): the share of start cells from which the optimal policy for that reward reaches the
  target. The target is absorbing, as in pretraining, so "go to the target and stay" is a policy a fitted
  reward can ask for;
- the learned psi acting (as evaluated: greedy, GPI) under the oracle w, O.

The success lost, 1 - Z for a zero-shot success Z, splits into (1 - P_oracle) lost to phi (no reward phi
can express leads there), max(0, P_oracle - P_id) to identification (the data fitted a worse reward than phi
allows) and max(0, P_id - Z) to psi (an exact planner on the agent's own fitted reward does better than
its policy). The verdict names the largest share, or 'identification' when the data hold no target reward.

Identification is not the only ceiling: with the best-case w (fitted on every move) the planner and psi
can still fail. `ceiling` names the link that would stop the agent even then, from the oracle's two
measurements: 'phi' when more is lost to the features (1 - P_oracle: no reward phi can express leads to the
target) than to psi (P_oracle - O: the exact planner on the best-case fit succeeds and psi does not), 'none'
when psi under the best-case w loses under `NO_LOSS`. A verdict of 'identification' with a ceiling of 'phi'
or 'psi' says that better identification data alone would not have been enough.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch

import gridworld
from aps_teach.grid.rollouts import transitions
from aps_teach.learner.agent import Learner
from aps_teach.learner.tasks import TaskFit, fit_task

LINKS = ("identification", "phi", "psi")
NO_LOSS = 0.05
"""Success lost below which the verdict is 'none'."""


@dataclass
class ZeroShotBlame:
    """The three measurements of one zero-shot score and the link they blame (module docstring)."""

    target_rewards: int
    """Target entries (+10) in the identification data."""
    key_rewards: int
    """Key pick-ups (+1) in the identification data."""
    planner_success: float
    """P_id: share of start cells from which the exact planner on the identified phi(s')^T c reaches the
    target (NaN when no reward was seen: nothing was fitted)."""
    oracle_planner_success: float
    """P_oracle: the same on the reward fitted on every move of the level."""
    oracle_success: float
    """O: zero-shot success of the learned psi under the oracle w."""
    blame: str
    """'none', or the link that lost the most success: identification, phi or psi."""

    @property
    def ceiling(self) -> str:
        """The link that stops the agent even under the best-case w (`ceiling`): none, phi or psi."""
        return ceiling(self.oracle_planner_success, self.oracle_success)

    def row(self) -> dict:
        return asdict(self)


BLAME_COLUMNS = tuple(field.name for field in fields(ZeroShotBlame))
"""The columns a `ZeroShotBlame` adds to a results row."""


def ceiling(oracle_planner: float, oracle_success: float) -> str:
    """What stops the agent even under the best-case w (module docstring): 'none' if psi under it loses
    under `NO_LOSS`, else 'phi' (1 - P_oracle) or 'psi' (P_oracle - O), whichever lost more (phi on a tie)."""
    if 1 - oracle_success < NO_LOSS:
        return "none"
    return "phi" if 1 - oracle_planner >= max(0.0, oracle_planner - oracle_success) else "psi"


def blame_summary(rows) -> str:
    """'psi 7, none 2, identification 1 (best-case w: phi 1)': how many of the zero-shot result rows (phase
    zero_shot, a `blame` column) blame each link, most first, and for those blaming identification the
    ceiling their best-case w still meets (`ceiling`; counted when not 'none'); '—' stands for rows without
    a blame (apt, dqn)."""
    zero_shot = [row for row in rows if row["phase"] == "zero_shot"]
    blames = Counter(row.get("blame") or "—" for row in zero_shot)
    ceilings = Counter(ceiling(float(row["oracle_planner_success"]), float(row["oracle_success"]))
                       for row in zero_shot if row.get("blame") == "identification")
    text = ", ".join(f"{name} {count}" for name, count in blames.most_common())
    shown = ", ".join(f"{name} {count}" for name, count in ceilings.most_common() if name != "none")
    return text + (f" (best-case w: {shown})" if shown else "")


def optimal_q(level, reward: np.ndarray, gamma: float, *, absorbing: bool = True) -> np.ndarray:
    """Q* (S, A) of `reward` (S, A) on `level`'s compiled states by value iteration, Q(s, a) = reward(s, a) +
    gamma max_a' Q(succ(s, a), a'): the target absorbing (its state keeps paying its reward) or, with
    `absorbing=False`, ending the episode (nothing after it)."""
    compiled = gridworld.compile_level(level)
    ends = compiled.terminal[compiled.successor] & (not absorbing)
    q = np.zeros(reward.shape)
    while True:
        updated = reward + gamma * np.where(ends, 0.0, q.max(1)[compiled.successor])
        if np.abs(updated - q).max() < 1e-9 * max(1.0, np.abs(updated).max()):
            return updated
        q = updated


def planner_success(level, reward: np.ndarray, gamma: float, *, absorbing: bool = True) -> float:
    """Share of start cells (no key held) from which the optimal policy for `reward` (S, A) on `level`'s
    compiled states (`optimal_q`) reaches the target within `gridworld.MAX_EPISODE_STEPS` steps."""
    compiled = gridworld.compile_level(level)
    if compiled.layout.target is None:
        raise ValueError("the planner's success is reaching the target: give a level with a target 'T'")
    q = optimal_q(level, reward, gamma, absorbing=absorbing)
    state, reached = compiled.start_states.copy(), np.zeros(len(compiled.start_states), dtype=bool)
    for _ in range(gridworld.MAX_EPISODE_STEPS):
        state = compiled.successor[state, q[state].argmax(1)]
        reached |= compiled.terminal[state]
    return float(reached.mean())


@torch.no_grad()
def fitted_reward(learner: Learner, level, coefficients: torch.Tensor) -> np.ndarray:
    """phi(s')^T c of every move (S, A) of `level`'s compiled states: the reward a fit c believes in."""
    compiled = gridworld.compile_level(level)
    believed = learner.features(torch.tensor(compiled.observations)).double() @ coefficients.double()
    return believed.numpy()[compiled.successor]


def oracle_fit(learner: Learner, level) -> TaskFit:
    """`fit_task` on one (phi(s'), r) pair per move of the level: the fit of evenly spread data."""
    _, frames, rewards = transitions(level)
    return fit_task(learner.features(frames), rewards, seed=0)


def verdict(zero_shot: float, target_rewards: int, planner: float, oracle_planner: float) -> str:
    """The link that lost the most of 1 - zero_shot (module docstring); 'none' if under `NO_LOSS`."""
    if 1 - zero_shot < NO_LOSS:
        return "none"
    if target_rewards == 0:
        return "identification"
    planner = 0.0 if np.isnan(planner) else planner
    lost = {"phi": 1 - oracle_planner, "identification": max(0.0, oracle_planner - planner),
            "psi": max(0.0, planner - zero_shot)}
    return max(LINKS, key=lambda link: (lost[link], -LINKS.index(link)))


def zero_shot_blame(learner: Learner, level, fit: TaskFit, identification_rewards: torch.Tensor,
                    zero_shot: float, success_under: Callable[[torch.Tensor], float]) -> ZeroShotBlame:
    """The blame of a zero-shot score `zero_shot` on `level`, for the task `fit` of identification data
    with rewards `identification_rewards`; `success_under(w)` evaluates the learner under a task vector w
    as `zero_shot` was evaluated (here: under the oracle's w)."""
    gamma = learner.config.gamma
    oracle = oracle_fit(learner, level)
    oracle_success = success_under(oracle.w)
    planner = np.nan if fit.coefficients is None else \
        planner_success(level, fitted_reward(learner, level, fit.coefficients), gamma)
    oracle_planner = planner_success(level, fitted_reward(learner, level, oracle.coefficients), gamma)
    target = gridworld.layout.TARGET_REWARD
    targets = int((identification_rewards >= target).sum())
    keys = int(((identification_rewards > 0) & (identification_rewards < target)).sum())
    return ZeroShotBlame(targets, keys, float(planner), oracle_planner, oracle_success,
                         verdict(zero_shot, targets, planner, oracle_planner))
