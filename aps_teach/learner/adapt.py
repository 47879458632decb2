"""psi adapted offline to an identified task w: zero-shot in samples, not in compute (issue 60, item 2a).

The zero-shot diagnosis (`aps_teach.studies.zero_shot`) finds psi the link that caps zero-shot: an exact
planner on the agent's own identified reward phi(s')^T w scores far above the agent acting on
psi(s, a, w)^T w.
`adapt_psi` trains psi for that one w on data the learner already has, the reward-free pretraining replay,
without a new env step: every window is relabelled as a window of task w (`relabel`), its reward the one
identification believes in, r_i = phi(s'_i)^T w, and psi takes fine-tuning's TD update on it
(`update.gradient_step` in the fine-tuning phase: phi frozen, the SF cumulant c_i = phi(s'_i) + (r_i -
phi(s'_i)^T w) w = phi(s'_i), the double-Q bootstrap of the greedy action under w). The settings are
`AgentConfig.adapt_psi`, `adapt_updates` and `adapt_n_step`; the gridworld wing feeds it its replay
(`aps_teach.grid.train.adapt_to_task`). Not in the paper, nor in the authors' code.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from aps_teach.learner.agent import Learner
from aps_teach.learner.batch import Batch
from aps_teach.learner.tasks import q_values


@torch.no_grad()
def relabel(learner: Learner, batch: Batch, w: torch.Tensor) -> Batch:
    """The reward-free windows of `batch` as windows of task `w` (d,): w in every row (the stored w, and beta
    with `explore_conditioned`, replaced), phi(s'_i) of every step stored as `next_phi` (phi is frozen) and
    the reward r_i = phi(s'_i)^T w. Masks, bootstraps and terminal flags stay the replay's."""
    if batch.w.ndim != 2:
        raise ValueError(f"relabel takes one learner's batch, w (B, d); got w {tuple(batch.w.shape)}")
    windows = batch.next_obs.shape[:2]  # (B, n)
    next_phi = learner.features(batch.next_obs.flatten(0, 1)).unflatten(0, windows).float()
    task = w.to(next_phi).expand(windows[0], -1)
    return batch._replace(w=task, next_phi=next_phi, reward=q_values(next_phi, task[:, None]))


def adapt_psi(learner: Learner, sample: Callable[[], Batch], w: torch.Tensor, updates: int) -> list[float]:
    """`updates` TD updates of psi for the fixed task `w` (d,) on minibatches `sample()` draws from a
    reward-free replay (on the learner's device), each relabelled (`relabel`); the learner switches to its
    fine-tuning phase first if it is not in it (`Learner.start_finetune`: phi frozen, Adam on psi at
    `finetune_lr`) and stays in it. Takes no env step. Returns each update's SF loss."""
    if learner.phi is None:
        raise ValueError(f"adapt_psi adapts psi to an identified w: method {learner.config.method!r} has no "
                         "task features phi to relabel a replay with; valid for: visr, aps")
    if w.shape != (learner.config.feature_dim,):
        raise ValueError(f"adapt_psi needs the task w as a vector of {learner.config.feature_dim} numbers, "
                         f"got shape {tuple(w.shape)}")
    if learner.phase != "finetune":
        learner.start_finetune()
    return [float(learner.update(relabel(learner, sample(), w))["loss_sf"]) for _ in range(updates)]
