"""The sweep runner: results well-formed, resumable, robust to a failing run; Figure 4's bars equal
the CSV means, and so are an ablation plot's points; bootstrap intervals against a plain numpy bootstrap."""

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pytest

from aps_teach.agents import AgentConfig
from aps_teach.plots import METHOD_COLOURS, method_colour, plot_ablation, plot_figure4
from aps_teach.stats import mean_with_ci, summarise
from aps_teach.sweeps import RunSpec, field_doc, grid, read_rows, run_sweep, with_overrides
from aps_teach.train import TrainConfig

CALLS: list[str] = []
_lock = threading.Lock()


def fake_run(spec: RunSpec) -> list[dict]:
    """Stands in for a training run: deterministic numbers from the spec, and a record of the call."""
    with _lock:
        CALLS.append(spec.key)
    base = {"method": spec.method, "level": spec.level, "seed": spec.seed}
    return [{**base, "phase": "zero_shot", "success_rate": (spec.seed % 3) / 4},
            {**base, "phase": "finetuned", "success_rate": (spec.seed % 3) / 2}]


def flaky_run(spec: RunSpec) -> list[dict]:
    if spec.seed == 1 and spec.method == "apt":
        raise RuntimeError("simulated crash in apt seed 1")
    return fake_run(spec)


@pytest.fixture
def threads():
    with ThreadPoolExecutor(2) as pool:
        yield pool


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
        (s.method, s.level, str(s.seed), phase) for s in specs for phase in ("zero_shot", "finetuned")}
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


def test_figure4_sweep_of_real_runs_on_a_tiny_budget_resumes(tmp_path):
    from aps_teach.experiments import run_figure4_sweep

    budget = {"pretrain_steps": 800, "finetune_steps": 800, "identify_steps": 800, "eval_episodes": 4}
    report = run_figure4_sweep(["aps", "dqn"], ["easy"], 1, tmp_path, budget, workers=2, progress=False)
    assert sorted(report.completed) == ["aps-easy-seed0", "dqn-easy-seed0"] and not report.failures
    rows = read_rows(tmp_path / "figure4.csv")
    assert len(rows) == 4 and {r["phase"] for r in rows} == {"zero_shot", "finetuned"}
    assert all(0.0 <= float(r["success_rate"]) <= 1.0 and len(r["config_hash"]) == 12 for r in rows)
    assert (tmp_path / "figure4.png").read_bytes()[:4] == b"\x89PNG"
    again = run_figure4_sweep(["aps", "dqn"], ["easy"], 1, tmp_path, budget, workers=2, progress=False)
    assert again.completed == [] and len(again.skipped) == 2
    with pytest.raises(ValueError, match="unknown methods or levels"):
        run_figure4_sweep(["ppo"], ["easy"], 1, tmp_path, budget)


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
