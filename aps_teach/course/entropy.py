"""Entropy of a point cloud from nearest-neighbour distances, and closed forms to check it against.

APT's reward log(1 + mean kNN distance) is a proxy for the Kozachenko-Leonenko estimator below
(the particle estimator of Singh et al., 2003): same ingredient, the distance to near neighbours,
without the constants that make it unbiased. Notebook 03 compares both with exact entropies.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import digamma, gammaln


def knn_entropy(points: np.ndarray, k: int) -> float:
    """Kozachenko-Leonenko estimate of the differential entropy (nats) of n samples in R^d:

    H ~ psi(n) - psi(k) + log V_d + (d / n) sum_i log eps_i,

    with eps_i the distance from point i to its k-th nearest other point and V_d = pi^(d/2) /
    Gamma(d/2 + 1) the volume of the unit d-ball.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2:
        raise ValueError(f"points must be an (n, d) array, got shape {points.shape}")
    n, d = points.shape
    if not 1 <= k < n:
        raise ValueError(f"k must be between 1 and n - 1 = {n - 1}, got {k}")
    distances = torch.cdist(torch.from_numpy(points), torch.from_numpy(points))
    distances.fill_diagonal_(float("inf"))
    eps = distances.topk(k, dim=1, largest=False).values[:, -1].numpy()
    if (eps == 0).any():
        raise ValueError("knn_entropy needs distinct points: some point has k duplicates at distance 0")
    log_unit_ball = d / 2 * np.log(np.pi) - gammaln(d / 2 + 1)
    return float(digamma(n) - digamma(k) + log_unit_ball + d * np.log(eps).mean())


def gaussian_entropy(cov: np.ndarray) -> float:
    """Differential entropy of N(mu, cov): (1/2) log det(2 pi e cov)."""
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    sign, logdet = np.linalg.slogdet(2 * np.pi * np.e * cov)
    if sign <= 0:
        raise ValueError("cov must be positive definite")
    return 0.5 * float(logdet)


def uniform_box_entropy(sides) -> float:
    """Differential entropy of the uniform distribution on a box: log of its volume."""
    return float(np.sum(np.log(np.asarray(sides, dtype=float))))
