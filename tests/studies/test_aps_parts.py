"""The APS-parts study: its arms, a run of each kind, its figure (naming an arm back from its row:
`tests/studies/test_arms.py`)."""


import matplotlib
import pytest

from aps_teach.grid.experiments import Budget
from aps_teach.grid.train import random_walk
from aps_teach.infra.sweeps import RunSpec
from aps_teach.studies.aps_parts import (
    ARMS,
    parts_specs,
    parts_table,
    run_part_rows,
    w_dependence_table,
)
from aps_teach.studies.arms import arm_name
from aps_teach.studies.plots import plot_parts

matplotlib.use("Agg")
BUDGET = Budget(pretrain_steps=3200, finetune_steps=3200, identify_steps=3200, eval_episodes=4)


def test_every_arm_is_one_run_per_level_and_seed():
    specs = parts_specs(["deep", "easy"], 2)
    assert len(specs) == len(ARMS) * 2 * 2 and len({spec.key for spec in specs}) == len(specs)


def test_the_random_walk_row_is_its_coverage_at_the_pretraining_budget():
    (row,) = run_part_rows(RunSpec("random", "deep", 1), BUDGET)
    coverage = random_walk("deep", 3200, 1)
    assert row["phase"] == "random_walk" and row["state_coverage"] == coverage["state_coverage"]
    assert row["visitation_entropy"] == coverage["visitation_entropy"]


def test_an_arm_runs_the_whole_pipeline_with_its_override():
    rows = run_part_rows(RunSpec("aps", "easy", 0, ARMS["aps, kNN on g"][1]), BUDGET)
    assert [row["phase"] for row in rows][0] == "zero_shot" and rows[-1]["phase"] == "finetuned"
    assert all(arm_name(row["method"], row["overrides"], ARMS) == "aps, kNN on g" for row in rows)
    assert all(0 <= row["visitation_entropy"] <= 1 and row["blame"] for row in rows)


def test_the_figure_reports_k_of_n_and_the_random_walk():
    rows = []
    for seed, (coverage, zero, tuned) in enumerate([(0.5, 0.0, 1.0), (0.6, 0.7, 0.2), (0.7, 0.0, 0.9)]):
        shared = {"method": "aps", "level": "deep", "seed": seed, "overrides": "", "state_coverage": coverage,
                  "visitation_entropy": coverage}
        rows += [{**shared, "phase": "zero_shot", "success_rate": zero},
                 {**shared, "phase": "finetuned", "success_rate": tuned}]
        rows.append({"method": "random", "level": "deep", "seed": seed, "overrides": "",
                     "phase": "random_walk", "state_coverage": 0.4, "visitation_entropy": 0.3})
    fig = plot_parts(rows)
    texts = [text.get_text() for ax in fig.axes for text in ax.texts]
    assert texts == ["1/3", "2/3"]  # zero-shot: 0.7 solves; fine-tuned: 1.0 and 0.9 do
    dashed = [line.get_ydata()[0] for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert dashed == pytest.approx([0.4])


def test_the_tables_report_means_k_of_n_and_blame():
    shared = {"method": "aps", "level": "easy", "overrides": "", "state_coverage": 1.0,
              "visitation_entropy": 0.9}
    rows = [{**shared, "seed": seed, "phase": phase, "success_rate": rate, "blame": blame}
            for seed, (zero, tuned, blame) in enumerate([(1.0, 1.0, "none"), (0.0, 1.0, "psi")])
            for phase, rate in (("zero_shot", zero), ("finetuned", tuned))]
    table = parts_table(rows, "easy").splitlines()
    assert table[2] == ("| aps | 1.00 | 0.900 | 0.50 [0.00, 1.00], 1/2 | 1.00 [1.00, 1.00], 2/2 "
                        "| none 1, psi 1 |")
    probe = {"method": "apt", "overrides": "", "state_coverage": 0.5, "visitation_entropy": 0.8,
             "w_consistency": float("nan"), "q_std_over_w": float("nan"), "action_gap": float("nan")}
    rows = [{**probe, "target_reached": "True"}, {**probe, "target_reached": "False"}]
    assert w_dependence_table(rows).splitlines()[2] == "| apt | 0.50 | 0.800 | — | — | — | 1/2 |"
