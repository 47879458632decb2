"""The capstone judge's calibration (`course.judge_calibration`): its rates against rows worked by hand, its
writer resuming without measuring a row twice, one real measurement at a tiny budget, and the committed rows
giving the rates that capstone's docstring and notebook 04d state."""

import itertools
import re

import pytest

from aps_teach.course import REPOSITORY_ROOT, capstone, committed_result
from aps_teach.course import judge_calibration as calibration
from aps_teach.grid.experiments import DEFAULT_PRETRAIN_STEPS
from aps_teach.grid.train import TrainConfig


def _row(reward, seed, gain, gap, level="deep", steps=DEFAULT_PRETRAIN_STEPS):
    return {"reward": reward, "seed": seed, "level": level, "steps": steps, "entropy": 0.7 + gain,
            "control_entropy": 0.7, "own_skill": gap, "other_skill": 0.0, "gain": gain, "gap": gap,
            "seconds": 1.0}


HAND = {  # reward -> per seed 0-3 (gain, gap), with the passes worked by hand below
    "eq6": [(0.02, 0.15), (0.005, 0.15), (0.03, 0.15), (-0.001, 0.15)],
    "crowding": [(-0.1, 0.2), (-0.1, 0.2), (0.02, 0.2), (0.005, 0.2)],
    "reversed vMF loss": [(0.05, -0.02), (0.05, 0.12), (0.05, 0.12), (0.05, 0.12)],
}
ROWS = [_row(reward, seed, *numbers) for reward, values in HAND.items()
        for seed, numbers in enumerate(values)]


def test_the_rates_are_the_judges_verdicts_counted_by_hand():
    """eq6: alone, seeds 0 and 2 pass (gain >= 0.01); of the four triples only {0, 1, 2} has every gain
    above 0, with mean 0.0183 >= 0.01: 1 pass, 3 false fails. crowding: alone, seed 2 passes; no triple
    avoids seeds 0 and 1 but {1, 2, 3}, and seed 1 loses: 0 passes. reversed vMF loss: alone, seeds 1-3
    pass; the triple without seed 0, {1, 2, 3}, passes: 1 false pass."""
    found = calibration.rates(ROWS)
    assert list(found) == ["eq6", "crowding", "reversed vMF loss"]
    assert {name: (rate.seed_passes, rate.subset_passes, rate.subsets) for name, rate in found.items()} == {
        "eq6": (2, 1, 4), "crowding": (1, 0, 4), "reversed vMF loss": (3, 1, 4)}
    assert found["eq6"].errors == 3 and found["eq6"].seed_errors == 2
    assert found["reversed vMF loss"].errors == 1 and found["reversed vMF loss"].seed_errors == 3
    assert calibration.pooled(found, "correct") == (3, 4) and calibration.pooled(found, "wrong") == (1, 8)
    assert found["eq6"].seeds == (0, 1, 2, 3)
    low, high = found["eq6"].seed_interval  # 2 of 4, exact binomial interval
    assert low == pytest.approx(0.0676, abs=1e-4) and high == pytest.approx(0.9324, abs=1e-4)


def test_the_rates_match_a_brute_force_count_of_every_triple():
    """The judge's rule written out again: every gain above 0, their mean at least EXPLORE_GAIN, every gap
    at least RECOGNISABLE."""
    for name, values in HAND.items():
        def judged(seeds, values=values):
            gains, gaps = [values[s][0] for s in seeds], [values[s][1] for s in seeds]
            return (min(gains) > 0 and sum(gains) / len(gains) >= capstone.EXPLORE_GAIN
                    and min(gaps) >= capstone.RECOGNISABLE)

        rate = calibration.rates(ROWS)[name]
        assert rate.subset_passes == sum(judged(t) for t in itertools.combinations(range(4), 3))
        assert rate.seed_passes == sum(judged((s,)) for s in range(4))


def test_rates_use_only_seeds_every_reward_has():
    found = calibration.rates(ROWS + [_row("eq6", 9, 0.05, 0.2)])
    assert found["eq6"].seeds == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="3 or more seeds measured for every reward, got \\[0, 1\\]"):
        calibration.rates([row for row in ROWS if row["seed"] < 2])


def test_the_writer_resumes_without_measuring_a_row_twice(tmp_path, monkeypatch):
    """A row already in rows.csv is kept as it is and not measured again; a run that stops keeps every row
    it finished; rows of another budget are refused before anything is measured."""
    calls = []

    def fake(name, seed, level, steps, config):
        calls.append((name, seed))
        if len(calls) == 3 and fake.crash:
            raise KeyboardInterrupt
        return capstone.SeedMeasures(0.7 + seed / 100, 0.7, 0.2, 0.01)

    fake.crash = True
    monkeypatch.setattr(calibration, "measure_one", fake)
    kept = _row("eq6", 5, 0.123, 0.456)
    calibration.write_csv_atomic(tmp_path / "rows.csv", [kept], calibration.COLUMNS)
    names = ("eq6", "apt")
    with pytest.raises(KeyboardInterrupt):
        calibration.measure(tmp_path, [5, 6], names)
    assert calls == [("apt", 5), ("eq6", 6), ("apt", 6)]
    assert [(row["reward"], row["seed"]) for row in calibration.read_rows(tmp_path / "rows.csv")] == [
        ("eq6", 5), ("apt", 5), ("eq6", 6)]
    fake.crash = False
    rows = calibration.measure(tmp_path, [5, 6], names)
    assert calls[3:] == [("apt", 6)]
    assert rows[0] == kept and calibration.read_rows(tmp_path / "rows.csv") == rows
    assert rows[3]["gain"] == pytest.approx(0.06) and rows[3]["gap"] == pytest.approx(0.19)
    calibration.measure(tmp_path, [5, 6], names)
    assert len(calls) == 4
    with pytest.raises(ValueError, match=r"measured on \(level, steps\) \[\('deep', 64000\)\], not \('deep', "
                                         r"800\): give another --out"):
        calibration.measure(tmp_path, [7], names, steps=800)
    assert len(calls) == 4


def test_a_real_measurement_is_the_judges():
    """Tiny budget, on easy: VISR's reward is its own control (gain exactly 0), and every reward with the
    library's vMF loss shares that control."""
    config = TrainConfig(progress=False, learning_starts=400)
    measured = {name: calibration.measure_one(name, 0, "easy", 1_200, config) for name in ("eq6", "visr")}
    assert measured["visr"].gain == 0.0
    assert measured["eq6"].control_entropy == measured["visr"].entropy


def test_seed_ranges_parse():
    assert calibration.parse_seeds("6-9") == [6, 7, 8, 9]
    assert calibration.parse_seeds("3,5-6,10") == [3, 5, 6, 10]


def _words(text: str) -> str:
    """Text with its line breaks, comment marks and runs of spaces each made one space."""
    return " ".join(" ".join(re.sub(r"^\s*# ?", "", line) for line in text.splitlines()).split())


def test_the_committed_rows_give_the_stated_rates():
    """results/capstone_judge/rows.csv holds every reward on each calibration seed 6-17, at the judge's level
    and budget, none of them a judged or tuning seed; the rates they give are the ones capstone's docstring
    and notebook 04d state, word for word."""
    rows = calibration.read_rows(committed_result("capstone_judge/rows.csv"))
    assert {(row["level"], row["steps"]) for row in rows} == {(capstone.LEVEL, DEFAULT_PRETRAIN_STEPS)}
    seeds = calibration.complete_seeds(rows, list(calibration.REWARDS))
    assert seeds == tuple(range(6, 18)) and len(rows) == len(seeds) * len(calibration.REWARDS)
    assert not set(seeds) & (set(capstone.JUDGED_SEEDS) | {0, 1, 2})
    for row in rows:  # the written gain and gap are the measures' own
        measures = calibration.seed_measures(row)
        assert (row["gain"], row["gap"]) == pytest.approx((measures.gain, measures.gap), abs=1e-12)
    assert all(row["gain"] == 0.0 for row in rows if row["reward"] == "visr")
    sentence = calibration.stated(calibration.rates(rows))
    assert sentence in _words(capstone.__doc__)
    assert sentence in _words((REPOSITORY_ROOT / "notebooks" / "04d_capstone.py").read_text())
