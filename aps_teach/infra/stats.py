"""Summaries over seeds: the mean with a 95% bootstrap confidence interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def mean_with_ci(
    values: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its percentile-bootstrap interval (scipy, 10,000 resamples).

    With one value, or all values equal, the interval collapses to the mean. The values are sorted
    first, so the interval does not depend on their order (e.g. the order parallel runs finished in).
    """
    values = np.sort(np.asarray(values, dtype=float))
    if values.size == 0:
        raise ValueError("mean_with_ci needs at least one value")
    mean = float(values.mean())
    if values.size == 1 or np.all(values == values[0]):
        return mean, mean, mean
    result = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=10_000,
                             method="percentile", rng=np.random.default_rng(seed))
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


Summary = tuple[float, float, float, int]


def summarise(rows, by: tuple[str, ...], value: str, *, drop_nan: bool = False
              ) -> dict[tuple[str, ...], Summary]:
    """Group result rows (dicts, e.g. from a CSV) by the columns `by`; per group the mean of
    column `value` with its 95% bootstrap interval, and the number of rows: (mean, low, high, n).
    `drop_nan` leaves out rows whose value is NaN (e.g. an R^2 with no reward seen), and n counts the
    rest; a group with none left is absent."""
    groups: dict[tuple[str, ...], list[float]] = {}
    for row in rows:
        number = float(row[value])
        if drop_nan and np.isnan(number):
            continue
        groups.setdefault(tuple(str(row[column]) for column in by), []).append(number)
    return {key: (*mean_with_ci(values), len(values)) for key, values in groups.items()}


SOLVED = 0.5
"""A seed solves a level when at least this share of its evaluation episodes reach the target."""


def solved_count(values: Sequence[float], threshold: float = SOLVED) -> tuple[int, int]:
    """(k, N): how many of N seeds' success rates are >= `threshold` (`SOLVED`), the "k of N seeds" reported
    beside every mean success rate."""
    values = np.asarray(values, dtype=float)
    return int((values >= threshold).sum()), int(values.size)


def rate_text(values: Sequence[float]) -> str:
    """'mean [low, high], k/N': a success rate over seeds as the README and figures report it."""
    mean, low, high = mean_with_ci(values)
    k, n = solved_count(values)
    return f"{mean:.2f} [{low:.2f}, {high:.2f}], {k}/{n}"
