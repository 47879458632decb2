"""The budget study: its grid, its rows (the pipeline's numbers), its summary and figures."""

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from aps_teach.grid.experiments import (
    Budget,  # noqa: E402
    run_gridworld,  # noqa: E402
)
from aps_teach.grid.train import TrainConfig  # noqa: E402
from aps_teach.infra.sweeps import RunSpec, read_rows  # noqa: E402
from aps_teach.learner.config import AgentConfig  # noqa: E402
from aps_teach.studies import plots as study_plots  # noqa: E402
from aps_teach.studies.budget import StudyGrid, is_main_grid, level_rows, run_study, summary_table  # noqa: E402

TRAIN = TrainConfig(agent=AgentConfig(hidden=16, batch_size=8, feature_dim=4), num_envs=2,
                    learning_starts=100, progress=False)
GRID = StudyGrid(methods=("visr", "dqn"), levels=("easy",), mazes=("open10",), pretrain_steps=(200,),
                 feature_dims=(4,), identify_steps=(200, 400), gammas=(), finetune_epsilons=(0.3,), seeds=1,
                 finetune_steps=400, eval_episodes=4, transfer_tasks=2, transfer_episodes=2,
                 arm_pretrain_steps=200, arm_feature_dim=4, train=TRAIN)


def test_the_grid_has_every_method_level_budget_d_and_seed_once_and_dqn_no_budget():
    grid = StudyGrid()
    specs = grid.level_specs()
    assert len({spec.key for spec in specs}) == len(specs)
    budgets = {dict(spec.overrides)["pretrain_steps"] for spec in specs if spec.method == "dqn"}
    assert budgets == {0}
    main = [spec for spec in specs if dict(spec.overrides).get("agent.gamma") == 0.99
            and "finetune_epsilon_start" not in dict(spec.overrides)]
    # (3 pretrained methods x 3 budgets + dqn) x levels x d x seeds
    assert len(main) == (3 * 3 + 1) * 2 * 2 * 3
    assert {spec.method for spec in grid.transfer_specs()} == {"visr", "aps"}


def test_a_study_row_is_the_pipelines_numbers():
    overrides = (("pretrain_steps", 200), ("agent.feature_dim", 4), ("agent.gamma", 0.99))
    spec = RunSpec("visr", "easy", 2, overrides)
    rows = level_rows(spec, GRID)
    result = run_gridworld("visr", "easy", seed=2, budget=Budget(pretrain_steps=200, finetune_steps=400,
                                                                 identify_steps=400, eval_episodes=4),
                           config=TRAIN)
    phases = [(row["phase"], row["identify_steps"], row["finetune_steps"]) for row in rows]
    assert phases == [("zero_shot", 200, 0), ("zero_shot", 400, 0), ("adapting", 400, 200),
                      ("finetuned", 400, 400)]
    assert [row["success_rate"] for row in rows[1:]] == [p["success_rate"] for p in result.adaptation]
    assert all(row["state_coverage"] == result.state_coverage and row["dead_units"] >= 0 for row in rows)


def test_the_summary_is_the_mean_over_seeds_of_the_right_rows():
    run = {"method": "visr", "level": "easy", "feature_dim": "16", "pretrain_steps": "64000", "gamma": "0.99",
           "finetune_epsilon_start": ""}
    rows = [{**run, "phase": phase, "identify_steps": ident, "success_rate": str(value)}
            for phase, ident, value in (("zero_shot", "1600", 0.0), ("zero_shot", "160000", 1.0),
                                        ("zero_shot", "160000", 0.5), ("finetuned", "160000", 0.25))]
    table = {row["measure"]: row for row in summary_table(rows, [])}
    assert table["zero-shot success"]["mean"] == 0.75 and table["zero-shot success"]["n"] == 2
    assert table["fine-tuned success"]["mean"] == 0.25
    train = {"agent": {"gamma": 0.99}, "finetune_epsilon_start": 0.05}
    assert is_main_grid(rows[0], train)
    assert not is_main_grid({**rows[0], "gamma": "0.95"}, train)
    assert not is_main_grid({**rows[0], "finetune_epsilon_start": "0.3"}, train)


def test_a_tiny_study_writes_its_rows_and_figures_and_resumes(tmp_path):
    report = run_study(GRID, tmp_path, workers=1, progress=False)
    assert not report.levels.failures and not report.transfer.failures
    levels, transfer = read_rows(tmp_path / "study_levels.csv"), read_rows(tmp_path / "study_transfer.csv")
    assert {row["method"] for row in levels} == {"visr", "dqn"}
    assert len(transfer) == GRID.transfer_tasks and {row["maze"] for row in transfer} == {"open10"}
    assert [path.name for path in report.outputs] == ["summary.csv"]  # the pipeline draws nothing
    assert not list(tmp_path.glob("*.png"))
    figures = study_plots.write_study_figures(tmp_path)
    names = ["study_budget.png", "study_identify.png", "study_adaptation.png"]
    assert [path.name for path in figures] == names
    assert all(path.read_bytes()[:4] == b"\x89PNG" for path in figures)
    assert {row["measure"] for row in read_rows(tmp_path / "summary.csv")} == {
        "zero-shot success", "fine-tuned success", "transfer score"}
    assert json.loads((tmp_path / "study_grid.json").read_text())["seeds"] == 1
    again = run_study(GRID, tmp_path, workers=1, progress=False)
    assert not again.levels.completed and not again.transfer.completed


def test_the_budget_figure_draws_the_summary():
    run = {"method": "aps", "level": "easy", "feature_dim": "16", "gamma": "0.99", "phase": "finetuned",
           "identify_steps": "160000", "finetune_steps": "32000"}
    levels = [{**run, "pretrain_steps": str(b), "success_rate": str(v), "seed": str(s)}
              for b, v, s in ((16000, 0.0, 0), (16000, 1.0, 1), (64000, 1.0, 0), (64000, 1.0, 1))]
    fig = study_plots.plot_study_budget(levels, [])
    line = next(line for line in fig.axes[0].get_lines() if line.get_label().startswith("aps"))
    np.testing.assert_allclose(line.get_ydata(), [0.5, 1.0])
    with pytest.raises(StopIteration):
        next(line for line in fig.axes[0].get_lines() if line.get_label().startswith("visr"))


def _two_seeds(**run):
    """Transfer rows of two seeds: seed 0's two tasks score 0, seed 1's four score 1. Resampling whole seeds
    gives 0 (1/4), 4/6 (1/2) or 1 (1/4): mean 4/6, interval [0, 1]."""
    return [{**run, "seed": str(seed), "task": str(task), "normalised_score": str(float(seed))}
            for seed, tasks in ((0, 2), (1, 4)) for task in range(tasks)]


def test_transfer_intervals_resample_whole_seeds():
    run = {"method": "visr", "maze": "open10", "feature_dim": "16", "gamma": "0.99", "identified": "1"}
    (row,) = summary_table([], _two_seeds(**run, pretrain_steps="16000"))
    assert (row["measure"], row["mean"], row["low"], row["high"], row["n"]) == \
        ("transfer score", 4 / 6, 0, 1, 6)
    transfer = [*_two_seeds(**run, pretrain_steps="16000"),
                *[{**r, "pretrain_steps": "64000", "normalised_score": "0.5"} for r in _two_seeds(**run)]]
    ax = study_plots.plot_study_budget([], transfer).axes[0]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [4 / 6, 0.5])
    band = ax.collections[0].get_paths()[0].vertices
    for budget, (low, high) in ((16000, (0, 1)), (64000, (0.5, 0.5))):
        ys = band[band[:, 0] == budget, 1]
        assert (ys.min(), ys.max()) == pytest.approx((low, high))
    ablation = study_plots.plot_ablation([{**r, "variant": "a"} for r in _two_seeds(**run)], "variant",
                                         {"normalised_score": "score"}, cluster="seed")
    (segment,) = ablation.axes[0].containers[0].lines[2][0].get_segments()
    np.testing.assert_allclose(segment[:, 1], [0, 1])
