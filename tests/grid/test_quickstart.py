"""`aps-teach` with no arguments: the whole APS run and its figure (tiny budget here)."""

import dataclasses
import json
from pathlib import Path

import numpy as np

from aps_teach.cli.main import main
from aps_teach.grid.experiments import Budget, read_summary, run_gridworld
from aps_teach.grid.train import TrainConfig
from aps_teach.learner.config import AgentConfig

TINY = ["--pretrain-steps", "400", "--finetune-steps", "400", "--identify-steps", "200",
        "--eval-episodes", "4", "--train.num-envs", "2", "--train.learning-starts", "100",
        "--train.no-progress",
        "--train.agent.hidden", "16", "--train.agent.batch-size", "8", "--train.agent.k", "3"]
BUDGET = Budget(pretrain_steps=400, finetune_steps=400, identify_steps=200, eval_episodes=4)
"""TINY's budget."""


def test_the_main_job_is_the_run_of_the_library_and_draws_it(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--seed", "3", *TINY]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    config = TrainConfig(agent=AgentConfig(method="aps", hidden=16, batch_size=8, k=3), num_envs=2,
                         learning_starts=100, progress=False)
    result = run_gridworld("aps", "easy", seed=3, budget=BUDGET, config=config)
    for key in ("zero_shot_success", "finetuned_return", "states_visited", "task_w", "adaptation"):
        assert summary[key] == getattr(result, key)
    assert (tmp_path / "overview.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for phase in ("pretrain", "finetune"):
        assert (tmp_path / phase / "checkpoint.pt").exists()
    printed = capsys.readouterr().out
    assert f"zero-shot success {result.zero_shot_success:.2f}" in printed and "overview.png" in printed
    blame = result.blame
    verdict = blame.blame if blame.blame != "identification" or blame.ceiling == "none" else \
        f"identification; with the best-case w: {blame.ceiling}"
    assert f"zero-shot blame: {verdict} (identification data: {blame.target_rewards} target" in printed


def test_the_overview_draws_the_reward_terms_of_the_pretrained_learner(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from aps_teach.grid import cell_maps, plots
    from aps_teach.grid.quickstart import QuickstartConfig, run_quickstart

    train = TrainConfig(agent=AgentConfig(hidden=16, batch_size=8, k=3), num_envs=2, learning_starts=100,
                        progress=False)
    config = QuickstartConfig(out=tmp_path, budget=BUDGET, train=train)
    run = run_quickstart(config)
    layout = plots.gridworld.resolve_level("easy")
    w = np.array(run.result.task_w, dtype=np.float32)
    maps = cell_maps.overview_maps(run.snapshot.learner, layout, run.snapshot.particles, w)
    fig = plots.plot_run_overview(layout, maps, "aps", None, None, run.result.adaptation)
    cells = cell_maps.cell_states(layout, ())
    expected = cell_maps.reward_maps(run.snapshot.learner, cells, run.snapshot.particles, w)
    drawn = [image.get_array() for ax in fig.axes for image in ax.get_images() if image.get_array().ndim == 2]
    for term in ("explore", "exploit"):
        assert any(np.allclose(np.ma.filled(a, np.nan), expected[term], equal_nan=True) for a in drawn), term


def test_the_main_job_refuses_bad_input_before_writing(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "run"), "--pretrain-steps", "0"]) == 2
    assert "pretrain_steps must be an integer >= 1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    assert main(["--method", "dqn"]) == 2  # the argument parser's error: one line too
    assert capsys.readouterr().err == "aps-teach: error: --method 'dqn' is not valid; valid: aps, visr\n"


def test_the_quickstart_run_gridworld_and_the_run_command_write_one_summary(tmp_path):
    """The three entry points write summary.json the same way (`experiments.write_summary`): the fields of
    `run_gridworld`'s result but its metrics, in order, as JSON with indent 2; the same values but the
    wall-clock times."""
    from aps_teach.grid.quickstart import QuickstartConfig, run_quickstart

    train = TrainConfig(agent=AgentConfig(hidden=16, batch_size=8, k=3), num_envs=2, learning_starts=100,
                        progress=False)
    run_quickstart(QuickstartConfig(out=tmp_path / "quickstart", seed=3, budget=BUDGET, train=train))
    result = run_gridworld("aps", "easy", seed=3, budget=BUDGET, config=train, run_dir=tmp_path / "library")
    assert main(["gridworld", "run", "--out", str(tmp_path / "command"), "--seed", "3", *TINY]) == 0
    fields = [field.name for field in dataclasses.fields(result) if field.name != "metrics"]
    timings = {"pretrain_seconds", "finetune_seconds", "wall_seconds"}
    expected = {name: value for name, value in json.loads(json.dumps(dataclasses.asdict(result))).items()
                if name in fields and name not in timings}
    for name in ("quickstart", "library", "command"):
        text = (tmp_path / name / "summary.json").read_text()
        summary = read_summary(tmp_path / name)
        assert text == json.dumps(summary, indent=2) and list(summary) == fields, name
        assert {key: value for key, value in summary.items() if key not in timings} == expected, name


def test_the_pages_print_the_committed_main_jobs_times():
    """The README quoted 11 s and 15 s while the committed summary.json recorded 48 s and 67 s: the printed
    run is the committed one."""
    root = Path(__file__).resolve().parents[2]
    summary = json.loads((root / "results" / "quickstart" / "summary.json").read_text())
    printed = (f"aps on easy, seed 0: pretraining {summary['pretrain_seconds']:.0f} s, coverage "
               f"{summary['state_coverage']:.2f}, target reached: {summary['target_reached']}\n"
               f"zero-shot success {summary['zero_shot_success']:.2f} (identified w, GPI) -> fine-tuned "
               f"{summary['finetuned_success']:.2f}; {summary['wall_seconds']:.0f} s in all\n")
    for page in (root / "README.md", root / "docs" / "command-line.md"):
        assert printed in page.read_text(), page.name
    readme = (root / "README.md").read_text()
    assert f"({summary['wall_seconds']:.0f} s on one core, as it prints below" in readme
