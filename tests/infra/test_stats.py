"""rliable's estimators on scipy (IQM, probability of improvement, their stratified bootstrap) and the cluster
bootstrap: each checked against a case worked by hand, the estimator's own definition (scipy's Mann-Whitney U
for rliable's probability of improvement) and a brute-force numpy resampling loop; bad input is refused."""

import numpy as np
import pytest
from scipy import stats

from aps_teach.infra.stats import (
    cluster_mean_with_ci,
    improvement_with_ci,
    iqm_with_ci,
    mean_with_ci,
    summarise,
)

B = 10_000  # resamples of the brute-force loops, as many as the estimators draw


def _percentiles(draws):
    return tuple(np.percentile(draws, [2.5, 97.5]))


def _brute_iqm(tasks, rng):
    """IQM of every resample, each task's runs drawn with replacement on their own (rliable's stratified)."""
    drawn = np.concatenate([np.asarray(runs)[rng.integers(0, len(runs), (B, len(runs)))] for runs in tasks],
                           axis=1)
    drawn.sort(axis=1)
    cut = drawn.shape[1] // 4
    return drawn[:, cut:drawn.shape[1] - cut].mean(axis=1)


def test_iqm_and_its_stratified_interval_worked_by_hand():
    # pooled sorted -1, 0, 0.25, 0.5, 1.5, 2, 3, 10: the IQM drops two from each end
    assert iqm_with_ci([[-1, 10], [0, 3], [0.25, 2], [0.5, 1.5]])[0] == 4.25 / 4
    # two tasks of two runs: A {0, 4}, B {1, 3}; IQM = mean of the middle two of four. A's resamples 00, 04,
    # 44 (1/4, 1/2, 1/4) and B's 11, 13, 33 give IQMs 0.5 (3/16), 1 (2/16), 1.5 (1/16), 2 (4/16), 2.5 (1/16),
    # 3 (2/16), 3.5 (3/16): the 2.5% and 97.5% percentiles sit inside the end atoms, 0.5 and 3.5. (Resampling
    # the four scores pooled would reach 0, e.g. 0 0 0 4, with probability 13/256 > 2.5%.)
    assert iqm_with_ci([[0, 4], [1, 3]]) == (2.0, 0.5, 3.5)
    assert iqm_with_ci([[4, 0], [3, 1]]) == iqm_with_ci([[0, 4], [1, 3]])  # runs' order does not matter
    # one run per task: nothing to resample, the interval collapses; three scores cut none (int(3 / 4) = 0)
    assert iqm_with_ci([[1], [2], [5]]) == (8 / 3, 8 / 3, 8 / 3)


def test_iqm_interval_is_the_brute_force_stratified_bootstrap():
    rng = np.random.default_rng(3)
    tasks = [rng.normal(level, 0.5, size)
             for level, size in ((0.0, 3), (1.0, 5), (2.0, 4), (6.0, 3), (0.5, 1))]
    iqm, low, high = iqm_with_ci(tasks)
    pooled = np.sort(np.concatenate(tasks))
    assert iqm == pytest.approx(pooled[4:12].mean())  # 16 scores: 4 cut from each end
    assert iqm == pytest.approx(stats.trim_mean(pooled, 0.25))
    draws = _brute_iqm(tasks, np.random.default_rng(11))
    tolerance = 0.15 * draws.std()  # about 4 Monte-Carlo standard errors of a 2.5% percentile apart
    assert (low, high) == pytest.approx(_percentiles(draws), abs=tolerance)
    # not the bootstrap that resamples the 16 scores pooled, which mixes the tasks' levels
    unstratified = _brute_iqm([pooled], np.random.default_rng(11))
    assert _percentiles(unstratified)[1] - _percentiles(unstratified)[0] > 1.5 * (high - low)
    assert iqm_with_ci(tasks) == (iqm, low, high)  # seeded
    assert iqm_with_ci(tasks, seed=1) != (iqm, low, high)


def test_probability_of_improvement_is_rliables_mann_whitney_average():
    rng = np.random.default_rng(5)
    x = [rng.integers(0, 4, n).astype(float) for n in (3, 5, 4)]  # small integers: ties
    y = [rng.integers(0, 4, n).astype(float) for n in (4, 2, 5)]
    expected = np.mean([stats.mannwhitneyu(a, b, alternative="greater").statistic / (len(a) * len(b))
                        for a, b in zip(x, y, strict=True)])
    p, low, high = improvement_with_ci(x, y)
    assert p == pytest.approx(expected)
    assert p + improvement_with_ci(y, x)[0] == pytest.approx(1.0)  # ties count half each way
    assert improvement_with_ci(x, x)[0] == 0.5
    brute = np.random.default_rng(13)
    draws = []
    for a, b in zip(x, y, strict=True):  # each task's runs of X and of Y drawn on their own
        xa = a[brute.integers(0, len(a), (B, len(a)))][:, :, None]
        yb = b[brute.integers(0, len(b), (B, len(b)))][:, None, :]
        draws.append(((xa > yb) + 0.5 * (xa == yb)).mean(axis=(1, 2)))
    draws = np.mean(draws, axis=0)
    assert (low, high) == pytest.approx(_percentiles(draws), abs=0.15 * draws.std())


def test_probability_of_improvement_worked_by_hand():
    # task 1: X 1, 2, 3 against Y 2, 2 -> (0 + 0.5 + 1) / 3 = 0.5; task 2: X 3, 4 beat Y 1, 2 always -> 1
    x, y = [[1, 2, 3], [3, 4]], [[2, 2], [1, 2]]
    # resampled, task 2 stays 1 and task 1 is the mean of three draws of 0, 0.5, 1: all 0 or all 1 each with
    # probability 1/27 > 2.5%, so the interval is [(0 + 1) / 2, (1 + 1) / 2]
    assert improvement_with_ci(x, y) == (0.75, 0.5, 1.0)


def test_cluster_interval_resamples_whole_clusters():
    values, seeds = [0, 0, 1, 1, 1, 1], ["a", "a", "b", "b", "b", "b"]
    # two seeds drawn with replacement: aa -> 0 (1/4), ab -> 4/6 (1/2), bb -> 1 (1/4)
    assert cluster_mean_with_ci(values, seeds) == (4 / 6, 0.0, 1.0)
    assert mean_with_ci(values)[1] > 0.2  # resampling the six rows as independent: far narrower
    assert cluster_mean_with_ci(values[::-1], seeds[::-1]) == (4 / 6, 0.0, 1.0)  # rows' order
    assert cluster_mean_with_ci(values, [0, 0, 1, 1, 1, 1]) == cluster_mean_with_ci(values, [*"001111"])
    assert cluster_mean_with_ci([0.5, 0.2, 0.9], [7, 7, 7]) == pytest.approx((1.6 / 3,) * 3)  # one cluster
    rng = np.random.default_rng(7)
    sizes = [8, 8, 10, 5, 8, 12]
    groups = [rng.normal(rng.normal(0.5, 0.3), 0.2, n) for n in sizes]
    rows = np.concatenate(groups)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    mean, low, high = cluster_mean_with_ci(rows, labels)
    assert mean == pytest.approx(rows.mean())
    picks = np.random.default_rng(17).integers(0, len(sizes), (B, len(sizes)))
    sums, counts = np.array([g.sum() for g in groups]), np.array(sizes)
    draws = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    assert (low, high) == pytest.approx(_percentiles(draws), abs=0.15 * draws.std())


def test_summarise_by_cluster_counts_rows_and_resamples_clusters():
    rows = [{"m": m, "seed": s, "x": x} for m, s, x in [
        ("a", 0, 0.0), ("a", 0, 0.0), ("a", 1, 1.0), ("a", 1, 1.0), ("a", 1, 1.0), ("a", 1, 1.0),
        ("b", 0, 0.2), ("b", 1, 0.4), ("b", 2, float("nan"))]]
    summary = summarise(rows, ("m",), "x", cluster="seed", drop_nan=True)
    assert summary == {("a",): (4 / 6, 0.0, 1.0, 6), ("b",): (*cluster_mean_with_ci([0.2, 0.4], [0, 1]), 2)}
    assert summarise(rows[:6], ("m",), "x") == {("a",): (*mean_with_ci([0, 0, 1, 1, 1, 1]), 6)}


@pytest.mark.parametrize("call, message", [
    (lambda: iqm_with_ci([]), "iqm_with_ci needs at least one task, got none"),
    (lambda: iqm_with_ci([[1.0], []]), r"task 1's run scores must be a non-empty list of finite .* got \[\]"),
    (lambda: iqm_with_ci([[1.0, np.nan]]), r"task 0's run scores must be .* got \[1.0, nan\]"),
    (lambda: iqm_with_ci([[1.0, 2.0]], confidence=95), "confidence must be between 0 and 1"),
    (lambda: improvement_with_ci([[1.0]], [[1.0], [2.0]]), "got 1 tasks for X and 2 for Y"),
    (lambda: cluster_mean_with_ci([1.0, 2.0], [0]), "one cluster per value, got 2 values and 1 clusters"),
    (lambda: cluster_mean_with_ci([], []), "values must be a non-empty list of finite numbers, got \\[\\]"),
    (lambda: cluster_mean_with_ci([1.0, np.inf], [0, 1]), r"got \[1.0, inf\]"),
])
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_beats_needs_an_interval_wholly_above_in_one_column_and_wholly_below_in_none():
    from aps_teach.infra.stats import beats

    assert beats([(0.6, 0.9)], [(0.1, 0.5)])
    assert not beats([(0.5, 0.9)], [(0.1, 0.5)])  # touching is not apart
    assert beats([(0.0, 0.0), (0.6, 0.9)], [(0.0, 0.0), (0.1, 0.5)])  # ahead in one column, tied in one
    assert not beats([(0.9, 1.0), (0.0, 0.1)], [(0.0, 0.2), (0.5, 0.9)])  # ahead in one, behind in one
    with pytest.raises(ValueError, match="the same one or more columns"):
        beats([(0, 1)], [])


def test_no_claim_holds_when_every_method_scores_zero():
    """'nobody beats APS' is true of three methods all at 0, and says nothing: the verdict is None."""
    from aps_teach.infra.stats import VERDICTS, beats, claim_verdict

    zero = [(0.0, 0.0), (0.0, 0.0)]  # zero-shot and fine-tuned success, every seed 0
    nobody_beats_aps = not any(beats(other, zero) for other in (zero, zero))
    assert nobody_beats_aps and claim_verdict(nobody_beats_aps, zero * 3) is None
    assert VERDICTS[claim_verdict(nobody_beats_aps, zero * 3)].startswith("nothing to decide")
    some = [(0.0, 0.0), (0.0, 0.3)]  # one method fine-tunes to success on some seed: decidable, a tie
    assert claim_verdict(not beats(some, zero), zero * 2 + some) is True
    better = [(0.0, 0.0), (0.4, 0.8)]  # wholly above in fine-tuned success
    assert claim_verdict(not beats(better, zero), zero * 2 + better) is False
    top = [(1.0, 1.0), (1.0, 1.0)]  # every method at the ceiling on every seed: nothing to decide either
    assert claim_verdict(beats(top, top), top * 2) is None
    assert claim_verdict(beats(top, top), top + [(0.9, 1.0)]) is False


def test_a_claim_not_found_is_not_shown_and_does_not_hold_only_where_its_opposite_is_shown():
    """Issue 58: overlapping intervals cannot exclude an effect, so a claim the rule does not find reads "not
    shown"; "does not hold" is kept for a claim whose opposite the same rule shows."""
    from aps_teach.infra.stats import beats, claim_verdict, verdict_word

    low, high, mid = [(0.0, 0.3)], [(0.5, 0.9)], [(0.2, 0.6)]
    assert verdict_word(claim_verdict(beats(high, low), low + high)) == "holds"
    assert verdict_word(claim_verdict(beats(mid, low), low + mid), refuted=beats(low, mid)) == "not shown"
    assert verdict_word(claim_verdict(beats(low, high), low + high), refuted=beats(high, low)) == \
        "does not hold"
    assert verdict_word(claim_verdict(False, [(0.0, 0.0)] * 2), refuted=True).startswith("nothing to decide")
