"""The registered metric and its verdicts (`aps_teach.studies.verdicts`) against hand-worked cases: the
seed-bootstrap comparison and its reading, Welch's beside it, a contender's decision and its robustness to
leaving out a class, the text a verdict is printed as, and the tables the studies write."""

import json

import numpy as np
import pytest

import gridworld
from aps_teach.infra.stats import difference_with_ci
from aps_teach.infra.sweeps import read_rows
from aps_teach.studies import verdicts
from aps_teach.studies.arms import FAMILY_ARMS
from aps_teach.studies.verdicts import MARGIN, compare, decide, leave_one_class_out


def rows_of(scores: dict[str, dict[int, dict[str, float]]], level: str = "easy") -> list[dict]:
    """Fine-tuned result rows from arm -> seed -> task -> score."""
    out = []
    for arm, seeds in scores.items():
        method, overrides = FAMILY_ARMS[arm]
        for seed, tasks in seeds.items():
            for task, score in tasks.items():
                out.append({"method": method, "overrides": json.dumps(overrides) if overrides else "",
                            "seed": str(seed), "task": task, "phase": "finetuned", "level": level,
                            "normalised_score": str(score)})
    return out


def test_compare_reads_the_seed_bootstrap_interval_as_registered():
    assert compare([0.8, 0.9, 0.7], [0.1, 0.2, 0.3])["reading"] == "above"
    assert compare([0.1, 0.2, 0.3], [0.8, 0.9, 0.7])["reading"] == "below"
    close = compare([0.50, 0.51, 0.49, 0.50], [0.50, 0.49, 0.51, 0.50])
    assert close["reading"] == "equivalent" and -MARGIN < close["low90"] and close["high90"] < MARGIN
    assert compare([0.0, 0.5, 1.0], [0.2, 0.3, 0.9])["reading"] == "no difference found"
    # the interval is the two-group seed bootstrap, by brute force
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=10), rng.uniform(size=10)
    draws = np.random.default_rng(1)
    brute = [draws.choice(x, 10).mean() - draws.choice(y, 10).mean() for _ in range(40_000)]
    _, low, high = difference_with_ci(x, y)
    assert low == pytest.approx(np.percentile(brute, 2.5), abs=0.01)
    assert high == pytest.approx(np.percentile(brute, 97.5), abs=0.01)


def test_welch_readings_use_scipys_interval_and_the_registered_rule():
    """`interval="welch"` reads a comparison from Welch's t interval of the seeds' scores (scipy's), by the
    registered rule; constant groups collapse it to the difference; an unknown interval is refused."""
    from scipy.stats import ttest_ind

    x, y = [0.52, 0.61, 0.47, 0.58, 0.55], [0.50, 0.44, 0.57, 0.49]
    found = compare(x, y, "welch")
    for confidence, ends in ((0.95, ("low", "high")), (0.90, ("low90", "high90"))):
        by_hand = ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
        assert (found[ends[0]], found[ends[1]]) == pytest.approx((by_hand.low, by_hand.high))
    assert found["difference"] == pytest.approx(np.mean(x) - np.mean(y))
    assert found["reading"] == "no difference found" and found["low"] < 0 < found["high"]
    assert compare([0.8, 0.9, 0.7], [0.1, 0.2, 0.3], "welch")["reading"] == "above"
    flat = compare([0.5, 0.5], [0.5, 0.5], "welch")
    assert (flat["low"], flat["high"], flat["reading"]) == (0.0, 0.0, "equivalent")
    with pytest.raises(ValueError, match="unknown interval 'wald'; valid: bootstrap, welch"):
        compare(x, y, "wald")


def test_a_reading_the_two_intervals_disagree_on_is_marked_marginal():
    """Seeds where the bootstrap's 90% interval lies within the margin and Welch's (wider on 3 seeds each)
    does not: the equivalence is marginal; the contender's verdict, the same both ways, is not."""
    family = gridworld.task_family("easy")
    spread = {"visr": [0.28, 0.32, 0.36], "apt": [0.10, 0.12, 0.14], "aps": [0.28, 0.36, 0.32],
              "aps, explore-conditioned": [0.50, 0.52, 0.54]}
    rows = rows_of({arm: {seed: {task.name: value for task in family} for seed, value in enumerate(values)}
                    for arm, values in spread.items()})
    readings = {row["reading"]: row for row in verdicts.welch_readings(rows, "easy", "easy-tiny")}
    assert set(readings) == {"aps, explore-conditioned against both parents", "H5, aps against visr"}
    verdict = readings["aps, explore-conditioned against both parents"]
    robust = "beats both parents, robust to leaving out any one class"
    assert verdict["registered"] == verdict["welch"] == robust
    assert verdict["marginal"] == "no"
    h5 = readings["H5, aps against visr"]
    assert h5["registered"].startswith("equivalent (90% [") and h5["welch"].startswith("no difference found")
    assert h5["marginal"] == "yes" and h5["part"] == "easy-tiny"


def test_a_win_carried_by_one_class_is_not_robust_and_the_class_is_named():
    family = gridworld.task_family("easy")
    carried = {task.name: 1.0 if task.task_class == "behind A" else 0.2 for task in family}
    flat = {task.name: 0.2 for task in family}
    noise = [-0.01, 0.0, 0.01, 0.02, -0.02]
    def arm(scores: dict, shift: float = 0.0) -> dict:
        return {s: {t: v + shift + n for t, v in scores.items()} for s, n in enumerate(noise)}

    scores = {"aps, explore-conditioned": arm(carried), "visr": arm(flat), "apt": arm(flat, -0.1)}
    rows = rows_of(scores)
    verdict, comparisons = decide(rows, "aps, explore-conditioned")
    assert verdict == "beats both parents"
    # by hand: 4 of 13 tasks at 1.0 instead of 0.2 lift the family mean by 0.8 * 4 / 13 over visr's
    assert comparisons["visr"]["difference"] == pytest.approx(0.8 * 4 / 13)
    dropped = leave_one_class_out(rows, "easy", "aps, explore-conditioned")
    assert set(dropped) == {task.task_class for task in family}
    assert dropped["behind A"] == "beats apt only" and dropped["start room"] == "beats both parents"
    (row,) = [row for row in verdicts.part_verdicts(rows, "easy")
              if row["contender"] == "aps, explore-conditioned"]
    assert (row["robust"], row["overturned_by"]) == ("no", "behind A")


def test_the_class_sizes_count_the_tasks_the_rows_score_in_each_class():
    family = list(gridworld.task_family("easy"))  # 13 tasks: the target, 4 per room or key
    rows = rows_of({"visr": {0: {task.name: 0.5 for task in family}, 1: {family[0].name: 0.5}}})
    rows.append({**rows[0], "phase": "zero_shot", "task": "not scored fine-tuned"})  # another phase: left out
    assert verdicts.class_sizes_text(rows, "easy") == \
        "13 tasks in 4 classes: target 1, start room 4, behind A 4, start room with green 4"
    kept = [row for row in rows if row["task"] != family[-1].name]  # one task fewer: its class shrinks
    assert verdicts.class_sizes_text(kept, "easy").startswith("12 tasks in 4 classes: ")
    assert f"{family[-1].task_class} 3" in verdicts.class_sizes_text(kept, "easy")


def test_a_comparison_and_a_verdict_read_the_same_from_the_library_and_from_a_csv():
    row = {"verdict": "beats both parents", "robust": "no", "overturned_by": "behind A; behind B",
           "visr_difference": "0.0564", "visr_low": "-0.0004", "visr_high": "0.1006"}  # a CSV row: strings
    assert verdicts.interval_text(row, "visr_") == "+0.056 [-0.000, +0.101]"
    assert verdicts.interval_text({"difference": -0.126, "low": -0.2, "high": 0.05}, digits=2) == \
        "-0.13 [-0.20, +0.05]"
    assert verdicts.verdict_text(row) == \
        "beats both parents, not robust (overturned without: behind A; behind B)"
    assert verdicts.verdict_text({**row, "robust": "yes"}) == \
        "beats both parents, robust to leaving out any one class"
    assert verdicts.verdict_text({**row, "verdict": "beats apt only", "robust": ""}) == "beats apt only"


def test_the_registered_metric_reads_each_budget_and_level_of_other_studies_apart(tmp_path):
    noise = [-0.01, 0.0, 0.01, 0.02, -0.02]

    def arm(level: str, value: float, seeds: int = 5) -> dict:
        family = gridworld.task_family(level)
        return {s: {t.name: value + n for t in family} for s, n in enumerate(noise[:seeds])}

    def study(level: str, win: float, seeds: int = 5) -> list[dict]:
        arms = {"visr": 0.3, "apt": 0.1, "aps": 0.3, "aps, explore-conditioned": 0.3 + win}
        return rows_of({name: arm(level, value, seeds) for name, value in arms.items()}, level)

    studies = {64_000: study("easy", 0.2) + study("hard", 0.0), 256_000: study("easy", 0.0, seeds=3)}
    found = {(row["pretrain_steps"], row["level"], row["contender"]): row
             for row in verdicts.seed_metric_verdicts(studies)}
    # the kNN-feature variant has no rows: no verdict; every other contender on every (budget, level)
    assert set(found) == {(steps, level, contender) for steps, level in
                          ((64_000, "easy"), (64_000, "hard"), (256_000, "easy"))
                          for contender in ("aps", "aps, explore-conditioned")}
    won = found[64_000, "easy", "aps, explore-conditioned"]
    # by hand: the same noise on every arm, so each seed's difference is exactly the shift
    assert won["visr_difference"] == pytest.approx(0.2) and won["apt_difference"] == pytest.approx(0.4)
    assert (won["verdict"], won["robust"], won["seeds"]) == ("beats both parents", "yes", 5)
    assert found[64_000, "hard", "aps, explore-conditioned"]["verdict"] == "beats apt only"
    assert found[256_000, "easy", "aps"]["seeds"] == 3
    assert found[64_000, "easy", "aps"]["visr_reading"] == "equivalent"
    parent_alone = {64_000: rows_of({"visr": arm("easy", 0.3)})}
    assert verdicts.write_seed_metric_verdicts(tmp_path / "v.csv", parent_alone) is None
    assert not (tmp_path / "v.csv").exists()
    assert verdicts.write_seed_metric_verdicts(tmp_path / "v.csv", studies) == tmp_path / "v.csv"
    assert len(read_rows(tmp_path / "v.csv")) == 6


def test_the_tables_hold_floats_to_four_decimals_and_an_empty_table_is_not_written(tmp_path):
    rows = [{"arm": "visr", "mean": 0.123456, "seeds": 3, "reading": "above"}]
    assert verdicts.rounded(rows) == [{"arm": "visr", "mean": 0.1235, "seeds": 3, "reading": "above"}]
    assert verdicts.write_table(tmp_path / "t.csv", rows) == tmp_path / "t.csv"
    assert read_rows(tmp_path / "t.csv") == [{"arm": "visr", "mean": "0.1235", "seeds": "3",
                                              "reading": "above"}]
    assert verdicts.write_table(tmp_path / "empty.csv", []) is None and not (tmp_path / "empty.csv").exists()


def test_the_contenders_of_the_tables_and_the_variants_of_the_hypotheses_are_named_apart():
    """The task-family tables judge the paper's APS and both variants against the parents; the primary
    hypotheses are about the two variants, in the pre-registration's order (H1: the explore-conditioned)."""
    assert verdicts.PARENTS == ("visr", "apt")
    assert verdicts.CONTENDERS == ("aps", "aps, kNN feature", "aps, explore-conditioned")
    assert verdicts.PRIMARY_VARIANTS == ("aps, explore-conditioned", "aps, kNN feature")
    assert set(verdicts.CONTENDERS + verdicts.PARENTS) <= set(FAMILY_ARMS)
