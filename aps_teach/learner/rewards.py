"""Intrinsic rewards: APS's reward (Eq. 6, `intrinsic_reward`) and its two terms, the kNN particle-entropy
reward (APT, APS exploration) and the von Mises-Fisher reward (VISR, APS exploitation), with the running
normaliser the reference code applies to distances.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch


class IntrinsicReward(NamedTuple):
    """Eq. 6's reward `total` and its terms, each of the states' shape (None where the method has none)."""

    total: torch.Tensor
    exploit: torch.Tensor | None
    explore: torch.Tensor | None

    def terms(self) -> list[tuple[str, torch.Tensor]]:
        """(name, values) of the terms the method has, exploit before explore."""
        return [(name, term) for name, term in (("exploit", self.exploit), ("explore", self.explore))
                if term is not None]


class Objective(NamedTuple):
    """A pretraining objective written outside the library, in place of Eqs. 6 and 5 (notebook 04d's
    capstone; `Learner.use_objective`). For the B states s'_m a batch is paid at (`nstep_reward='last'`):

    reward(phi, w, h, k) -> r (B,)     phi (B, d) and w (B, d) unit rows, h (B, d_h) the kNN space
    vmf_loss(phi, w) -> a scalar        the loss that trains phi, on phi(s'_m) and the w that reached it
    """

    reward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]
    vmf_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def intrinsic_reward(phi: torch.Tensor | None, w: torch.Tensor | None, h: torch.Tensor | None, k: int, *,
                     particles: torch.Tensor | None = None, valid: torch.Tensor | None = None,
                     fixed_shapes: bool = False, exploit_weight: float = 1.0, explore_weight: float = 1.0,
                     exponent: float = 1.0, normaliser: RunningMean | SeedNormalisers | None = None,
                     sets: int = 0) -> IntrinsicReward:
    """APS's intrinsic reward for reaching states s' (Eq. 6), the one the learner trains on:

    r(s') = exploit_weight * phi(s')^T w + explore_weight * log(1 + (1/k) sum_j ||h(s') - h_j||^e / m)

    j runs over N_k, the k particles h_j nearest to h(s'); e = `exponent`; m is the running mean of all
    neighbour terms in `normaliser` (updated; a `MaskedRunningMean` with `fixed_shapes`), 1 without one.

    phi (..., d) and w broadcast against it give the exploit term (`vmf_reward`; phi None: no such term,
    apt); h (..., d_h), the states in the kNN space, the explore term (`particle_entropy_reward`; None:
    none, visr). The particles are `particles` (M, d_h) if given (the states are not particles, as in a
    heatmap); else the states themselves, each excluding itself (a minibatch), and with `valid` (h's
    shape without d_h) only the valid ones, the others earning explore 0: selected (h[valid]), or with
    `fixed_shapes` masked in place (`masked_particle_entropy`: no host sync; equal up to float rounding).
    `total` is float32; the terms are returned as computed (float64 if h is). `sets` = 1: the states'
    first dim indexes separate particle sets (the seeds of a `group.LearnerGroup`, each with its own
    normaliser in `SeedNormalisers`), each set's reward what it alone would give.
    """
    if (phi is None and h is None) or (phi is not None and w is None):
        raise ValueError("intrinsic_reward needs phi and w (exploit term), h (explore term) or both")
    if particles is not None and valid is not None:
        raise ValueError("intrinsic_reward: `valid` selects particles among the states; with `particles` "
                         "given, pass no `valid`")
    states = phi if phi is not None else h
    total = torch.zeros(states.shape[:-1], device=states.device)
    exploit = explore = None
    if phi is not None:
        exploit = vmf_reward(phi, w)
        total = total + exploit_weight * exploit
    if h is not None and sets and valid is not None:  # each set selects its own valid particles
        explore = torch.stack([
            intrinsic_reward(None, None, h[i], k, valid=valid[i], fixed_shapes=fixed_shapes,
                             exponent=exponent, normaliser=None if normaliser is None else normaliser.seeds[i]
                             ).explore
            for i in range(len(h))])
    elif h is not None:
        flat = h.flatten(sets, -2)
        if particles is not None:
            explore = particle_entropy_reward(flat, particles, k, exponent=exponent, normaliser=normaliser)
        elif valid is None:
            explore = particle_entropy_reward(flat, flat, k, exclude_self=True, exponent=exponent,
                                              normaliser=normaliser)
        elif fixed_shapes:
            explore = masked_particle_entropy(flat, valid.flatten(), k, exponent, normaliser)
        else:
            chosen = flat[valid.flatten()]
            explore = torch.zeros(len(flat), device=h.device)
            explore[valid.flatten()] = particle_entropy_reward(chosen, chosen, k, exclude_self=True,
                                                               exponent=exponent, normaliser=normaliser)
        explore = explore.view(h.shape[:-1])
    if h is not None:
        total = total + explore_weight * explore.to(total.dtype)
    return IntrinsicReward(total, exploit, explore)


def particle_entropy_reward(
    source: torch.Tensor,
    target: torch.Tensor,
    k: int,
    *,
    exclude_self: bool = False,
    exponent: float = 1.0,
    normaliser: RunningMean | None = None,
) -> torch.Tensor:
    """r_i = log(1 + (1/k) sum_{j in N_k(i)} ||source_i - target_j||_2 ** exponent / m).

    N_k(i) are the k rows of `target` (M, d) nearest to row i of `source` (N, d) (or of S independent sets:
    source (S, N, d), target (S, M, d), a seed group's with `SeedNormalisers`). `exponent=1` is the
    plain distance of the public implementations; the paper writes the distance raised to n_h, the
    representation dimension: pass `exponent=source.shape[1]`. m = 1, or with a `normaliser` (the
    reference code's option) the running mean of all neighbour terms seen so far, this batch included.

    Decisions:
    - Self-distance: with `exclude_self=True` (the learner's setting: its batch is its own particle
      set, `source is target`), row i of `target` is not a neighbour of row i of `source`, so a point
      never counts its own zero distance. Duplicates of a state elsewhere in the batch are other
      particles and do count at distance 0: they are evidence of high density there.
    - Fewer than k candidates: the mean runs over all m < k available neighbours (k_eff = min(k, m)),
      so the reward stays a mean distance, never NaN and never padded with zeros; m = 0 is an error.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if source.ndim not in (2, 3) or target.ndim != source.ndim or source.shape[-1] != target.shape[-1] \
            or source.shape[:-2] != target.shape[:-2]:
        raise ValueError(f"source (N, d) and target (M, d) must share d; got {tuple(source.shape)}, "
                         f"{tuple(target.shape)}")
    if exclude_self and source.shape[-2] != target.shape[-2]:
        raise ValueError("exclude_self pairs row i of source with row i of target: they need the same N")
    available = target.shape[-2] - int(exclude_self)
    if available < 1:
        raise ValueError("particle_entropy_reward needs at least one neighbour candidate in target")
    dist = torch.cdist(source, target)
    if exclude_self:
        dist.diagonal(dim1=-2, dim2=-1).fill_(float("inf"))
    terms = dist.topk(min(k, available), dim=-1, largest=False).values ** exponent
    if normaliser is not None:
        terms = terms / normaliser.update(terms).to(terms.dtype).clamp_min(1e-8)
    return torch.log1p(terms.mean(dim=-1))


class RunningMean:
    """Mean of every value seen so far, updated batch by batch (the reference code's distance normaliser).

    After batches x_1..x_t: mean = sum of all values / count of all values.
    """

    def __init__(self) -> None:
        self.mean = torch.zeros((), dtype=torch.float64)
        self.count = 0

    def update(self, values: torch.Tensor) -> torch.Tensor:
        """Fold `values` in and return the new mean (a float64 scalar tensor)."""
        n = values.numel()
        if n:
            batch_mean = values.detach().double().mean()
            self.mean = self.mean + (batch_mean - self.mean) * n / (self.count + n)
            self.count += n
        return self.mean

    def to(self, device: torch.device) -> None:
        """Move the mean to `device`."""
        self.mean = self.mean.to(device)

    def state_dict(self) -> dict:
        return {"mean": self.mean.clone(), "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.mean, self.count = state["mean"].to(self.mean.device, copy=True), int(state["count"])


class SeedNormalisers:
    """The distance normalisers of a seed group's learners, one `RunningMean` each: `update` folds set i of
    values (S, ...) into seed i's and returns the means (S, 1, 1), each what that seed alone would hold."""

    def __init__(self, seeds: list[RunningMean]) -> None:
        self.seeds = seeds

    def update(self, values: torch.Tensor) -> torch.Tensor:
        means = [seed.update(v) for seed, v in zip(self.seeds, values, strict=True)]
        return torch.stack(means)[:, None, None]


def valid_mean(values: torch.Tensor, valid: torch.Tensor | None, fixed_shapes: bool) -> torch.Tensor:
    """The mean of `values` over the valid steps (all if `valid` is None), as `intrinsic_reward` treats
    them: over the selection values[valid], or with `fixed_shapes` as sum(values * valid) / sum(valid)
    (no host sync; equal up to float rounding)."""
    if valid is None:
        return values.mean()
    return (values * valid).sum() / valid.sum() if fixed_shapes else values[valid].mean()


class MaskedRunningMean(RunningMean):
    """`RunningMean` with its mean and count tensors on a device, updated in place (no host sync, fixed
    addresses for a CUDA graph), also folding in only the values where a mask is True. The mean has shape
    (1,), not (): torch.compile (2.13) loses in-place updates of a 0-d float64 CPU tensor."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.mean = torch.zeros(1, dtype=torch.float64, device=device)
        self.count = torch.zeros((), dtype=torch.int64, device=device)

    def to(self, device: torch.device) -> None:
        """Move the mean and the count to `device`."""
        super().to(device)
        self.count = self.count.to(device)

    def update(self, values: torch.Tensor) -> torch.Tensor:
        """Fold all of `values` in (`RunningMean.update`'s arithmetic, in place); return the new mean."""
        n = values.numel()
        if n:
            batch_mean = values.detach().double().mean()
            self.mean.add_((batch_mean - self.mean) * n / (self.count + n))
            self.count.add_(n)
        return self.mean

    def update_masked(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Fold `values[mask]` in (mean += (batch mean - mean) n / (count + n), n = mask.sum()) and return
        the new mean (a float64 scalar tensor)."""
        n = mask.sum()
        batch_mean = (values.detach().double() * mask).sum() / n.clamp_min(1)
        self.mean.add_((batch_mean - self.mean) * n / (self.count + n).clamp_min(1))
        self.count.add_(n)
        return self.mean

    def state_dict(self) -> dict:
        return {"mean": self.mean.reshape(()).clone(), "count": int(self.count)}

    def load_state_dict(self, state: dict) -> None:
        self.mean.copy_(state["mean"].reshape(1))
        self.count.fill_(int(state["count"]))


def masked_particle_entropy(h: torch.Tensor, valid: torch.Tensor, k: int, exponent: float,
                            normaliser: MaskedRunningMean | None) -> torch.Tensor:
    """`particle_entropy_reward(h[valid], h[valid], k, exclude_self=True, ...)` on the valid rows of h (N, d),
    0 on the others, with tensors of fixed shape: r_i = log(1 + mean_{j in N_k(i)} ||h_i - h_j|| ** exponent
    / m), N_k(i) the min(k, V - 1) valid rows nearest to row i (V valid rows, i itself excluded), m the
    normaliser's running mean of all neighbour terms (1 without one)."""
    inf = float("inf")
    dist = torch.cdist(h, h).masked_fill(~valid[None, :], inf).fill_diagonal_(inf)
    near = dist.topk(min(k, len(h) - 1), dim=1, largest=False).values  # valid neighbours first, then inf
    found = torch.isfinite(near) & valid[:, None]
    terms = near.masked_fill(~found, 0.0) ** exponent
    if normaliser is not None:
        terms = terms / normaliser.update_masked(terms, found).to(terms.dtype).clamp_min(1e-8)
    return torch.log1p((terms * found).sum(1) / found.sum(1).clamp_min(1))


def vmf_reward(phi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """log q(s | w) up to a constant, for a von Mises-Fisher q with unit-norm phi(s'): r = phi(s')^T w."""
    return (phi * w).sum(dim=-1)


def vmf_loss(phi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The vMF discriminator's negative log-likelihood, -mean phi(s')^T w: pulls phi(s') towards the w that
    produced s' (over the last batch dim: a seed group's (S, B, d) gives each seed's, (S,))."""
    return -vmf_reward(phi, w).mean(-1)
