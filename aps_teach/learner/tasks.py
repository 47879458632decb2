"""Task vectors w: sampling on the unit sphere, least-squares (or ridge) inference, Q = psi^T w and GPI.

A task is a unit vector w; the reward the successor-feature agent assumes is r = phi(s')^T w, so the
successor features psi(s, a, w) (the expected discounted sum of phi) value task w at Q = psi^T w.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from aps_teach.infra.checks import check_range


def sample_tasks(n: int, dim: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """`n` task vectors uniform on the unit sphere in R^dim: w = g / ||g||, g ~ N(0, I). Shape (n, dim)."""
    if n < 1 or dim < 1:
        raise ValueError(f"sample_tasks needs n >= 1 and dim >= 1, got n={n}, dim={dim}")
    g = torch.randn(n, dim, generator=generator)
    return g / g.norm(dim=1, keepdim=True)


def infer_task(features: torch.Tensor, rewards: torch.Tensor, ridge: float = 0.0) -> torch.Tensor:
    """The task behind `rewards`: w = argmin_w ||features @ w - rewards||^2 + ridge ||w||^2, scaled to unit
    norm. `ridge` 0 is plain least squares; ridge lambda > 0 is the closed form
    (X^T X + lambda I)^{-1} X^T r (`ridge_solution`), the least-squares fit shrunk towards 0.

    `features` is (N, d) (rows phi(s')), `rewards` is (N,). This regresses rewards on features;
    solving it the other way round (rewards as the design matrix) is a known bug that recovers w
    only when the features are uncorrelated (see tests/learner/test_tasks.py).
    """
    if features.ndim != 2 or rewards.ndim != 1 or features.shape[0] != rewards.shape[0]:
        raise ValueError(
            f"infer_task needs features (N, d) and rewards (N,); got features {tuple(features.shape)} "
            f"and rewards {tuple(rewards.shape)}"
        )
    if not torch.isfinite(features).all() or not torch.isfinite(rewards).all():
        what = "features" if not torch.isfinite(features).all() else "rewards"
        raise ValueError(f"infer_task: the {what} are not all finite numbers (NaN or inf); finite features "
                         "need a network that did not diverge (lower its learning rate)")
    ridge = check_ridge(ridge)
    x = features.double()
    if ridge:
        w = ridge_solution(x, rewards.double(), ridge)
    else:
        w = torch.linalg.lstsq(x, rewards.double()[:, None], driver="gelsd").solution[:, 0]
    norm = w.norm()
    if not torch.isfinite(norm) or norm == 0:
        raise ValueError("infer_task: the least-squares w is zero (all rewards zero?); no task to infer")
    return (w / norm).to(features.dtype)


def check_ridge(ridge: float, name: str = "ridge") -> float:
    """`ridge`, the strength lambda of a ridge task regression, if it is a finite number >= 0 (0: plain least
    squares); else a ValueError naming `name` and what is valid."""
    return check_range(name, ridge, 0)


def ridge_solution(features: torch.Tensor, rewards: torch.Tensor, ridge: float) -> torch.Tensor:
    """c = argmin_c ||X c - r||^2 + lambda ||c||^2 = (X^T X + lambda I)^{-1} X^T r for X = `features` (N, d),
    r = `rewards` (N,), lambda = `ridge` > 0, unnormalised, in the features' dtype.

    Solved as the least-squares problem it equals, [X; sqrt(lambda) I] c = [r; 0], rather than by forming
    X^T X: that would square the condition number of features that are nearly collinear (1e8 occurs)."""
    d = features.shape[1]
    design = torch.cat([features, math.sqrt(ridge) * torch.eye(d, dtype=features.dtype)])
    target = torch.cat([rewards, torch.zeros(d, dtype=rewards.dtype)])
    return torch.linalg.lstsq(design, target[:, None], driver="gelsd").solution[:, 0]


def q_values(psi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Q = psi^T w over the last dimension: psi (..., d) successor features, w broadcast against them. For
    psi(s, ., w) (B, A, d) pass w[:, None] (B, 1, d) to get Q(s, .) (B, A)."""
    return (psi * w).sum(dim=-1)


def gpi_candidates(
    w: torch.Tensor, num_samples: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """GPI policies for each row of `w` (B, d): {w} plus `num_samples` fresh tasks, shape (B, 1+n, d)."""
    batch, dim = w.shape
    if num_samples == 0:
        return w[:, None]
    fresh = sample_tasks(batch * num_samples, dim, generator).reshape(batch, num_samples, dim)
    return torch.cat([w[:, None], fresh.to(w)], dim=1)


def gpi_action_values(psi: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """GPI: Q(s, a) = max_i psi(s, a, z_i)^T w, every candidate z_i scored under the current task w (Q as
    `q_values` defines it, here one einsum over the candidates).

    `psi` is (B, C, A, d) for C candidates, `w` is (B, d); returns (B, A). Scoring candidate i under
    its own z_i instead (psi_i^T z_i) ranks policies by how well each does its *own* task, a bug.
    """
    if psi.ndim != 4 or w.ndim != 2 or psi.shape[0] != w.shape[0] or psi.shape[3] != w.shape[1]:
        raise ValueError(f"gpi_action_values needs psi (B, C, A, d) and w (B, d); got {tuple(psi.shape)}, "
                         f"{tuple(w.shape)}")
    return torch.einsum("bcad,bd->bca", psi, w).amax(dim=1)


def r_squared(features: torch.Tensor, rewards: torch.Tensor, coefficients: torch.Tensor) -> float:
    """R^2 = 1 - sum (r - Phi c)^2 / sum (r - mean r)^2; NaN when the rewards are all equal."""
    r = rewards.double()
    ss_res = float(((r - features.double() @ coefficients.double()) ** 2).sum())
    ss_tot = float(((r - r.mean()) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan


@dataclass
class TaskFit:
    """Least-squares (or ridge) task identification of one task."""

    w: torch.Tensor
    """The unit task vector acted on: infer_task's, or a random one when no reward was seen."""
    coefficients: torch.Tensor | None
    """c = argmin ||Phi c - r||^2 + ridge ||c||^2 (unnormalised, float64), so w = c / ||c||; None when no
    reward was seen."""
    r2: float
    """R^2 of r ~ Phi c on the identification data (NaN when no reward was seen)."""
    identified: bool


def fit_task(features: torch.Tensor, rewards: torch.Tensor, seed: int, ridge: float = 0.0) -> TaskFit:
    """`infer_task` on (Phi, r) and its R^2; with no reward in r, a w drawn on the sphere from `seed`.

    Least squares (`ridge` 0): c is w scaled by the least-squares step along it, (Phi w)^T r / ||Phi w||^2:
    the minimiser lies on the line through w, so this is the unnormalised solution without solving the
    regression twice. It uses w in float64: with nearly collinear features (condition numbers of 1e8 occur)
    the float32 w acted on is off the minimiser's line enough to understate R^2. Ridge (`ridge` lambda > 0):
    c is the ridge minimiser itself, (Phi^T Phi + lambda I)^{-1} Phi^T r (`ridge_solution`), the fitted
    reward Phi c shrunk towards 0 (so its R^2 is at most the least-squares one), and w = c / ||c||."""
    ridge = check_ridge(ridge)
    if not rewards.any():
        w = sample_tasks(1, features.shape[1], torch.Generator().manual_seed(seed))[0]
        return TaskFit(w, None, math.nan, False)
    if ridge:
        coefficients = ridge_solution(features.double(), rewards.double(), ridge)
        w = infer_task(features.double(), rewards, ridge)
        return TaskFit(w.to(features.dtype), coefficients, r_squared(features, rewards, coefficients), True)
    w = infer_task(features.double(), rewards)
    direction = features.double() @ w
    coefficients = w * (direction @ rewards.double()) / (direction @ direction)
    return TaskFit(w.to(features.dtype), coefficients, r_squared(features, rewards, coefficients), True)
