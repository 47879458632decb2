"""The probe-sweep set-up of notebooks 05 and 05b: a results folder per notebook, budget and default
configuration (a fresh temporary one in fast mode), what it prints, and `probe` running the variants there."""

from pathlib import Path

from aps_teach.course import probe_sweep as module
from aps_teach.course.probe_sweep import probe_sweep
from aps_teach.grid.experiments import DEFAULT_PRETRAIN_STEPS, Budget
from aps_teach.grid.train import TrainConfig
from aps_teach.infra.sweeps import config_hash
from aps_teach.studies import probes

BUDGET = Budget(pretrain_steps=2_400, identify_steps=800, eval_episodes=8)


def test_the_results_folder_is_named_by_notebook_budget_and_defaults(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    quarter = Budget(pretrain_steps=DEFAULT_PRETRAIN_STEPS // 4, identify_steps=800, eval_episodes=8)
    sweep = probe_sweep("05_ablations", "hard", [0, 1], quarter, workers=1, fast=False)
    sweep.executor.shutdown()
    recorded = {"probe": probes.probe_budget(quarter)}
    assert "finetune_steps" not in recorded["probe"]  # a probe does not fine-tune
    assert sweep.budgets == recorded
    assert sweep.run_dir == Path("runs/05_ablations") / config_hash(recorded, TrainConfig(progress=False))
    assert (tmp_path / sweep.run_dir).is_dir()
    again = probe_sweep("05_ablations", "hard", [0, 1], quarter, workers=1, fast=False)
    other = probe_sweep("05_ablations", "hard", [0, 1], BUDGET, workers=1, fast=False)
    for made in (again, other):
        made.executor.shutdown()
    assert again.run_dir == sweep.run_dir != other.run_dir  # a re-run resumes; another budget starts afresh
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == [f"sweep results in {sweep.run_dir}, 1 worker processes",
                           f"probes: hard level, seeds [0, 1], {recorded['probe']}",
                           f"the probes pretrain for 25% of the default budget's {DEFAULT_PRETRAIN_STEPS:,} "
                           "pretraining steps"]


def test_fast_mode_uses_a_fresh_folder_and_probe_runs_the_variants_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = probe_sweep("05b_reward_weights", "hard", [0], BUDGET, workers=1, fast=True)
    second = probe_sweep("05b_reward_weights", "hard", [0], BUDGET, workers=1, fast=True)
    assert first.run_dir != second.run_dir and first.run_dir.is_dir() and not (tmp_path / "runs").exists()
    calls = []
    monkeypatch.setattr(module, "run_variants", lambda *args: calls.append(args) or [{"variant": "a"}])
    variants = {"a": ("aps", ())}
    assert first.probe(variants) == [{"variant": "a"}]
    assert calls == [(probes.run_probe_rows, BUDGET, first.run_dir / "probes.csv", variants, ["hard"], [0],
                      first.executor)]
    for sweep in (first, second):
        sweep.executor.shutdown()
