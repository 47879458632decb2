"""Ablation helpers of notebooks 05, 05b and 05c: overrides only where they differ from the default, the
verdict rule against intervals computed by hand, what `show` prints and returns, the tally, and variants
run, labelled and resumed through a real sweep."""

import re

import numpy as np
import pytest

from aps_teach.infra.sweeps import RunSpec
from aps_teach.studies import ablations
from aps_teach.studies.ablations import agent_overrides, by_seed, run_variants, show, tally, verdict


def test_agent_overrides_name_only_the_fields_that_differ_from_the_default():
    assert agent_overrides(k=10, feature_dim=16) == ()  # both are AgentConfig's defaults
    assert agent_overrides(k=3, feature_dim=16, gpi=False) == (("agent.k", 3), ("agent.gpi", False))
    with pytest.raises(ValueError, match="no field 'kk'"):
        agent_overrides(kk=3)


@pytest.mark.parametrize("variant, expected", [((0.5, 0.4, 0.6, 3), "identical to"),
                                               ((0.8, 0.7, 0.9, 3), "separate from"),
                                               ((0.2, 0.1, 0.39, 3), "separate from"),
                                               ((0.55, 0.6, 0.7, 3), "overlaps"),  # touching ends overlap
                                               ((0.5, 0.45, 0.55, 3), "overlaps")])
def test_verdict_compares_the_intervals(variant, expected):
    assert verdict(variant, (0.5, 0.4, 0.6, 3)) == expected


def rows_of(values: dict[str, list[float]]) -> list[dict]:
    return [{"variant": label, "seed": str(seed), "x": str(value)} for label, numbers in values.items()
            for seed, value in enumerate(numbers)]


def test_show_prints_each_variants_mean_and_interval_and_returns_its_verdicts(capsys):
    values = {"base": [0.10, 0.12, 0.11, 0.13], "far": [0.90, 0.91, 0.93, 0.92],
              "same": [0.10, 0.12, 0.11, 0.13], "near": [0.09, 0.14, 0.12, 0.10], "one": [0.5],
              "none": [float("nan")]}
    found = show(rows_of(values), ["x"], list(values))
    assert found == [("x", "far", "base", "separate from"), ("x", "same", "base", "identical to"),
                     ("x", "near", "base", "overlaps")]  # "one" has no interval, "none" no finite value
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "x"
    for label in ("base", "far"):
        mean = np.mean(values[label])
        line = next(line for line in printed if line.strip().startswith(f"{label}:"))
        assert float(re.search(r": +(\S+) \[", line)[1]) == pytest.approx(mean, abs=5e-4)
        assert "(n=4)" in line
    gap = np.mean(values["far"]) - np.mean(values["base"])
    assert printed[2].endswith(f"separate from base ({gap:+.3f})")
    assert "(one run: no interval to compare)" in printed[5] and printed[6].endswith("no finite value")


def test_show_resamples_whole_clusters_when_rows_are_not_independent(capsys):
    # two seeds of 20 tasks each, the tasks of a seed alike: taken as 40 independent rows the intervals are
    # narrow and separate; resampling the 2 seeds, a's interval is the range of its seed means, [0, 1]
    rows = [{"variant": v, "seed": s, "x": x} for v, per_seed in (("a", {"0": 0.0, "1": 1.0}),
                                                                   ("b", {"0": 0.7, "1": 1.7}))
            for s, x in per_seed.items() for _ in range(20)]
    assert show(rows, ["x"], ["a", "b"]) == [("x", "b", "a", "separate from")]
    capsys.readouterr()
    assert show(rows, ["x"], ["a", "b"], cluster="seed") == [("x", "b", "a", "overlaps")]
    printed = capsys.readouterr().out.splitlines()
    # the count says what the interval resamples: 2 seeds, not 40 independent rows
    assert printed[1].endswith("a:   0.500 [  0.000,   1.000] (2 seeds, 40 rows)")
    assert "(2 seeds, 40 rows)   overlaps a" in printed[2]


def test_show_compares_no_intervals_over_one_cluster(capsys):
    # 20 tasks of one seed: the cluster interval collapses to the mean, so no verdict, however many rows
    rows = [{"variant": v, "seed": "0", "x": x + 0.01 * task} for v, x in (("a", 0.0), ("b", 0.5))
            for task in range(20)]
    assert show(rows, ["x"], ["a", "b"], cluster="seed") == []
    printed = capsys.readouterr().out.splitlines()
    assert printed[2].endswith("(1 seed, 20 rows)   (one seed: no interval to compare)")


def test_tally_counts_every_verdict_and_names_what_separates():
    verdicts = {"1 a": [("x", "v", "base", "separate from"), ("y", "v", "base", "overlaps")],
                "2 b": [("x", "w", "base", "identical to")]}
    assert tally(verdicts, "Exercises 1-2") == [
        "3 comparisons in Exercises 1-2: 1 separate, 1 overlap, 1 identical to the last digit",
        "  Exercise 1 a: 1 separate: v vs base on x", "  Exercise 2 b: 0 separate: -"]
    assert set(ablations.VERDICTS) == {"separate from", "overlaps", "identical to"}


def fake_run(spec: RunSpec, budget: int) -> list[dict]:
    """A run whose one row is a function of its spec and budget (module level: sweeps pickle it)."""
    return [{"method": spec.method, "level": spec.env, "seed": spec.seed,
             "x": budget * (spec.seed + 1) + dict(spec.overrides).get("agent.k", 10)}]


def test_run_variants_labels_its_rows_and_resumes(tmp_path, capsys, threads):
    variants = {"k=3": ("aps", agent_overrides(k=3)), "default": ("aps", ()), "visr": ("visr", ())}
    rows = run_variants(fake_run, 100, tmp_path / "r.csv", variants, ["easy"], [0, 1], threads)
    assert "6 runs done now, 0 reused" in capsys.readouterr().out
    assert sorted((r["variant"], r["seed"], r["x"]) for r in rows) == sorted(
        (label, str(seed), str(100 * (seed + 1) + (3 if label == "k=3" else 10)))
        for label in variants for seed in (0, 1))
    # the default APS variant under another label is the same run: reused, not run again
    again = run_variants(fake_run, 100, tmp_path / "r.csv", {"k=10": ("aps", agent_overrides(k=10))},
                         ["easy"], [0, 1], threads)
    assert "0 runs done now, 2 reused" in capsys.readouterr().out
    assert {r["variant"] for r in again} == {"k=10"} and len(again) == 2
    assert by_seed(again, "k=10")["1"]["x"] == "210"


def failing_run(spec: RunSpec, budget: int) -> list[dict]:
    raise ValueError(f"no run for seed {spec.seed}")


def test_run_variants_raises_what_a_failed_run_raised(tmp_path, threads):
    with pytest.raises(RuntimeError, match="no run for seed 0"):
        run_variants(failing_run, 1, tmp_path / "r.csv", {"a": ("aps", ())}, ["easy"], [0], threads)
