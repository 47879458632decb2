"""The task-family study's budget axis (`aps_teach.studies.families_budget`): hand-worked IQMs per budget on
the seeds every budget has, the studies it finds, and the committed axis against the studies page (its
command, end to end: `tests/studies/test_task_families.py` and `tests/cli/test_documented_commands.py`)."""

import csv
import json
from pathlib import Path

import pytest

from aps_teach.studies.families_budget import budget_axis, budget_studies
from aps_teach.studies.task_families import RESULTS, study_pretrain_steps


def test_the_budget_axis_pools_the_family_and_the_target_alone_per_budget_arm_and_phase():
    """Hand-worked IQMs: the family pools 8 scores [0, 0, 1, 1, 1, 1, 1, 1] (IQM of the middle four: 1.0);
    the target alone [0, 0, 1, 1] (IQM of the middle two: 0.5); each budget keeps its own rows."""
    def rows(target: list[float], box: list[float]) -> list[dict]:
        return [{"method": "aps", "overrides": "", "level": "deep", "phase": "finetuned", "task": task,
                 "seed": seed, "normalised_score": score}
                for task, scores in (("target", target), ("box", box)) for seed, score in enumerate(scores)]

    points = budget_axis({64_000: rows([0, 0, 1, 1], [1, 1, 1, 1]), 1_000: rows([0, 0, 0, 0], [0, 0, 0, 1])})
    got = {(p["pretrain_steps"], p["tasks"]): p["iqm"] for p in points}
    assert got == pytest.approx({(64_000, "family"): 1.0, (64_000, "target"): 0.5, (1_000, "family"): 0.0,
                                 (1_000, "target"): 0.0})
    assert [p["pretrain_steps"] for p in points][0] == 1_000  # budgets in order
    assert {(p["arm"], p["phase"], p["seeds"]) for p in points} == {("aps", "finetuned", 4)}


def test_the_budget_axis_pools_only_the_seeds_every_budget_has():
    """A 64k study of seeds 0-5 beside a 1M study of seeds 0-3: the 64k point pools seeds 0-3 alone (target
    scores [0, 0, 1, 1]: IQM 0.5; with seeds 4-5 at 1, [0, 0, 1, 1, 1, 1], it would be 0.75)."""
    def rows(scores: list[float]) -> list[dict]:
        return [{"method": "visr", "overrides": "", "level": "deep", "phase": "finetuned", "task": "target",
                 "seed": seed, "normalised_score": score} for seed, score in enumerate(scores)]

    points = budget_axis({64_000: rows([0, 0, 1, 1, 1, 1]), 1_000_000: rows([1, 1, 1, 1])})
    got = {(p["pretrain_steps"], p["tasks"]): (p["iqm"], p["seeds"]) for p in points}
    assert got[(64_000, "target")] == (pytest.approx(0.5), 4)
    assert got[(1_000_000, "target")] == (pytest.approx(1.0), 4)


def test_the_budget_axis_finds_every_budget_earlier_commands_ran(tmp_path):
    """Two families-budget commands, one budget each, into one OUT: the axis reads both, in budget order,
    and nothing else in OUT (a directory without a study, a name that is not pretrain_<N>)."""
    for name, steps in (("pretrain_1000000", 1_000_000), ("pretrain_256000", 256_000), ("pretrain_x", 5)):
        (tmp_path / name).mkdir()
        (tmp_path / name / RESULTS.replace(".csv", ".sweep.json")).write_text(
            json.dumps({"budget": {"pretrain_steps": steps}}))
    (tmp_path / "pretrain_64000").mkdir()  # no study in it
    found = budget_studies(tmp_path)
    assert [path.name for path in found] == ["pretrain_256000", "pretrain_1000000"]
    assert [study_pretrain_steps(path) for path in found] == [256_000, 1_000_000]


def test_the_committed_budget_axis_is_what_the_studies_page_shows():
    root = Path(__file__).resolve().parents[2]
    page = " ".join((root / "docs" / "studies.md").read_text().split())
    rows = [r for r in csv.DictReader((root / "results" / "task_families_budget" / "budget_axis.csv").open())
            if (r["phase"], r["tasks"]) == ("finetuned", "family")]
    assert {int(r["pretrain_steps"]) for r in rows} == {64_000, 256_000, 1_000_000}
    for r in rows:
        assert f"{float(r['iqm']):.2f} [{float(r['low']):.2f}, {float(r['high']):.2f}]" in page, r


def test_the_committed_axis_tables_are_rewritten_byte_for_byte(tmp_path):
    """The committed axis (results/task_families_budget, the 64k point from results/task_families): its
    coverage, seed verdicts and IQM tables, written again from its studies, are the committed files."""
    from aps_teach.studies.families_budget import axis_studies, write_axis_tables

    results = Path(__file__).resolve().parents[2] / "results"
    studies = axis_studies(results / "task_families_budget", [results / "task_families"])
    assert sorted(studies) == [64_000, 256_000, 1_000_000]
    tables = write_axis_tables(tmp_path, "deep", studies)
    assert [path.name for path in tables.values()] == ["coverage.csv", "seed_verdicts.csv", "budget_axis.csv"]
    for path in tables.values():
        assert path.read_bytes() == (results / "task_families_budget" / path.name).read_bytes(), path.name
