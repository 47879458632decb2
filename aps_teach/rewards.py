"""Intrinsic rewards: the kNN particle-entropy reward (APT, APS exploration) and the von Mises-Fisher
reward (VISR, APS exploitation), with the running normaliser the reference code applies to distances.
"""

from __future__ import annotations

import torch


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

    N_k(i) are the k rows of `target` (M, d) nearest to row i of `source` (N, d). `exponent=1` is the
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
    if source.ndim != 2 or target.ndim != 2 or source.shape[1] != target.shape[1]:
        raise ValueError(f"source (N, d) and target (M, d) must share d; got {tuple(source.shape)}, "
                         f"{tuple(target.shape)}")
    if exclude_self and source.shape[0] != target.shape[0]:
        raise ValueError("exclude_self pairs row i of source with row i of target: they need the same N")
    available = target.shape[0] - int(exclude_self)
    if available < 1:
        raise ValueError("particle_entropy_reward needs at least one neighbour candidate in target")
    dist = torch.cdist(source, target)
    if exclude_self:
        dist = dist.fill_diagonal_(float("inf"))
    terms = dist.topk(min(k, available), dim=1, largest=False).values ** exponent
    if normaliser is not None:
        terms = terms / normaliser.update(terms).to(terms.dtype).clamp_min(1e-8)
    return torch.log1p(terms.mean(dim=1))


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

    def state_dict(self) -> dict:
        return {"mean": self.mean.clone(), "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.mean, self.count = state["mean"].clone(), int(state["count"])


def vmf_reward(phi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """log q(s | w) up to a constant, for a von Mises-Fisher q with unit-norm phi(s'): r = phi(s')^T w."""
    return (phi * w).sum(dim=-1)


def vmf_loss(phi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The vMF discriminator's negative log-likelihood, -mean phi(s')^T w: pulls phi(s') towards the w that
    produced s'."""
    return -vmf_reward(phi, w).mean()
