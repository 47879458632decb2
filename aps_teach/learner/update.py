"""One update of APS (Algorithm 1 of Liu & Abbeel 2021) in the algorithm's order; VISR, APT and the DQN
baseline are the same update with terms switched off (the table in `aps_teach.learner.agent`).

    1. sample a minibatch of n-step windows (s_t, a_t, w, s'_1..s'_m)     the caller: `batch.Batch`
    2. phi(s') and the kNN space h(s') of the states the reward is paid at  `rewarded_features`
    3. the intrinsic reward of Eq. 6 (pretraining) or the task reward     `window_rewards`
       (a `rewards.Objective` on the learner replaces Eq. 6 and the vMF loss: notebook 04d's capstone)
    4. the successor-feature TD target with a double-Q bootstrap           `double_q_bootstrap`,
                                                                           `sf_td_target`
    5. SF loss + vMF loss on phi (+ InfoNCE on APT's encoder f)            `gradient_step`
    6. gradient clip and an Adam step                                      `gradient_step`
    7. copy psi into its target network every `target_update_period`       `count_update`

`td_targets` runs 2-4 as the paper's path; this repository's variants (the kNN reward as a successor
feature of its own, psi conditioned on the exploration weight) branch from it in one place,
`knn_feature_cumulant`. `Learner.update` runs 2-7. `gradient_step` (2-6) counts nothing and reads nothing
back from the device, so the Atari wing can hand it to torch.compile (`aps_teach.atari.update_step`).

A seed group (`group.LearnerGroup`, S learners updated as one) passes batches with a leading seed dim: every
shape below gains it, (B, ...) becoming (S, B, ...); each mean over the batch is a mean over its last dim,
each seed's own, and what must see one seed's batch at a time goes through `each_seed`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol, runtime_checkable

import torch
from torch import nn
from torch.nn import functional as F

from aps_teach.infra.checks import check_shapes
from aps_teach.learner.batch import Batch
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.rewards import (
    MaskedRunningMean,
    Objective,
    RunningMean,
    intrinsic_reward,
    valid_mean,
    vmf_loss,
)
from aps_teach.learner.tasks import q_values


@runtime_checkable
class Trainable(Protocol):
    """What the update reads and writes of a learner (`agent.Learner`, and so the Atari learner, is one):
    its settings and phase, psi and its target, phi and APT's f, the kNN distance normaliser, three maps
    of observations and tasks, the optimiser and the update count."""

    config: AgentConfig
    phase: Literal["pretrain", "finetune"]
    fixed_shapes: bool
    """Mask invalid steps instead of selecting the valid ones (an update that never waits on the device)."""
    psi: nn.Module
    psi_target: nn.Module
    phi: nn.Module | None
    rep: nn.Module | None
    """APT's contrastive encoder f (None when the kNN space is phi or the board)."""
    normaliser: RunningMean | MaskedRunningMean | None
    objective: Objective | None
    """A reward and vMF loss in place of Eqs. 6 and 5 (None: the library's)."""
    explore_bonus: float
    """While fine-tuning, the weight of the exploration reward kept in the task reward (0: none)."""
    optimizer: torch.optim.Optimizer
    updates: int

    def inputs(self, obs: torch.Tensor):
        """What the networks read for observations `obs`."""

    def embed(self, obs: torch.Tensor, knn: bool = True) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(phi(s), h(s)): the task features and the kNN space."""

    def task_weights(self, w: torch.Tensor, explore: bool = False) -> torch.Tensor:
        """The weights w~ that score successor features, Q = psi^T w~."""


def td_targets(learner: Trainable, batch: Batch
               ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
    """Steps 2-4: the TD targets y (B, d) for psi(s, a, w), the mean of each reward term, and phi(s') of
    the rewarded states (B, n', d) (None for apt, dqn; with its graph while pretraining with 'last').

    Per step i of a window the reward r_i is Eq. 6 at s'_i while pretraining, the task reward while
    fine-tuning (plus lambda r_kNN(s'_m) on the step reaching s'_m when fine-tuning keeps exploring, the
    particles the B states s'_m, as pretraining's with 'last'), and the cumulant is
    c_i = base_i + (r_i - base_i^T w) w, base_i = phi(s'_i) (0 without phi), so c_i^T w = r_i.
    y = sum_{i<m} gamma^i c_i + gamma^m alive psi_target(s'_m, a*, w), with a* = argmax_a psi(s'_m, a, w)^T w
    (double Q). Pretraining with `nstep_reward='last'` (the authors'
    code) pays the window one cumulant, that of s'_m: y = c_m + gamma^m alive psi_target(s'_m, a*, w), and
    the kNN particles are the B states s'_m. phi(s'_i) is the batch's `next_phi` when fine-tuning's replay
    stored it (phi is frozen then). With the kNN reward as a successor feature of its own
    (`knn_feature_cumulant`, pretraining) y has d + 1 columns and w~ replaces w.
    """
    cfg, pretraining = learner.config, learner.phase == "pretrain"
    last = pretraining and cfg.nstep_reward == "last"
    w = batch.w
    phi, h = rewarded_features(learner, batch, last)  # 2.
    with torch.no_grad():
        mask = torch.ones(*w.shape[:-1], 1, device=w.device) if last else batch.mask
        base = phi.detach() if phi is not None else torch.zeros(*mask.shape, cfg.feature_dim, device=w.device)
        reward, stats, knn = window_rewards(learner, batch, phi, h, last)  # 3.
        w_sf = w
        if pretraining and cfg.sf_dim > cfg.feature_dim:  # this repository's variants, not the paper's
            base, w_sf = knn_feature_cumulant(learner, base, w, knn)
            if cfg.task_input_dim > cfg.feature_dim:  # Eq. 6 at the window's beta: r_i = base_i^T w~
                reward = q_values(base, w_sf.unsqueeze(-2)).float()
        boot = double_q_bootstrap(learner, batch, w_sf, base.shape[-1])  # 4.
        through = pretraining and cfg.bootstrap_through_termination  # no terminal without a task
        alive = torch.ones_like(batch.boot_alive) if through else batch.boot_alive
        return sf_td_target(base, reward, w_sf, mask, cfg.gamma, boot, batch.boot_steps, alive), stats, phi


def rewarded_features(learner: Trainable, batch: Batch, last: bool
                      ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Step 2: phi(s') (B, n', d) and the kNN space h(s') of the states the reward is paid at, s'_m alone
    (n' = 1, `last`: with phi's graph, the vMF loss reuses it) or every s'_i (n' = n); phi is the batch's
    stored `next_phi` while fine-tuning froze it, h None unless pretraining."""
    pretraining, lead = learner.phase == "pretrain", batch.w.ndim - 1
    if batch.next_phi is not None:
        if pretraining:
            raise ValueError("a batch with stored phi(s') (next_phi) is only valid while phi is frozen "
                             "(fine-tuning); pretraining computes phi(s')")
        return batch.next_phi, None
    states = batch.boot_obs.unsqueeze(lead) if last else batch.next_obs  # (B, n', ...)
    with torch.set_grad_enabled(last):
        phi, h = learner.embed(states.flatten(lead - 1, lead), knn=pretraining)
    windows = states.shape[lead - 1:lead + 1]  # (B, n')
    return tuple(None if v is None else v.unflatten(lead - 1, windows) for v in (phi, h))


def window_rewards(learner: Trainable, batch: Batch, phi: torch.Tensor | None, h: torch.Tensor | None,
                   last: bool) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
    """Step 3: the reward r_i (B, n') of each rewarded step, the mean of each of its terms, and the kNN
    reward r_kNN(s') alone (None where it is not computed). Pretraining: Eq. 6, r = phi(s')^T w + r_kNN(s')
    (or a `rewards.Objective` written outside the library); fine-tuning: the task reward from the replay,
    plus lambda r_kNN(s'_m) on the step reaching s'_m when fine-tuning keeps exploring."""
    cfg, lead, w = learner.config, batch.w.ndim - 1, batch.w
    if learner.phase == "pretrain" and learner.objective is not None:  # a reward written outside the library
        reward = learner.objective.reward(phi[..., 0, :], w, h[..., 0, :], cfg.k)
        check_shapes("your reward", {"r": (reward, tuple(w.shape[:-1]))}, f" for {len(w)} states s'_m")
        return reward[..., None].float(), {"reward_total": each_seed(torch.mean, lead, reward)}, None
    if learner.phase == "pretrain":
        valid = None if last else batch.mask
        r = intrinsic_reward(phi, w[..., None, :cfg.feature_dim], h, cfg.k, valid=valid,
                             fixed_shapes=learner.fixed_shapes, exploit_weight=cfg.exploit_weight,
                             explore_weight=cfg.explore_weight, exponent=cfg.knn_exponent,
                             normaliser=learner.normaliser, sets=lead - 1)
        mean = lambda values, m: valid_mean(values, m, learner.fixed_shapes)  # noqa: E731
        stats = {f"reward_{name}": each_seed(mean, lead, term, valid) for name, term in r.terms()}
        return r.total, stats, r.explore
    if batch.reward is None:
        raise ValueError("fine-tuning needs a batch with the task reward (a replay built with rewards)")
    if not learner.explore_bonus:
        return batch.reward, {}, None
    _, h = learner.embed(batch.boot_obs, knn=True)
    r = intrinsic_reward(None, None, h, cfg.k, explore_weight=learner.explore_bonus,
                         exponent=cfg.knn_exponent, normaliser=learner.normaliser, sets=lead - 1)
    reaching = torch.nn.functional.one_hot(batch.boot_steps.long() - 1, batch.mask.shape[-1])
    stats = {"reward_explore": each_seed(torch.mean, lead, r.explore)}
    return batch.reward + reaching * r.total[..., None], stats, r.explore  # paid on the step reaching s'_m


def knn_feature_cumulant(learner: Trainable, base: torch.Tensor, w: torch.Tensor, knn: torch.Tensor | None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """This repository's variant (`AgentConfig.knn_feature`): the kNN reward as a successor feature of its
    own. The cumulant's base gains a column, base_i = (phi(s'_i), r_kNN(s'_i)), scored by w~ = (exploit_weight
    w, explore_weight), or (exploit_weight w, beta explore_weight) when psi is conditioned on the exploration
    weight (`AgentConfig.explore_conditioned`, beta w's last column), so that base_i^T w~ = r_i."""
    if knn is None:
        raise ValueError("the kNN reward as a successor feature of its own (knn_feature) needs the library's "
                         "Eq. 6 reward, not an Objective written outside it")
    return torch.cat([base, knn.to(base.dtype)[..., None]], -1), learner.task_weights(w, explore=True)


def double_q_bootstrap(learner: Trainable, batch: Batch, w_sf: torch.Tensor, dims: int) -> torch.Tensor:
    """Step 4's bootstrap psi_target(s'_m, a*, w) (B, dims) with a* = argmax_a psi(s'_m, a, w)^T w~: the
    action from the online psi, its value from the target copy (double Q)."""
    boot_x, task = learner.inputs(batch.boot_obs), learner.psi_task(batch.w)
    a_star = q_values(learner.psi(boot_x, task)[..., :dims], w_sf.unsqueeze(-2)).argmax(-1)
    return action_row(learner.psi_target(boot_x, task), a_star)[..., :dims]


def sf_td_target(base: torch.Tensor, reward: torch.Tensor, w: torch.Tensor, mask: torch.Tensor, gamma: float,
                 boot_psi: torch.Tensor, boot_steps: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """The n-step successor-feature TD target y (B, d) of a batch of windows.

    c_i = base_i + (r_i - base_i^T w) w  (so c_i^T w = r_i: the cumulant pays exactly the reward r_i)
    y = sum_{i<n} gamma^i mask_i c_i + gamma^m alive boot_psi

    `base` (B, n, d) is phi(s'_i) (zeros without task features), `reward` (B, n) the reward r_i, `w`
    (B, d), `mask` (B, n) 1 on the m valid steps of each window, `boot_psi` (B, d) = psi_target(s'_m,
    a*, w) with a* = argmax_a psi(s'_m, a, w)^T w, `boot_steps` (B,) = m, `alive` (B,) 0 if s'_m ended
    the episode.
    """
    *b, n, d = base.shape
    check_shapes("sf_td_target", {"reward": (reward, (*b, n)), "w": (w, (*b, d)), "mask": (mask, (*b, n)),
                                  "boot_psi": (boot_psi, (*b, d)), "boot_steps": (boot_steps, tuple(b)),
                                  "alive": (alive, tuple(b))}, f" for base (B, n, d) = {tuple(base.shape)}")
    cumulant = base + (reward - q_values(base, w.unsqueeze(-2)))[..., None] * w.unsqueeze(-2)
    discount = gamma ** torch.arange(n, dtype=torch.float32, device=base.device)
    ret = (discount[:, None] * mask[..., None] * cumulant).sum(-2)
    return ret + (gamma ** boot_steps * alive)[..., None] * boot_psi


def gradient_step(learner: Trainable, batch: Batch) -> dict[str, torch.Tensor]:
    """Steps 2-6 on a minibatch: targets (`td_targets`), losses, backward, gradient clip, Adam. Returns
    the losses and the means of the reward terms, detached tensors (read them when logging).

    SF loss, 'vector': ||psi(s, a, w) - y||^2, 'scalar': (psi(s, a, w)^T w - y^T w)^2; plus, while
    pretraining, the vMF loss -phi(s')^T w (visr, aps; s' = s'_m with `nstep_reward='last'`, whose phi the
    reward used, else s'_1) and InfoNCE between f(s) and f(s'_1) (apt, aps without a shared encoder).
    """
    cfg, pretraining = learner.config, learner.phase == "pretrain"
    y, stats, phi_next = td_targets(learner, batch)  # steps 2-4
    # 5. the losses: successor features, then what trains phi (vMF) or f (InfoNCE) while pretraining
    w, lead = batch.w, batch.w.ndim - 1
    dims = y.shape[-1]  # d + 1 while pretraining with the kNN feature, else d
    psi_sa = action_row(learner.psi(learner.inputs(batch.obs), learner.psi_task(w)), batch.action)[..., :dims]
    if cfg.sf_loss == "vector":  # means over the batch, the last dim (a group: (S,), each seed's own)
        loss = ((psi_sa - y) ** 2).sum(-1).mean(-1)
    else:  # Algorithm 1's scalar loss on Q = psi^T w
        w_sf = learner.task_weights(w, explore=True) if dims > cfg.feature_dim else w
        loss = ((q_values(psi_sa, w_sf) - q_values(y, w_sf)) ** 2).mean(-1)
    stats["loss_sf"] = loss.detach()
    first_next = batch.next_obs.select(lead, 0)
    if pretraining and learner.phi is not None:
        phi = phi_next[..., 0, :] if cfg.nstep_reward == "last" else learner.phi(learner.inputs(first_next))
        w = w[..., :cfg.feature_dim]  # without beta (`AgentConfig.explore_conditioned`)
        vmf = vmf_loss(phi, w) if learner.objective is None else learner.objective.vmf_loss(phi, w)
        loss, stats["loss_vmf"] = loss + vmf, vmf.detach()
    if pretraining and learner.rep is not None:
        nce = info_nce(learner.rep(learner.inputs(batch.obs)), learner.rep(learner.inputs(first_next)),
                       cfg.contrastive_temperature)
        loss, stats["loss_nce"] = loss + nce, nce.detach()
    # 6. one Adam step on the clipped gradient (a group: each seed's own, `LearnerGroup.step`)
    if lead > 1:
        learner.step(loss)
        return stats
    learner.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for group in learner.optimizer.param_groups for p in group["params"]]
    torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
    learner.optimizer.step()
    return stats


def count_update(learner: Trainable) -> None:
    """Step 7: count an update; every `target_update_period` of them copy psi into psi_target."""
    learner.updates += 1
    if learner.updates % learner.config.target_update_period == 0:
        learner.psi_target.load_state_dict(learner.psi.state_dict())


def action_row(values: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """values[..., a, :] for each row's action: values (..., A, D), action (...) -> (..., D)."""
    index = action[..., None, None].expand(*action.shape, 1, values.shape[-1])
    return values.gather(-2, index).squeeze(-2)


def each_seed(fn: Callable[..., torch.Tensor], lead: int, *tensors: torch.Tensor | None) -> torch.Tensor:
    """fn(*tensors) for one learner's batch (lead 1); for a group's (lead 2: a leading seed dim S) fn of
    each seed's slices, stacked into (S, ...): each seed's number computed as its own run computes it
    (None passes through as None)."""
    if lead == 1:
        return fn(*tensors)
    seeds = len(next(t for t in tensors if t is not None))
    return torch.stack([fn(*(None if t is None else t[i] for t in tensors)) for i in range(seeds)])


def info_nce(anchor: torch.Tensor, positive: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE: cross-entropy of row i of anchor @ positive^T / temperature against the label i (a seed
    group's (S, B, d): each seed's, (S,))."""
    if anchor.ndim == 3:
        return torch.stack([info_nce(a, p, temperature) for a, p in zip(anchor, positive, strict=True)])
    logits = anchor @ positive.T / temperature
    return F.cross_entropy(logits, torch.arange(len(anchor), device=logits.device))
