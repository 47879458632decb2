"""The sweep runner: results well-formed, resumable, robust to a failing run; Figure 4's bars equal
the CSV means, and so are an ablation plot's points; bootstrap intervals against a plain numpy bootstrap."""

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pytest

from aps_teach.grid.train import TrainConfig
from aps_teach.infra.figures import METHOD_COLOURS, method_colour
from aps_teach.infra.overrides import field_doc, with_overrides
from aps_teach.infra.stats import mean_with_ci, summarise
from aps_teach.infra.sweeps import RunSpec, grid, read_rows, run_sweep
from aps_teach.learner.config import AgentConfig
from aps_teach.studies.plots import plot_ablation, plot_figure4, write_figure4

CALLS: list[str] = []
_lock = threading.Lock()


def fake_run(spec: RunSpec) -> list[dict]:
    """Stands in for a training run: deterministic numbers from the spec, and a record of the call."""
    with _lock:
        CALLS.append(spec.key)
    base = {"method": spec.method, "level": spec.env, "seed": spec.seed}
    return [{**base, "phase": "zero_shot", "success_rate": (spec.seed % 3) / 4},
            {**base, "phase": "finetuned", "success_rate": (spec.seed % 3) / 2}]


def flaky_run(spec: RunSpec) -> list[dict]:
    if spec.seed == 1 and spec.method == "apt":
        raise RuntimeError("simulated crash in apt seed 1")
    return fake_run(spec)


def test_sweep_writes_two_rows_per_run_then_resumes_without_redoing_them(tmp_path, threads):
    specs = grid(["visr", "apt"], ["easy", "hard"], range(2))
    results = tmp_path / "figure4.csv"
    CALLS.clear()
    report = run_sweep(specs, fake_run, results, executor=threads, progress=False)
    assert sorted(report.completed) == sorted(s.key for s in specs) and not report.failures
    rows = read_rows(results)
    assert len(rows) == 2 * len(specs)
    assert {"run_key", "method", "level", "seed", "phase", "success_rate", "run_seconds",
            "package_version"} <= set(rows[0])
    assert {(r["method"], r["level"], r["seed"], r["phase"]) for r in rows} == {
        (s.method, s.env, str(s.seed), phase) for s in specs for phase in ("zero_shot", "finetuned")}
    CALLS.clear()
    again = run_sweep(specs, fake_run, results, executor=threads, progress=False)
    assert CALLS == [] and again.completed == [] and sorted(again.skipped) == sorted(s.key for s in specs)
    more = run_sweep(specs + [RunSpec("aps", "easy", 0)], fake_run, results, executor=threads, progress=False)
    assert CALLS == ["aps-easy-seed0"] and more.completed == ["aps-easy-seed0"]
    assert len(read_rows(results)) == 2 * (len(specs) + 1)


def test_one_failing_run_is_reported_and_retried_later(tmp_path, threads):
    specs = grid(["visr", "apt"], ["easy"], range(3))
    results = tmp_path / "r.csv"
    same = {"budget": 1}  # the same configuration, its bug fixed below: stated, not read off the function
    report = run_sweep(specs, flaky_run, results, config=same, executor=threads, progress=False)
    assert list(report.failures) == ["apt-easy-seed1"]
    assert "simulated crash in apt seed 1" in report.failures["apt-easy-seed1"]
    assert len(report.completed) == 5 and len(read_rows(results)) == 10
    CALLS.clear()
    retry = run_sweep(specs, fake_run, results, config=same, executor=threads, progress=False)
    assert CALLS == ["apt-easy-seed1"] and not retry.failures and len(read_rows(results)) == 12


def killed_run(spec: RunSpec) -> list[dict]:
    """Seed 1's worker process dies mid-run, as under the OOM killer."""
    if spec.seed == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return fake_run(spec)


def test_a_dead_worker_is_one_line_per_unfinished_run_and_the_finished_rows_are_kept(tmp_path, capsys):
    """Killing a worker used to print a growing traceback per unfinished run (1,763 lines for 20 runs)."""
    from aps_teach.infra.executors import local_executor

    specs = grid(["aps"], ["easy"], range(4))
    with local_executor(1) as pool:  # one worker: seed 0 finishes, seed 1 kills it, 2 and 3 never start
        report = run_sweep(specs, killed_run, tmp_path / "r.csv", config={}, executor=pool, progress=False)
    assert report.completed == ["aps-easy-seed0"]
    assert [row["run_key"] for row in read_rows(tmp_path / "r.csv")] == ["aps-easy-seed0"] * 2
    assert sorted(report.failures) == ["aps-easy-seed1", "aps-easy-seed2", "aps-easy-seed3"]
    for text in report.failures.values():
        assert "\n" not in text and text.endswith("the same command runs it again")
        assert text.startswith("not finished: its worker process died (BrokenProcessPool")


def test_a_repeated_row_or_run_counts_once_with_a_message_and_the_next_sweep_rewrites_it(tmp_path, threads,
                                                                                       capsys):
    """A duplicated sweep row used to be kept, counting a seed twice."""
    specs = grid(["visr"], ["easy"], range(3))
    results = tmp_path / "figure4.csv"
    run_sweep(specs, fake_run, results, config={}, executor=threads, progress=False)
    lines = results.read_bytes().splitlines(keepends=True)
    header, first = lines[0], lines[1:3]  # the first run's two rows: one repeated at once, then the run again
    results.write_bytes(b"".join([header, first[0], *lines[1:], *first]))
    capsys.readouterr()
    rows = read_rows(results)
    assert len(rows) == 6 and len({(r["run_key"], r["phase"]) for r in rows}) == 6
    err = capsys.readouterr().err
    key = first[0].split(b",")[0].decode()
    assert err == (f"{results}: left out 3 repeated row(s), row 3 ({key}), 9 ({key}), 10 ({key}): a run "
                   "counts once\n")
    run_sweep([*specs, RunSpec("apt", "easy", 0)], fake_run, results, config={}, executor=threads,
              progress=False)
    assert len(results.read_bytes().splitlines()) == 1 + 8  # written without the repeats
    capsys.readouterr()
    read_rows(results)
    assert capsys.readouterr().err == ""


def test_a_renamed_column_or_a_malformed_value_is_one_error_naming_the_file_row_and_column(tmp_path):
    """A renamed results column used to be a KeyError traceback."""
    from aps_teach.grid.sweep import FIGURE4_COLUMNS

    out = tmp_path / "out"
    specs = grid(["visr"], ["easy"], range(2))
    rows = [{**row, "finetune_steps": 0, "return": 1.0} for spec in specs for row in fake_run(spec)]
    out.mkdir()
    text = "run_key," + ",".join(rows[0]) + "\n" + "".join(
        f"{spec.key}," + ",".join(str(v) for v in row.values()) + "\n"
        for spec in specs for row in rows if row["seed"] == spec.seed)
    (out / "figure4.csv").write_text(text)
    assert len(read_rows(out / "figure4.csv", FIGURE4_COLUMNS)) == 4
    (out / "figure4.csv").write_text(text.replace("success_rate", "success", 1))
    with pytest.raises(ValueError, match=r"figure4.csv has no column 'success_rate' \(its columns: "
                                         r"run_key, method, level, seed, phase, success, finetune_steps, "
                                         r"return\): not a results file of this version, or edited"):
        read_rows(out / "figure4.csv", FIGURE4_COLUMNS)
    (out / "figure4.csv").write_text(text.replace(",0.25,", ",a quarter,", 1))
    with pytest.raises(ValueError, match=r"figure4.csv, row 4: column 'success_rate' holds 'a quarter', "
                                         r"not a number"):
        read_rows(out / "figure4.csv", FIGURE4_COLUMNS)
    with pytest.raises(ValueError, match="not a number"):
        write_figure4(out)  # what `aps-teach gridworld sweep` draws with: one error line there


def test_process_pool_runs_module_level_functions(tmp_path):
    report = run_sweep(grid(["visr"], ["easy"], range(2)), fake_run, tmp_path / "p.csv", progress=False)
    assert len(report.completed) == 2 and len(read_rows(tmp_path / "p.csv")) == 4


def test_duplicate_runs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="same run twice"):
        run_sweep([RunSpec("aps", "easy", 0)] * 2, fake_run, tmp_path / "d.csv")


def test_run_keys_distinguish_overrides():
    plain, ablated = RunSpec("aps", "easy", 0), RunSpec("aps", "easy", 0, (("agent.k", 5),))
    assert plain.key == "aps-easy-seed0" and ablated.key.startswith("aps-easy-seed0-")


@dataclass
class Inner:
    k: int = 10
    """Neighbours.

    Two paragraphs."""
    dim: int = 5


@dataclass
class Outer:
    lr: float = 1e-3
    inner: Inner = field(default_factory=Inner)


def test_with_overrides_reaches_nested_fields_and_names_valid_ones():
    config = with_overrides(Outer(), [("inner.k", 3), ("lr", 0.5)])
    assert config == Outer(lr=0.5, inner=Inner(k=3, dim=5))
    assert Outer().inner.k == 10  # the original is untouched
    with pytest.raises(ValueError, match="unknown config field 'inner.kk'; fields here: k, dim"):
        with_overrides(Outer(), [("inner.kk", 3)])


@dataclass
class Derived(Inner):
    extra: bool = False
    """Only here."""
    k: int = 3
    """Overridden."""


def test_field_doc_reads_the_literal_after_each_field_and_names_valid_ones():
    assert field_doc(Outer(), "inner.k") == "Neighbours.\n\nTwo paragraphs."
    assert field_doc(Outer(), "inner.dim") == field_doc(Outer(), "lr") == ""
    assert (field_doc(Derived(), "k"), field_doc(Derived(), "extra")) == ("Overridden.", "Only here.")
    assert field_doc(TrainConfig(), "agent.k").startswith("Neighbours in the kNN particle-entropy reward")
    assert field_doc(AgentConfig(), "n_step") == "Multi-step return length (paper: 10)."
    with pytest.raises(ValueError, match="unknown config field 'inner.kk'; fields here: k, dim"):
        field_doc(Outer(), "inner.kk")
    with pytest.raises(ValueError, match="unknown config field 'lr.x'; fields here: none"):
        field_doc(Outer(), "lr.x")


def test_figure4_bar_heights_equal_the_csv_means(tmp_path, threads):
    results = tmp_path / "figure4.csv"
    run_sweep(grid(["visr", "apt", "aps"], ["easy", "hard"], range(5)), fake_run, results,
              executor=threads, progress=False)
    rows = read_rows(results)
    fig = plot_figure4(rows)
    ax = fig.axes[0]
    for method in ("visr", "apt", "aps"):
        for phase in ("zero_shot", "finetuned"):
            heights = [p.get_height() for p in ax.patches if p.get_gid() == f"{method}/{phase}"]
            expected = [np.mean([float(r["success_rate"]) for r in rows
                                 if (r["method"], r["level"], r["phase"]) == (method, level, phase)])
                        for level in ("easy", "hard")]
            np.testing.assert_allclose(heights, expected)


def test_bootstrap_interval_matches_a_plain_numpy_bootstrap():
    values = np.array([0.0, 0.2, 0.9, 1.0, 0.6, 0.7, 1.0, 0.1, 0.5, 0.8])
    mean, low, high = mean_with_ci(values, seed=1)
    rng = np.random.default_rng(0)
    means = values[rng.integers(len(values), size=(200_000, len(values)))].mean(axis=1)
    assert mean == pytest.approx(values.mean())
    assert low == pytest.approx(np.percentile(means, 2.5), abs=0.02)
    assert high == pytest.approx(np.percentile(means, 97.5), abs=0.02)
    assert mean_with_ci([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="at least one value"):
        mean_with_ci([])


def test_bootstrap_interval_does_not_depend_on_the_order_of_the_values():
    values = [0.0, 0.2, 0.9, 1.0, 0.6, 0.7, 1.0, 0.1, 0.5, 0.8]
    shuffled = list(np.random.default_rng(3).permutation(values))
    assert shuffled != values
    assert mean_with_ci(shuffled) == mean_with_ci(values)


def test_figure4_sweep_of_real_runs_on_a_tiny_budget_resumes(tmp_path, monkeypatch):
    import hashlib
    import json

    from aps_teach.grid.experiments import Budget
    from aps_teach.grid.sweep import run_figure4_sweep

    monkeypatch.chdir(tmp_path)
    budget = Budget(pretrain_steps=800, finetune_steps=800, identify_steps=800, eval_episodes=4)
    report = run_figure4_sweep(["aps", "dqn"], ["easy"], 1, None, budget, workers=2, progress=False)
    # no --out: a directory of its own under runs/figure4, named after the recorded configuration's hash
    (out,) = (tmp_path / "runs" / "figure4").iterdir()
    record = json.loads((out / "figure4.sweep.json").read_text())
    # what ran: 800 steps of 32 envs are one round of 3,200 (said on stderr, and recorded so)
    assert record["budget"] == {**asdict(budget), "pretrain_steps": 3200, "finetune_steps": 3200,
                                "identify_steps": 3200}
    assert record["train"]["agent"]["method"] == "aps"
    expected = hashlib.sha256(json.dumps([record], sort_keys=True).encode()).hexdigest()[:12]
    assert out.name == expected
    assert sorted(report.completed) == ["aps-easy-seed0", "dqn-easy-seed0"] and not report.failures
    rows = read_rows(out / "figure4.csv")
    assert len(rows) == 4 and {r["phase"] for r in rows} == {"zero_shot", "finetuned"}
    assert all(0.0 <= float(r["success_rate"]) <= 1.0 and len(r["config_hash"]) == 12 for r in rows)
    assert not (out / "figure4.png").exists()  # the pipeline returns data; the command draws
    again = run_figure4_sweep(["aps", "dqn"], ["easy"], 1, None, budget, workers=2, progress=False)
    assert again.completed == [] and len(again.skipped) == 2  # the same command found its directory
    from aps_teach.cli.gridworld import gridworld_main

    argv = ["sweep", "--methods", "aps", "dqn", "--levels", "easy", "--seeds", "1", "--workers", "2",
            *[f"--{name.replace('_', '-')}={value}" for name, value in asdict(budget).items()]]
    assert gridworld_main(argv) == 0  # every run skipped; the command draws figure4.png from the csv
    drawn = (out / "figure4.png").read_bytes()
    assert drawn[:4] == b"\x89PNG" and write_figure4(out, ["aps", "dqn"], ["easy"]).read_bytes() == drawn
    with pytest.raises(ValueError, match="unknown methods or levels"):
        run_figure4_sweep(["ppo"], ["easy"], 1, out, budget)
    # another budget into the same directory: refused before any run, every file as it was
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    refusal = (r"figure4.csv holds runs of another configuration; differing fields: "
               r"budget.pretrain_steps \(file 3200, this sweep 6400\)\. Give another")
    with pytest.raises(ValueError, match=refusal):
        run_figure4_sweep(["aps", "dqn"], ["easy"], 1, out, replace(budget, pretrain_steps=6400),
                          workers=2, progress=False)
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_summarise_can_leave_out_nan_values():
    rows = [{"v": "a", "x": 1.0}, {"v": "a", "x": float("nan")}, {"v": "a", "x": 3.0}, {"v": "b", "x": "nan"}]
    assert summarise(rows, ("v",), "x", drop_nan=True) == {("a",): (2.0, *mean_with_ci([1.0, 3.0])[1:], 2)}
    kept = summarise(rows[3:], ("v",), "x")
    assert kept[("b",)][3] == 1 and np.isnan(kept[("b",)][0])


def test_ablation_points_are_the_group_means_in_order_without_nan():
    import matplotlib

    matplotlib.use("Agg")
    rows = [{"variant": v, "seed": s, "cov": c, "r2": r} for v, s, c, r in [
        ("k=10", 0, 0.5, 0.1), ("k=10", 1, 0.7, float("nan")), ("k=3", 0, 0.2, 0.3), ("k=3", 1, 0.4, 0.5)]]
    fig = plot_ablation(rows, "variant", {"cov": "coverage", "r2": "R^2"}, order=["k=3", "k=10"])
    cov, r2 = fig.axes
    for ax, expected in ((cov, [0.3, 0.6]), (r2, [0.4, 0.1])):
        np.testing.assert_allclose(np.asarray(ax.containers[0].lines[0].get_ydata(), dtype=float), expected)
    assert [t.get_text() for t in cov.get_xticklabels()] == ["k=3", "k=10"]
    assert "1 NaN runs left out" in r2.get_title() and "NaN" not in cov.get_title()
    assert sum(len(c.get_offsets()) for c in r2.collections if hasattr(c, "get_offsets")) >= 3


def test_other_names_never_take_a_methods_colour():
    methods = ["visr", "apt", "aps", "dqn", "aps->visr", "visr->aps"]
    colours = [method_colour(name, i) for i, name in enumerate(methods)]
    assert colours[:4] == [METHOD_COLOURS[m] for m in methods[:4]]
    assert len(set(colours)) == len(colours)


def test_a_run_spec_refuses_to_override_its_own_method():
    with pytest.raises(ValueError, match="RunSpec.method"):
        RunSpec("aps", "easy", 0, (("agent.method", "visr"),))


def test_another_configuration_is_refused_naming_each_field_and_nothing_changes(tmp_path, threads):
    specs = grid(["visr"], ["easy"], range(2))
    results = tmp_path / "r.csv"
    first = {"budget": {"steps": 800, "episodes": 4}, "train": TrainConfig(progress=False)}
    run_sweep(specs, fake_run, results, config=first, executor=threads, progress=False)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert sorted(before) == [".lock", "r.csv", "r.sweep.json"]  # the lock file stays, the owner record not
    other = {"budget": {"steps": 1600, "episodes": 4},
             "train": TrainConfig(agent=AgentConfig(gamma=0.9), progress=False)}
    CALLS.clear()
    with pytest.raises(ValueError, match=r"differing fields: budget.steps \(file 800, this sweep 1600\), "
                                         r"train.agent.gamma \(file 0.99, this sweep 0.9\)"):
        run_sweep(specs + [RunSpec("apt", "easy", 0)], fake_run, results, config=other, executor=threads,
                  progress=False)
    assert CALLS == [] and {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    # rows of an older version, without a record of their configuration, are not taken for this sweep's
    (tmp_path / "r.sweep.json").unlink()
    with pytest.raises(ValueError, match="no record of their configuration"):
        run_sweep(specs, fake_run, results, config=first, executor=threads, progress=False)


def test_by_default_the_run_function_and_its_bound_arguments_are_the_configuration(tmp_path, threads):
    from functools import partial

    results = tmp_path / "r.csv"
    run_sweep(grid(["visr"], ["easy"], [0]), partial(budget_run, budget={"steps": 1}), results,
              executor=threads, progress=False)
    with pytest.raises(ValueError, match=r"budget.steps \(file 1, this sweep 2\)"):
        run_sweep(grid(["visr"], ["easy"], [1]), partial(budget_run, budget={"steps": 2}), results,
                  executor=threads, progress=False)
    with pytest.raises(ValueError, match=r"run \(file 'tests.infra.test_sweeps.budget_run', this sweep "
                                         r"'tests.infra.test_sweeps.fake_run'"):
        run_sweep(grid(["visr"], ["easy"], [1]), fake_run, results, executor=threads, progress=False)


def budget_run(spec: RunSpec, budget: dict) -> list[dict]:
    return [{**row, "steps": budget["steps"]} for row in fake_run(spec)]


def test_a_torn_last_row_is_dropped_with_its_run_and_the_run_done_again(tmp_path, threads, capsys):
    """Said in one plain line each time (it was a warning echoing a source line)."""
    specs = grid(["visr", "apt"], ["easy"], range(2))
    results = tmp_path / "r.csv"
    run_sweep(specs, fake_run, results, config={}, executor=threads, progress=False)
    whole = results.read_bytes()
    last_run = read_rows(results)[-1]["run_key"]
    results.write_bytes(whole[:-7])  # the file cut short inside its last row, as by a copy that died
    capsys.readouterr()
    assert len(read_rows(results)) == 2 * len(specs) - 1  # readers never see the torn row
    assert capsys.readouterr().err == f"{results}: its last row is cut short; left out\n"
    CALLS.clear()
    report = run_sweep(specs, fake_run, results, config={}, executor=threads, progress=False)
    said = f"{results}: the last row (run {last_run}) is cut short; that run is done again\n"
    assert capsys.readouterr().err == said
    assert CALLS == [last_run] and report.completed == [last_run] and len(report.skipped) == len(specs) - 1
    rows = read_rows(results)
    assert len(rows) == 2 * len(specs) and sum(row["run_key"] == last_run for row in rows) == 2
    assert not any(None in row.values() for row in rows)


def test_an_out_that_cannot_be_written_fails_before_the_first_run(tmp_path, threads):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    CALLS.clear()
    with pytest.raises(OSError):
        run_sweep(grid(["visr"], ["easy"], range(2)), fake_run, blocker / "out" / "r.csv", config={},
                  executor=threads, progress=False)
    assert CALLS == []
    if os.geteuid() != 0:  # root writes into read-only directories
        read_only = tmp_path / "read-only"
        read_only.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            run_sweep(grid(["visr"], ["easy"], range(2)), fake_run, read_only / "r.csv", config={},
                      executor=threads, progress=False)
        assert CALLS == []


SLOW_SWEEP = """
import os, sys, time
from pathlib import Path
from aps_teach.infra.executors import local_executor
from aps_teach.infra.sweeps import grid, run_sweep

OUT = Path(sys.argv[1])


def slow(spec):
    (OUT / f"started-{os.getpid()}").write_text("")
    time.sleep(120)
    return [{"x": 1}]


if __name__ == "__main__":
    with local_executor(2) as pool:
        run_sweep(grid(["aps"], ["easy"], range(6)), slow, OUT / "r.csv", config={}, executor=pool,
                  progress=False)
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_a_stopped_sweep_leaves_no_process_behind(tmp_path, stop):
    """Ctrl-C (SIGINT) stops the sweep within seconds, its running runs killed and the pending ones
    cancelled; a SIGKILLed driver's workers exit by themselves. Either way no child process is left. The
    driver starts with Ctrl-C at its default: a suite started in the background of a shell inherits SIGINT
    ignored, and Python then never raises KeyboardInterrupt."""
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "sweep.py"
    script.write_text(SLOW_SWEEP)
    driver = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stderr=subprocess.PIPE,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("started-*"))) < 2:  # both workers inside a run
        assert time.monotonic() < deadline and driver.poll() is None, driver.stderr.read().decode()
        time.sleep(0.1)
    children = psutil.Process(driver.pid).children(recursive=True)
    assert len(children) >= 2
    start = time.monotonic()
    driver.send_signal(stop)
    driver.wait(timeout=15)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [] and time.monotonic() - start < 10
    assert len(list(tmp_path.glob("started-*"))) == 2  # no pending run started after the stop
    assert not (tmp_path / "r.csv").exists()
    if stop == signal.SIGINT:
        assert b"KeyboardInterrupt" in driver.stderr.read()


def test_the_committed_figure4_record_is_the_configuration_of_its_rows():
    """results/gridworld/figure4.sweep.json (written after the sweep, from the defaults that reproduce its
    rows) holds the budget and training config whose hash every committed row carries."""
    import json
    from pathlib import Path

    from aps_teach.infra.sweeps import config_hash

    results = Path(__file__).parents[2] / "results" / "gridworld" / "figure4.csv"
    record = json.loads(results.with_suffix(".sweep.json").read_text())
    hashes = {row["config_hash"] for row in read_rows(results)}
    assert hashes == {config_hash(record["budget"], record["train"])}


def test_a_field_added_later_is_left_out_of_records_and_hashes_while_at_its_default():
    """`omit_at_default` keeps the fingerprint of results recorded before the field existed."""
    from dataclasses import dataclass, field, replace

    from aps_teach.infra.sweeps import config_dict, config_hash, plain_config

    @dataclass(frozen=True)
    class Before:
        lr: float = 1e-3

    @dataclass(frozen=True)
    class After:
        lr: float = 1e-3
        added: bool = field(default=False, metadata={"omit_at_default": True})

    assert config_dict(After()) == {"lr": 1e-3} and plain_config({"c": After()}) == {"c": {"lr": 1e-3}}
    assert config_hash(After()) == config_hash(Before())
    assert config_dict(replace(After(), added=True)) == {"lr": 1e-3, "added": True}
    assert config_hash(replace(After(), added=True)) != config_hash(Before())
