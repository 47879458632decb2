"""Summaries over seeds, and rliable's aggregates over runs x tasks, each with a 95% percentile-bootstrap
confidence interval (scipy).

- `mean_with_ci`, `summarise`: the mean of independent values (one per seed) and its bootstrap interval.
- `cluster_mean_with_ci` (and `summarise(..., cluster=...)`): the mean of rows that are not independent,
  e.g. the tasks of one seed, which share its pretraining; the bootstrap resamples whole clusters (seeds).
- `iqm_with_ci`, `improvement_with_ci`: rliable's interquartile mean over runs x tasks and probability of
  improvement (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice"), with its
  stratified bootstrap: each task's runs resampled with replacement, independently of the other tasks'.

rliable itself is not a dependency: its last release (1.2.0) needs `arch`, which does not import beside
pandas 3 (arch 7.2.0: `TypeError: deprecate_kwarg() missing 1 required positional argument:
'new_arg_name'`). The estimators here follow its definitions (`metrics.aggregate_iqm`,
`metrics.probability_of_improvement`, `library.StratifiedBootstrap` and `StratifiedIndependentBootstrap`
without task bootstrap, percentile intervals of 95%); only the resampling's random stream and its count
(10,000 here, 50,000 in rliable) differ. Every function is seeded: the same inputs give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

RESAMPLES = 10_000
"""Bootstrap resamples of every interval here."""


def _finite(values, what: str) -> np.ndarray:
    """`values` as a float array; ValueError unless it is a non-empty 1-D list of finite numbers."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
        raise ValueError(f"{what} must be a non-empty list of finite numbers, got {array.tolist()!r}")
    return array


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), e.g. 0.95; got {confidence!r}")


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
    result = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=RESAMPLES,
                             method="percentile", rng=np.random.default_rng(seed))
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def cluster_mean_with_ci(values: Sequence[float], clusters: Sequence, confidence: float = 0.95,
                         seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean of all values, and its cluster-bootstrap interval: each resample draws
    as many clusters as there are, with replacement, each with all its values, and takes the mean of the
    values drawn, sum_c S_c / sum_c n_c (S_c, n_c: a drawn cluster's sum and count); percentile interval,
    10,000 resamples.

    For values that are not independent within a cluster (`clusters[i]` names value i's, e.g. its seed:
    a seed's transfer tasks share its pretraining). With one cluster, or all values equal, the interval
    collapses to the mean. Clusters are compared by their names as text and taken in sorted order, and
    each cluster's values sorted, so the numbers do not depend on the rows' order.
    """
    _check_confidence(confidence)
    values = _finite(values, "cluster_mean_with_ci's values")
    names = [str(cluster) for cluster in clusters]
    if len(names) != values.size:
        raise ValueError(f"cluster_mean_with_ci needs one cluster per value, got {values.size} values and "
                         f"{len(names)} clusters")
    mean = float(np.sort(values).mean())
    groups = [np.sort(values[[name == cluster for name in names]]) for cluster in sorted(set(names))]
    if len(groups) == 1 or np.all(values == values[0]):
        return mean, mean, mean
    sums = np.array([group.sum() for group in groups])
    sizes = np.array([group.size for group in groups], dtype=float)
    result = stats.bootstrap((sums, sizes), lambda s, n, axis: s.sum(axis=axis) / n.sum(axis=axis),
                             paired=True, vectorized=True, confidence_level=confidence,
                             n_resamples=RESAMPLES, method="percentile", rng=np.random.default_rng(seed))
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def _stratified_ci(samples: list[np.ndarray], statistic: Callable[[list[np.ndarray]], np.ndarray],
                   confidence: float, seed: int) -> tuple[float, float, float]:
    """(statistic, low, high) with the stratified bootstrap: each sample (a task's runs, sorted) resampled
    with replacement independently of the others (`scipy.stats.bootstrap`, one sample per stratum,
    paired=False), percentile interval. `statistic` takes the samples, each of shape (..., n_i), and
    reduces the last axis. A sample of one value is the same in every resample; if every sample has one,
    the interval collapses to the statistic."""
    _check_confidence(confidence)
    point = float(statistic(samples))
    varying = [i for i, sample in enumerate(samples) if sample.size > 1]
    if not varying:
        return point, point, point

    def resampled(*drawn, axis):
        batch = drawn[0].shape[:-1]
        full = [np.broadcast_to(sample, (*batch, sample.size)) for sample in samples]
        for i, sample in zip(varying, drawn, strict=True):
            full[i] = sample
        return statistic(full)

    result = stats.bootstrap([samples[i] for i in varying], resampled, paired=False, vectorized=True,
                             confidence_level=confidence, n_resamples=RESAMPLES, method="percentile",
                             rng=np.random.default_rng(seed))
    return point, float(result.confidence_interval.low), float(result.confidence_interval.high)


def _per_task(scores: Sequence[Sequence[float]], what: str) -> list[np.ndarray]:
    """Each task's run scores as a sorted float array; ValueError without tasks, or for a task without
    runs or with a non-finite score."""
    if len(scores) == 0:
        raise ValueError(f"{what} needs at least one task, got none")
    return [np.sort(_finite(runs, f"{what}: task {t}'s run scores")) for t, runs in enumerate(scores)]


def _iqm(samples: list[np.ndarray]) -> np.ndarray:
    return stats.trim_mean(np.concatenate(samples, axis=-1), 0.25, axis=-1)


def iqm_with_ci(scores: Sequence[Sequence[float]], confidence: float = 0.95, seed: int = 0
                ) -> tuple[float, float, float]:
    """(IQM, low, high): rliable's interquartile mean, the mean of the middle 50% of every run x task score
    pooled (`scipy.stats.trim_mean(x, 0.25)`: int(N / 4) of the N scores cut from each end), and its
    stratified-bootstrap interval (`_stratified_ci`: each task's runs resampled, 10,000 resamples).

    `scores[t]` holds task t's runs (rliable's runs x tasks matrix, column by column; tasks may have
    different numbers of runs). With one run per task the interval collapses to the IQM: the resamples
    cannot vary, which says nothing about run-to-run spread."""
    return _stratified_ci(_per_task(scores, "iqm_with_ci"), _iqm, confidence, seed)


def improvement_with_ci(x: Sequence[Sequence[float]], y: Sequence[Sequence[float]], confidence: float = 0.95,
                        seed: int = 0) -> tuple[float, float, float]:
    """(P(X > Y), low, high): rliable's probability of improvement of method X over method Y,
    (1 / M) sum_m (1 / (n_m k_m)) sum_i sum_j S(x_mi, y_mj), S = 1 if x > y, 1/2 if equal, 0 else (per task
    m the Mann-Whitney U statistic over n_m runs of X and k_m of Y, normalised to [0, 1]), averaged over the
    M tasks; its stratified-bootstrap interval resamples each task's runs of X and of Y independently
    (rliable's `StratifiedIndependentBootstrap`, 10,000 resamples).

    `x[m]`, `y[m]`: the run scores of X and of Y on task m, the same tasks in the same order."""
    x, y = _per_task(x, "improvement_with_ci's x"), _per_task(y, "improvement_with_ci's y")
    if len(x) != len(y):
        raise ValueError(f"improvement_with_ci compares X and Y task by task: got {len(x)} tasks for X and "
                         f"{len(y)} for Y")

    def improvement(samples: list[np.ndarray]) -> np.ndarray:
        pairs = [(a[..., :, None], b[..., None, :]) for a, b in zip(samples[:len(x)], samples[len(x):],
                                                                     strict=True)]
        return np.mean([((a > b) + 0.5 * (a == b)).mean(axis=(-2, -1)) for a, b in pairs], axis=0)

    return _stratified_ci([*x, *y], improvement, confidence, seed)


def difference_with_ci(x: Sequence[float], y: Sequence[float], confidence: float = 0.95, seed: int = 0
                       ) -> tuple[float, float, float]:
    """(mean(x) - mean(y), low, high): the difference of two groups' means and its percentile-bootstrap
    interval, each group resampled with replacement independently of the other (`_stratified_ci`, the two
    groups as strata, 10,000 resamples). Each value is one independent unit, e.g. a seed's mean over the
    tasks that share its pretraining, so the interval resamples seeds, not tasks. A group of one value is
    the same in every resample; with both such, or both constant, the interval collapses to the
    difference."""
    groups = [np.sort(_finite(x, "difference_with_ci's x")), np.sort(_finite(y, "difference_with_ci's y"))]
    return _stratified_ci(groups, lambda samples: samples[0].mean(axis=-1) - samples[1].mean(axis=-1),
                          confidence, seed)


Summary = tuple[float, float, float, int]


def summarise(rows, by: tuple[str, ...], value: str, *, drop_nan: bool = False, cluster: str | None = None
              ) -> dict[tuple[str, ...], Summary]:
    """Group result rows (dicts, e.g. from a CSV) by the columns `by`; per group the mean of
    column `value` with its 95% bootstrap interval, and the number of rows: (mean, low, high, n).
    The rows of a group are taken as independent (`mean_with_ci`: one row per seed) unless `cluster`
    names the column that groups the rows that are not (e.g. "seed" for transfer rows, a row per task of a
    seed): then the interval resamples whole clusters (`cluster_mean_with_ci`), and n still counts rows.
    `drop_nan` leaves out rows whose value is NaN (e.g. an R^2 with no reward seen), and n counts the
    rest; a group with none left is absent."""
    groups: dict[tuple[str, ...], tuple[list[float], list[str]]] = {}
    for row in rows:
        number = float(row[value])
        if drop_nan and np.isnan(number):
            continue
        numbers, clusters = groups.setdefault(tuple(str(row[column]) for column in by), ([], []))
        numbers.append(number)
        clusters.append(str(row[cluster]) if cluster is not None else "")
    return {key: (*(mean_with_ci(numbers) if cluster is None else cluster_mean_with_ci(numbers, clusters)),
                  len(numbers)) for key, (numbers, clusters) in groups.items()}


SOLVED = 0.5
"""A seed solves a level when at least this share of its evaluation episodes reach the target."""


def solved_count(values: Sequence[float], threshold: float = SOLVED) -> tuple[int, int]:
    """(k, N): how many of N seeds' success rates are >= `threshold` (`SOLVED`), the "k of N seeds" reported
    beside every mean success rate."""
    values = np.asarray(values, dtype=float)
    return int((values >= threshold).sum()), int(values.size)


def rate_text(values: Sequence[float]) -> str:
    """'mean [low, high], k/N': a success rate over seeds as the results pages and figures report it."""
    mean, low, high = mean_with_ci(values)
    k, n = solved_count(values)
    return f"{mean:.2f} [{low:.2f}, {high:.2f}], {k}/{n}"


def beats(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> bool:
    """The course's one rule for 'method A beats method B': given each method's 95% interval (low, high) on
    the same measures, column by column, A's interval lies wholly above B's in at least one column and
    wholly below it in none."""
    if len(a) != len(b) or not a:
        raise ValueError(f"beats needs the same one or more columns for both methods, got {len(a)} and "
                         f"{len(b)}")
    above = [low_a > high_b for (low_a, _), (_, high_b) in zip(a, b, strict=True)]
    below = [high_a < low_b for (_, high_a), (low_b, _) in zip(a, b, strict=True)]
    return any(above) and not any(below)


VERDICTS = {True: "holds", False: "not shown",
            None: "nothing to decide (every method at 0, or every one at 1)"}
"""How a claim's verdict reads: `claim_verdict`'s three states. A claim the rule does not find is *not shown*,
not refuted: overlapping intervals cannot exclude an effect (issue 58; `verdict_word` says "does not hold"
only where the opposite is shown)."""
REFUTED = "does not hold"
"""How a claim reads when the rule shows its opposite: 'A beats B' where B beats A, 'nobody beats APS' where
one method does."""


def verdict_word(verdict: bool | None, refuted: bool = False) -> str:
    """How `verdict` (`claim_verdict`'s) reads: `REFUTED` when the claim is not found and `refuted`, the same
    rule showing its opposite; otherwise `VERDICTS[verdict]`, "not shown" for a claim not found."""
    return REFUTED if refuted and verdict is False else VERDICTS[verdict]


def claim_verdict(holds: bool, intervals: Sequence[tuple[float, float]]) -> bool | None:
    """A claim about methods' scores in [0, 1]: `holds` (decided by `beats`), or None, nothing to decide, when
    every interval (low, high) of every method it compares is [0, 0], or every one is [1, 1]: all fail alike
    or all reach the ceiling, so none can be better or worse, and 'nobody beats X' would hold only
    vacuously."""
    if all(low == high == 0 for low, high in intervals) or all(low == high == 1 for low, high in intervals):
        return None
    return bool(holds)
